"""Static (Model2Vec) models converted to the gather-and-mean graph, against Model2Vec's forward
pass written out in numpy."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer, models, pre_tokenizers

from toolsearch.embedding import ModelError, load_model
from toolsearch.embedding.model2vec import convert_model2vec

from .tiny_models import DIMENSIONS, token_table, word_tokenizer, write_model2vec

TOKENIZER = word_tokenizer()  # with a [CLS] ... [SEP] post-processor, which Model2Vec never applies
ROWS = TOKENIZER.get_vocab_size()
UNKNOWN = TOKENIZER.token_to_id("[UNK]")


def model2vec_forward(
    text: str,
    table: np.ndarray,
    tokenizer: Tokenizer = TOKENIZER,
    *,
    weights: np.ndarray | None = None,
    mapping: np.ndarray | None = None,
    dropped: int | None = UNKNOWN,
) -> np.ndarray:
    ids = [i for i in tokenizer.encode(text, add_special_tokens=False).ids if i != dropped]
    rows = table[mapping[ids] if mapping is not None else ids].astype(np.float32)
    if weights is not None:
        rows = rows * weights[ids][:, None]
    mean = rows.mean(axis=0)
    return mean / np.linalg.norm(mean)


def _convert(tmp_path: Path, tensors: dict[str, np.ndarray], tokenizer: Tokenizer = TOKENIZER) -> Path:
    write_model2vec(tmp_path / "source", tensors, tokenizer)
    convert_model2vec(tmp_path / "source", tmp_path / "model", name="tiny-static", licence="MIT")
    return tmp_path / "model"


TEXTS = ["find issues", "create a pull request", "search files in the repository", "weather"]


def test_a_static_model_embeds_as_model2vec_does(tmp_path: Path) -> None:
    table = token_table(ROWS)

    rows = load_model(_convert(tmp_path, {"embeddings": table})).embed_passages(TEXTS)

    expected = np.vstack([model2vec_forward(text, table) for text in TEXTS])
    np.testing.assert_allclose(rows, expected, rtol=1e-5, atol=1e-6)


def test_token_weights_and_row_mapping_are_applied(tmp_path: Path) -> None:
    table = token_table(5)
    weights = np.random.default_rng(3).uniform(0.1, 2.0, ROWS).astype(np.float32)
    mapping = np.arange(ROWS, dtype=np.int64) % 5
    tensors = {"embeddings": table, "weights": weights, "mapping": mapping}

    rows = load_model(_convert(tmp_path, tensors)).embed_queries(TEXTS)

    expected = np.vstack([model2vec_forward(t, table, weights=weights, mapping=mapping) for t in TEXTS])
    np.testing.assert_allclose(rows, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float16, np.int8])
def test_compact_tables_are_read_in_their_own_type(tmp_path: Path, dtype: type) -> None:
    table = (token_table(ROWS) * 40).astype(dtype)

    rows = load_model(_convert(tmp_path, {"embeddings": table})).embed_passages(TEXTS)

    expected = np.vstack([model2vec_forward(text, table) for text in TEXTS])
    np.testing.assert_allclose(rows, expected, rtol=1e-3, atol=1e-3)


def test_a_text_of_only_unknown_words_embeds_as_zeros(tmp_path: Path) -> None:
    embedder = load_model(_convert(tmp_path, {"embeddings": token_table(ROWS)}))

    np.testing.assert_array_equal(embedder.embed_queries(["zzz qqq"]), np.zeros((1, DIMENSIONS)))


def test_an_empty_text_embeds_as_zeros(tmp_path: Path) -> None:
    embedder = load_model(_convert(tmp_path, {"embeddings": token_table(ROWS)}))

    rows = embedder.embed_passages(["", "weather"])

    np.testing.assert_array_equal(rows[0], np.zeros(DIMENSIONS))
    assert np.linalg.norm(rows[1]) == pytest.approx(1.0)


def test_unigram_models_keep_their_unknown_token_as_model2vec_does(tmp_path: Path) -> None:
    vocab = [("<unk>", 0.0), ("▁find", -1.0), ("▁issue", -1.0), ("s", -2.0)]
    tokenizer = Tokenizer(models.Unigram(vocab, unk_id=0, byte_fallback=False))
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
    table = token_table(len(vocab))

    (row,) = load_model(_convert(tmp_path, {"embeddings": table}, tokenizer)).embed_passages(
        ["find issues ☃"]
    )

    np.testing.assert_allclose(
        row, model2vec_forward("find issues ☃", table, tokenizer, dropped=None), rtol=1e-5
    )


def test_a_table_smaller_than_the_vocabulary_is_refused(
    tmp_path: Path, leftovers: Callable[[], list[str]]
) -> None:
    with pytest.raises(ModelError, match="rows for only 5"):
        _convert(tmp_path, {"embeddings": token_table(5)})

    assert leftovers() == []


def test_a_directory_without_weights_is_refused(tmp_path: Path) -> None:
    (tmp_path / "source").mkdir()
    TOKENIZER.save(str(tmp_path / "source" / "tokenizer.json"))

    with pytest.raises(ModelError, match=r"model\.safetensors is missing"):
        convert_model2vec(tmp_path / "source", tmp_path / "model", name="x", licence="MIT")
