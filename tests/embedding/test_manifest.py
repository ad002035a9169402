from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from toolsearch.embedding.manifest import (
    E5_SMALL_CALIBRATION,
    MANIFEST_NAME,
    AbstentionThreshold,
    Calibration,
    ModelError,
    read_manifest,
    sha256_file,
    staged_directory,
    verify_files,
)

from .tiny_models import write_model


def test_seal_pins_the_digest_of_model_and_tokenizer(model_dir: Path) -> None:
    manifest = read_manifest(model_dir)

    assert manifest.files == {
        name: sha256_file(model_dir / name) for name in ("model.onnx", "tokenizer.json")
    }
    verify_files(model_dir, manifest)


def test_a_missing_listed_file_is_named(model_dir: Path) -> None:
    (model_dir / "tokenizer.json").unlink()

    with pytest.raises(ModelError, match=r"tokenizer\.json is missing"):
        verify_files(model_dir, read_manifest(model_dir))


@pytest.mark.parametrize(
    ("files", "problem"),
    [
        ({"model.onnx": "0" * 64}, "must list tokenizer.json"),
        ({"model.onnx": "0" * 64, "tokenizer.json": "xyz"}, "not a lower-case hex SHA-256"),
        (
            {"model.onnx": "0" * 64, "tokenizer.json": "0" * 64, "../escape": "0" * 64},
            "not a plain file name",
        ),
    ],
)
def test_manifest_files_must_be_plain_names_with_digests(model_dir: Path, files: dict, problem: str) -> None:
    manifest = json.loads((model_dir / MANIFEST_NAME).read_text())
    (model_dir / MANIFEST_NAME).write_text(json.dumps(manifest | {"files": files}))

    with pytest.raises(ModelError, match=problem):
        read_manifest(model_dir)


def test_a_manifest_of_another_format_version_is_refused(model_dir: Path) -> None:
    manifest = json.loads((model_dir / MANIFEST_NAME).read_text())
    (model_dir / MANIFEST_NAME).write_text(json.dumps(manifest | {"format": 2}))

    with pytest.raises(ModelError, match="format"):
        read_manifest(model_dir)


def test_a_staged_directory_appears_only_when_complete(
    tmp_path: Path, leftovers: Callable[[], list[str]]
) -> None:
    with staged_directory(tmp_path / "model") as staging:
        write_model(staging)
        assert not (tmp_path / "model").exists()

    read_manifest(tmp_path / "model")
    assert leftovers() == []


def test_a_failed_staged_write_leaves_nothing(tmp_path: Path, leftovers: Callable[[], list[str]]) -> None:
    with pytest.raises(RuntimeError), staged_directory(tmp_path / "model") as staging:
        (staging / "model.onnx").write_bytes(b"half")
        raise RuntimeError("conversion failed")

    assert not (tmp_path / "model").exists()
    assert leftovers() == []


def test_an_occupied_target_needs_replace(model_dir: Path) -> None:
    with pytest.raises(ModelError, match="--force"), staged_directory(model_dir):
        pass


def test_replace_swaps_in_the_new_directory(model_dir: Path, leftovers: Callable[[], list[str]]) -> None:
    with staged_directory(model_dir, replace=True) as staging:
        write_model(staging, name="newer")

    assert read_manifest(model_dir).name == "newer"
    assert leftovers() == []


def test_an_empty_existing_directory_is_filled(tmp_path: Path) -> None:
    (tmp_path / "model").mkdir()

    with staged_directory(tmp_path / "model") as staging:
        write_model(staging)

    assert read_manifest(tmp_path / "model").name == "tiny"


def test_a_manifest_carries_its_model_s_calibration(tmp_path: Path) -> None:
    calibration = Calibration(AbstentionThreshold(0.5, 10.0, translated_lexical=12.0), translation_cosine=0.7)
    write_model(tmp_path / "model", calibration=calibration)

    assert read_manifest(tmp_path / "model").calibration == calibration


def test_a_manifest_older_than_the_calibration_gets_the_one_measured_for_its_model(model_dir: Path) -> None:
    manifest = json.loads((model_dir / MANIFEST_NAME).read_text())
    del manifest["calibration"]
    (model_dir / MANIFEST_NAME).write_text(json.dumps(manifest | {"name": "multilingual-e5-small-q4"}))

    assert read_manifest(model_dir).calibration == E5_SMALL_CALIBRATION


def test_a_model_measured_by_no_one_has_no_calibration(model_dir: Path) -> None:
    manifest = json.loads((model_dir / MANIFEST_NAME).read_text())
    del manifest["calibration"]
    (model_dir / MANIFEST_NAME).write_text(json.dumps(manifest))

    assert read_manifest(model_dir).calibration is None
