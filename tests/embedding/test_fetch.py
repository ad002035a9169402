"""Fetching against a local stand-in for the hub that serves models the tests build."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from toolsearch.embedding import load_model
from toolsearch.embedding.fetch import KNOWN_MODELS, FetchError, KnownModel, fetch_model
from toolsearch.embedding.manifest import MODEL_FILE, TOKENIZER_FILE, ModelError, read_manifest

from .tiny_models import Hub, describe, safetensors_bytes, token_table, word_tokenizer, write_model

REVISION = "0123456789abcdef0123456789abcdef01234567"
TEXTS = ["find issues", "weather"]


@pytest.fixture
def catalog(hub: Hub, tmp_path: Path) -> dict[str, KnownModel]:
    built = tmp_path / "built"
    write_model(built)
    onnx_files = {
        name: hub.publish("acme/tiny", REVISION, f"onnx/{name}", (built / name).read_bytes())
        for name in (MODEL_FILE, TOKENIZER_FILE)
    }
    tokenizer = word_tokenizer()
    static_files = {
        "model.safetensors": hub.publish(
            "acme/static", REVISION, "model.safetensors", safetensors_bytes({"embeddings": token_table(20)})
        ),
        TOKENIZER_FILE: hub.publish("acme/static", REVISION, "tokenizer.json", tokenizer.to_str().encode()),
    }
    return {
        "tiny": KnownModel("acme/tiny", REVISION, onnx_files, "MIT", describe()),
        "tiny-static": KnownModel("acme/static", REVISION, static_files, "MIT"),
    }


def _fetch(hub: Hub, catalog: dict[str, KnownModel], name: str, target: Path, **options: object) -> None:
    fetch_model(name, target, base_url=hub.url, catalog=catalog, progress=False, **options)


def test_fetch_writes_a_verified_model_directory(hub: Hub, catalog: dict, tmp_path: Path) -> None:
    _fetch(hub, catalog, "tiny", tmp_path / "model")

    fetched = load_model(tmp_path / "model").embed_passages(TEXTS)
    np.testing.assert_array_equal(fetched, load_model(tmp_path / "built").embed_passages(TEXTS))
    assert read_manifest(tmp_path / "model").source == f"acme/tiny@{REVISION}"


def test_fetch_converts_a_static_model_into_the_same_format(hub: Hub, catalog: dict, tmp_path: Path) -> None:
    _fetch(hub, catalog, "tiny-static", tmp_path / "model")

    embedder = load_model(tmp_path / "model")
    assert embedder.embed_queries(TEXTS).shape == (2, 8)
    assert sorted(p.name for p in (tmp_path / "model").iterdir()) == [
        "model.onnx",
        "tokenizer.json",
        "toolsearch-model.json",
    ]


def test_a_digest_mismatch_stops_the_fetch_and_keeps_nothing(
    hub: Hub, catalog: dict, tmp_path: Path, leftovers: Callable[[], list[str]]
) -> None:
    hub.blobs[catalog["tiny"].files[TOKENIZER_FILE].sha256] = (
        b"x" * catalog["tiny"].files[TOKENIZER_FILE].size
    )

    with pytest.raises(FetchError, match=r"onnx/tokenizer\.json does not match its pinned digest"):
        _fetch(hub, catalog, "tiny", tmp_path / "model")

    assert "model" not in leftovers() and leftovers() == ["built"]


def test_an_interrupted_download_stops_the_fetch_and_keeps_nothing(
    hub: Hub, catalog: dict, tmp_path: Path, leftovers: Callable[[], list[str]]
) -> None:
    hub.cut_after[catalog["tiny"].files[MODEL_FILE].sha256] = 100

    with pytest.raises(FetchError, match="run the command again"):
        _fetch(hub, catalog, "tiny", tmp_path / "model")

    assert leftovers() == ["built"]


def test_a_file_missing_on_the_hub_is_reported_with_its_status(
    hub: Hub, catalog: dict, tmp_path: Path
) -> None:
    hub.files.clear()

    with pytest.raises(FetchError, match="HTTP 404"):
        _fetch(hub, catalog, "tiny", tmp_path / "model")


def test_an_existing_directory_is_kept_unless_forced(hub: Hub, catalog: dict, tmp_path: Path) -> None:
    write_model(tmp_path / "model", name="mine")

    with pytest.raises(ModelError, match="--force"):
        _fetch(hub, catalog, "tiny", tmp_path / "model")
    assert read_manifest(tmp_path / "model").name == "mine"

    _fetch(hub, catalog, "tiny", tmp_path / "model", replace=True)
    assert read_manifest(tmp_path / "model").name == "tiny"


def test_an_unknown_name_lists_the_known_models(catalog: dict, tmp_path: Path) -> None:
    with pytest.raises(FetchError, match="known models: tiny, tiny-static"):
        fetch_model("huge", tmp_path / "model", catalog=catalog)


def test_plain_http_is_refused_beyond_this_machine(catalog: dict, tmp_path: Path) -> None:
    with pytest.raises(FetchError, match="https"):
        fetch_model("tiny", tmp_path / "model", base_url="http://mirror.example", catalog=catalog)


def test_the_known_models_include_e5_and_potion_pinned_by_commit_and_digest() -> None:
    assert {"multilingual-e5-small", "potion-multilingual-128M"} <= set(KNOWN_MODELS)
    for model in KNOWN_MODELS.values():
        assert len(model.revision) == 40
        assert {TOKENIZER_FILE} <= set(model.files)
        assert all(len(f.sha256) == 64 and f.size > 0 for f in model.files.values())


def test_a_digest_is_required_for_every_file() -> None:
    from toolsearch.embedding.fetch import HubFile

    with pytest.raises(ValueError, match="SHA-256 is required"):
        HubFile("model.onnx", 10, "")
