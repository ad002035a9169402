"""`toolsearch model fetch`: known models from the Hugging Face hub, pinned by revision and digest.

Each file is streamed from `<base>/<repository>/resolve/<revision>/<path>` into a staging
directory while its SHA-256 is computed; a wrong size or digest, or a cut connection, stops the
fetch with nothing left behind. The digests are the hub's Git LFS object ids (the SHA-256 of
the content), so a fetch is reproducible whatever the hub serves later.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx
from tqdm import tqdm

from toolsearch.embedding.manifest import (
    E5_SMALL_CALIBRATION,
    MODEL_FILE,
    TOKENIZER_FILE,
    ModelDescription,
    ModelError,
    ModelManifest,
    is_hex_digest,
    seal,
    staged_directory,
)

HUB = "https://huggingface.co"
_LOOPBACK = {"127.0.0.1", "localhost", "::1"}
_CHUNK = 1 << 20


class FetchError(ModelError):
    """A download failed or did not match its pinned digest."""


@dataclass(frozen=True)
class HubFile:
    path: str
    """Path inside the hub repository."""
    size: int
    sha256: str

    def __post_init__(self) -> None:
        if not is_hex_digest(self.sha256):
            raise ValueError(f"{self.path}: a pinned lower-case hex SHA-256 is required")


@dataclass(frozen=True)
class KnownModel:
    repository: str
    revision: str
    """A full commit id: a branch name could move under the pinned digests."""
    files: Mapping[str, HubFile]
    """Local file name → where it comes from."""
    licence: str
    description: ModelDescription | None = None
    """How to use the model when it is ONNX; absent for a Model2Vec model, which is converted."""

    def __post_init__(self) -> None:
        if not is_hex_digest(self.revision, 40):
            raise ValueError(f"{self.repository}: revision must be a full commit id")


_E5_USE = {
    "calibration": E5_SMALL_CALIBRATION,
    "dimensions": 384,
    "pooling": "mean",
    "query_prefix": "query: ",
    "passage_prefix": "passage: ",
    "max_tokens": 512,
    "pad_id": 1,
    "licence": "MIT",
}
_E5_TOKENIZER = HubFile(
    "tokenizer.json", 17_082_730, "0b44a9d7b51c3c62626640cda0e2c2f70fdacdc25bbbd68038369d14ebdf4c39"
)


def _e5(name: str, repository: str, revision: str, onnx: HubFile) -> KnownModel:
    """multilingual-e5-small as `repository` exports it to ONNX (`onnx`), with its tokenizer."""
    return KnownModel(
        repository=repository,
        revision=revision,
        files={MODEL_FILE: onnx, TOKENIZER_FILE: _E5_TOKENIZER},
        licence="MIT",
        description=ModelDescription(name=name, **_E5_USE),
    )


KNOWN_MODELS: dict[str, KnownModel] = {
    "multilingual-e5-small": _e5(
        "multilingual-e5-small",
        "intfloat/multilingual-e5-small",
        "614241f622f53c4eeff9890bdc4f31cfecc418b3",
        HubFile(
            "onnx/model.onnx", 470_268_510, "ca456c06b3a9505ddfd9131408916dd79290368331e7d76bb621f1cba6bc8665"
        ),
    ),
    "multilingual-e5-small-int8": _e5(
        "multilingual-e5-small-int8",
        "Xenova/multilingual-e5-small",
        "761b726dd34fb83930e26aab4e9ac3899aa1fa78",
        HubFile(
            "onnx/model_quantized.onnx",
            118_308_185,
            "f80102d3f2a1229f387d3c81909990d8945513e347b0eab049f7de3c6f98c193",
        ),
    ),
    "potion-multilingual-128M": KnownModel(
        repository="minishlab/potion-multilingual-128M",
        revision="73908c3438cf03b6a01bcb9611d62b23d0726f08",
        files={
            "model.safetensors": HubFile(
                "model.safetensors",
                512_361_560,
                "14b5eb39cb4ce5666da8ad1f3dc6be4346e9b2d601c073302fa0a31bf7943397",
            ),
            TOKENIZER_FILE: HubFile(
                "tokenizer.json",
                18_616_131,
                "19f1909063da3cfe3bd83a782381f040dccea475f4816de11116444a73e1b6a1",
            ),
        },
        licence="MIT",
    ),
}


def fetch_model(
    name: str,
    target: Path,
    *,
    base_url: str = HUB,
    replace: bool = False,
    catalog: Mapping[str, KnownModel] = KNOWN_MODELS,
    progress: bool = True,
) -> ModelManifest:
    """Download the known model `name` into a model directory at `target`."""
    model = catalog.get(name)
    if model is None:
        raise FetchError(f"unknown model {name!r}; known models: {', '.join(sorted(catalog))}")
    base_url = _checked_base(base_url)
    with staged_directory(target, replace=replace) as staging:
        downloads = staging if model.description else staging / ".download"
        downloads.mkdir(exist_ok=True)
        with httpx.Client(follow_redirects=True, timeout=httpx.Timeout(60.0, connect=15.0)) as client:
            for local_name, hub_file in model.files.items():
                url = f"{base_url}/{model.repository}/resolve/{model.revision}/{hub_file.path}"
                _download(client, url, hub_file, downloads / local_name, progress)
        origin = f"{model.repository}@{model.revision}"
        if model.description is not None:
            return seal(staging, model.description.model_copy(update={"source": origin}))
        # Imported here: converting needs the `onnx` package, fetching ONNX models does not.
        from toolsearch.embedding.model2vec import write_static_model

        manifest = write_static_model(downloads, staging, name=name, licence=model.licence, origin=origin)
        shutil.rmtree(downloads)
        return manifest


def _checked_base(base_url: str) -> str:
    parts = urlsplit(base_url)
    if parts.scheme != "https" and not (parts.scheme == "http" and parts.hostname in _LOOPBACK):
        raise FetchError(
            f"--base-url must be an https:// URL (plain http only to this machine), got {base_url!r}"
        )
    return base_url.rstrip("/")


def _download(client: httpx.Client, url: str, expected: HubFile, path: Path, progress: bool) -> None:
    digest = hashlib.sha256()
    received = 0
    bar = tqdm(
        total=expected.size, unit="B", unit_scale=True, desc=path.name, disable=not progress, file=sys.stderr
    )
    try:
        with client.stream("GET", url) as response, path.open("wb") as out:
            if response.status_code != 200:
                raise FetchError(
                    f"{url} answered HTTP {response.status_code}; check --base-url and the network"
                )
            for chunk in response.iter_bytes(_CHUNK):
                received += len(chunk)
                if received > expected.size:
                    break
                digest.update(chunk)
                out.write(chunk)
                bar.update(len(chunk))
    except httpx.HTTPError as error:
        raise FetchError(
            f"download of {expected.path} stopped after {received:,} of {expected.size:,} bytes ({error}); "
            "nothing was kept, run the command again"
        ) from error
    finally:
        bar.close()
    if received != expected.size:
        raise FetchError(
            f"{expected.path}: received {received:,} bytes, expected {expected.size:,}; "
            "the download was cut short or the file changed; nothing was kept, run the command again"
        )
    if digest.hexdigest() != expected.sha256:
        raise FetchError(
            f"{expected.path} does not match its pinned digest (sha256 {digest.hexdigest()}, expected "
            f"{expected.sha256}); nothing was kept"
        )
