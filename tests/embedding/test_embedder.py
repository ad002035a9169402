from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from toolsearch.embedding import EmbedderClosed, ModelError, load_model
from toolsearch.embedding.embedder import cgroup_cpu_limit, usable_cores
from toolsearch.embedding.manifest import MANIFEST_NAME, MODEL_FILE, AbstentionThreshold, Calibration

from .tiny_models import (
    DIMENSIONS,
    mean_of_rows,
    token_states_graph,
    token_table,
    word_tokenizer,
    write_model,
)

TABLE = token_table(word_tokenizer().get_vocab_size())  # what write_model puts in the graph


def _ids(text: str) -> list[int]:
    return word_tokenizer().encode(text).ids


def test_rows_are_unit_length_float32_of_the_manifest_width(model_dir: Path) -> None:
    rows = load_model(model_dir).embed_passages(["find issues", "create a pull request", "weather"])

    assert rows.dtype == np.float32
    assert rows.shape == (3, DIMENSIONS)
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, rtol=1e-6)


def test_mean_pooling_averages_the_token_states_of_the_prefixed_text(model_dir: Path) -> None:
    embedder = load_model(model_dir)

    (query,) = embedder.embed_queries(["find issues"])
    (passage,) = embedder.embed_passages(["find issues"])

    np.testing.assert_allclose(query, mean_of_rows(TABLE, _ids("q: find issues")), rtol=1e-5)
    np.testing.assert_allclose(passage, mean_of_rows(TABLE, _ids("p: find issues")), rtol=1e-5)


def test_padding_in_a_batch_does_not_change_a_text_embedding(model_dir: Path) -> None:
    embedder = load_model(model_dir)
    texts = ["tool", "find search list create delete issue issues repository", "pull request"]

    together = embedder.embed_passages(texts)
    alone = np.vstack([embedder.embed_passages([text]) for text in texts])

    np.testing.assert_allclose(together, alone, rtol=1e-6)


def test_rows_come_back_in_input_order_across_batches(tmp_path: Path) -> None:
    write_model(tmp_path / "model")
    embedder = load_model(tmp_path / "model", batch_tokens=8)
    texts = ["find search list create delete", "tool", "issue issues", "weather file files", "pull"]

    rows = embedder.embed_passages(texts)

    np.testing.assert_allclose(rows, np.vstack([embedder.embed_passages([t]) for t in texts]), rtol=1e-6)


def test_texts_are_truncated_at_max_tokens(tmp_path: Path) -> None:
    write_model(tmp_path / "model", max_tokens=4)
    embedder = load_model(tmp_path / "model")

    (long,) = embedder.embed_passages(["find search list create delete"])

    # [CLS] p: find [SEP]: four tokens, the last one the separator.
    np.testing.assert_allclose(long, mean_of_rows(TABLE, _ids("p: find")), rtol=1e-5)


def test_no_texts_give_an_empty_matrix(model_dir: Path) -> None:
    assert load_model(model_dir).embed_queries([]).shape == (0, DIMENSIONS)


def test_a_closed_embedder_runs_the_model_no_more(model_dir: Path) -> None:
    embedder = load_model(model_dir)
    embedder.close()
    with pytest.raises(EmbedderClosed, match="was closed"):
        embedder.embed_passages(["find issues"])


def test_a_single_string_is_refused_rather_than_embedded_per_character(model_dir: Path) -> None:
    with pytest.raises(TypeError, match="sequence of texts"):
        load_model(model_dir).embed_queries("find issues")


def test_nfkc_normalisation_folds_compatibility_characters(tmp_path: Path) -> None:
    write_model(tmp_path / "model", text_normalization="nfkc")
    embedder = load_model(tmp_path / "model")
    full_width = embedder.embed_queries(["ｆｉｎｄ"])

    np.testing.assert_allclose(full_width, embedder.embed_queries(["find"]), rtol=1e-6)


def test_cls_pooling_takes_the_first_token_state(tmp_path: Path) -> None:
    write_model(tmp_path / "model", pooling="cls")

    (row,) = load_model(tmp_path / "model").embed_passages(["weather"])

    cls = TABLE[2]
    np.testing.assert_allclose(row, cls / np.linalg.norm(cls), rtol=1e-5)


def test_token_type_ids_are_fed_as_zeros_when_the_graph_takes_them(tmp_path: Path) -> None:
    write_model(tmp_path / "model", graph=token_states_graph(TABLE, token_types=True))

    (row,) = load_model(tmp_path / "model").embed_passages(["weather"])

    np.testing.assert_allclose(row, mean_of_rows(TABLE, _ids("p: weather")), rtol=1e-5)


def test_threads_set_onnxruntime_intra_op_threads(model_dir: Path) -> None:
    embedder = load_model(model_dir, threads=2)

    assert embedder._session.get_session_options().intra_op_num_threads == 2


def test_name_dimensions_and_fingerprint_describe_the_model(model_dir: Path, tmp_path: Path) -> None:
    write_model(tmp_path / "other", query_prefix="query: ")
    embedder = load_model(model_dir)

    assert (embedder.name, embedder.dimensions) == ("tiny", DIMENSIONS)
    assert embedder.fingerprint == load_model(model_dir).fingerprint
    assert embedder.fingerprint != load_model(tmp_path / "other").fingerprint


def test_a_model_s_calibration_leaves_its_fingerprint_as_it_is(model_dir: Path, tmp_path: Path) -> None:
    # The calibration changes no vector: a ranker trained before manifests carried it still fits.
    calibration = Calibration(AbstentionThreshold(0.5, 10.0), translation_cosine=0.7)
    write_model(tmp_path / "calibrated", calibration=calibration)

    assert load_model(tmp_path / "calibrated").fingerprint == load_model(model_dir).fingerprint


def test_a_changed_file_is_refused_with_its_name(model_dir: Path) -> None:
    with (model_dir / MODEL_FILE).open("ab") as model:
        model.write(b"\0")

    with pytest.raises(ModelError, match=r"model\.onnx does not match toolsearch-model\.json"):
        load_model(model_dir)


def test_a_missing_directory_says_how_to_create_one(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="toolsearch model fetch"):
        load_model(tmp_path / "absent")


def test_a_directory_without_manifest_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match=r"has no toolsearch-model\.json"):
        load_model(tmp_path)


def test_an_invalid_manifest_names_the_bad_field(model_dir: Path) -> None:
    manifest = json.loads((model_dir / MANIFEST_NAME).read_text())
    (model_dir / MANIFEST_NAME).write_text(json.dumps(manifest | {"pooling": "max"}))

    with pytest.raises(ModelError, match="pooling"):
        load_model(model_dir)


def test_a_manifest_that_does_not_fit_the_graph_is_refused(tmp_path: Path) -> None:
    write_model(tmp_path / "model", dimensions=DIMENSIONS + 1)

    with pytest.raises(ModelError, match="does not fit"):
        load_model(tmp_path / "model")


def test_parallel_runs_embed_a_catalog_as_one_run_at_a_time_does(tmp_path: Path) -> None:
    write_model(tmp_path / "model")
    texts = ["find search list create delete", "tool", "issue issues", "weather file files", "pull"] * 7

    serial = load_model(tmp_path / "model", batch_tokens=8).embed_passages(texts)
    parallel = load_model(tmp_path / "model", batch_tokens=8, workers=3).embed_passages(texts)

    np.testing.assert_array_equal(parallel, serial)


def test_a_closed_embedder_with_workers_starts_no_run(model_dir: Path) -> None:
    embedder = load_model(model_dir, batch_tokens=8, workers=2)
    embedder.close()

    with pytest.raises(EmbedderClosed):
        embedder.embed_passages(["find search list create delete", "tool", "issue issues"])


@pytest.mark.parametrize(
    ("files", "limit"),
    [
        ({"cpu.max": "150000 100000\n"}, 1.5),
        ({"cpu.max": "max 100000\n"}, None),
        ({"cpu/cpu.cfs_quota_us": "200000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 2.0),
        ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, None),
        ({}, None),
    ],
)
def test_the_cgroup_cpu_limit_is_read_from_v2_or_v1_files(
    tmp_path: Path, files: dict[str, str], limit: float | None
) -> None:
    for name, content in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(content)

    assert cgroup_cpu_limit(tmp_path) == limit


def test_usable_cores_stay_within_the_cgroup_limit(tmp_path: Path) -> None:
    (tmp_path / "cpu.max").write_text("100000 100000\n")

    assert usable_cores(most=8, cgroup=tmp_path) == 1
