"""Training the learned ranking (`search.ranking`) on requests whose serving tools are known.

Given a hybrid index over a catalog (without a ranker) and training requests, `train_ranker`:

1. computes every request's signals once (`HybridIndex.evidence`);
2. fits each model's query adapter by ridge regression: the request's embedding toward the mean
   vector of its gold tools (`fit_adapter`);
3. fits the re-ranker's weights on the candidates' features with a listwise softmax loss and an
   L2 pull toward the fusion (`fit_weights`). The adapted similarities it learns from are
   *cross-fitted*: each request's come from adapters fitted without its server's requests, so the
   weights learn how much an adapter helps on servers it has not seen, which is how the product
   meets a new catalog;
4. refits the adapters on all requests for the shipped ranker.

Folds are whole servers (a hash of the name of the first gold tool's server), so nothing is random
and a run is repeatable to the bit on the same machine. `cross_validate` reports what the learned
ranking gains over the fusion on servers held out of training, the figure that says whether it
generalises. Only numpy and scipy are needed: serving's own dependencies.
"""

from __future__ import annotations

import hashlib
import importlib.resources
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.optimize

from toolsearch.catalog_file import load_catalog_file, recorded_catalog_path
from toolsearch.embedding import Embedder
from toolsearch.embedding.manifest import sha256_file
from toolsearch.evaluation import DEPTH, Outcome, Query, load_queries
from toolsearch.search.documents import split_qualified_name
from toolsearch.search.hybrid import HybridIndex, QueryVectors, build_index, fused_scores
from toolsearch.search.ranking import (
    FEATURES,
    Ranker,
    Signals,
    candidates,
    feature_rows,
    initial_weights,
)
from toolsearch.search.vectors import VectorCache
from toolsearch.tool import Tool, ToolInterner

FOLDS = 5
L2 = 0.03
"""Pull of the weights back toward the fusion: chosen by by-server cross-validation on the
training set (0.01 to 0.3 tried)."""
RIDGE = (3.0, 10.0)
"""Ridge penalty of the first model's adapter and of the companion's (by cross-validation)."""
ADAPTER_SCALE = 0.5
"""How far an adapter moves a query toward its fitted target: half way kept more of what the model
knows on held-out servers than all the way."""
MAX_ITERATIONS = 300


@dataclass(frozen=True, slots=True)
class _Example:
    query: Query
    gold: np.ndarray
    signals: Signals


def fit_adapter(vectors: np.ndarray, targets: np.ndarray, ridge: float) -> np.ndarray:
    """W of the adapter `q + q @ W` (scaled by `ADAPTER_SCALE`), by ridge regression of the
    residuals `targets - vectors` on `vectors` (both one row per request)."""
    x = vectors.astype(np.float64)
    gram = x.T @ x + ridge * np.eye(x.shape[1])
    return (ADAPTER_SCALE * np.linalg.solve(gram, x.T @ (targets - x))).astype(np.float32)


def fit_weights(rows: Sequence[tuple[np.ndarray, np.ndarray]], l2: float = L2) -> np.ndarray:
    """Re-ranker weights for (features, is-gold) per request, by a listwise softmax loss (the
    probability the gold tools get among the candidates) plus `l2` x the distance to the fusion."""
    rows = [(features, gold) for features, gold in rows if gold.any()]
    width = max(len(features) for features, _ in rows)
    x = np.zeros((len(rows), width, len(FEATURES)))
    present = np.zeros((len(rows), width), dtype=bool)
    gold = np.zeros((len(rows), width), dtype=bool)
    for number, (features, is_gold) in enumerate(rows):
        x[number, : len(features)] = features
        present[number, : len(features)] = True
        gold[number, : len(features)] = is_gold
    start = initial_weights()

    def loss(weights: np.ndarray) -> tuple[float, np.ndarray]:
        scores = np.where(present, x @ weights, -np.inf)
        scores -= scores.max(axis=1, keepdims=True)
        p = np.exp(scores)
        p /= p.sum(axis=1, keepdims=True)
        p_gold = np.where(gold, p, 0.0).sum(axis=1)
        # d(-log p_gold)/d score = p - p restricted to the gold tools and renormalised
        gradient_scores = p - np.where(gold, p, 0.0) / np.maximum(p_gold, 1e-12)[:, None]
        gradient = np.einsum("nl,nlf->f", gradient_scores, x) / len(rows)
        value = -np.log(np.maximum(p_gold, 1e-12)).mean()
        distance = weights - start
        return value + l2 * float(distance @ distance) / 2, gradient + l2 * distance

    result = scipy.optimize.minimize(
        loss, start, jac=True, method="L-BFGS-B", options={"maxiter": MAX_ITERATIONS}
    )
    return np.asarray(result.x)


def server_fold(query_gold: Sequence[str], folds: int = FOLDS) -> int:
    """The fold of a request: by its first gold tool's server, so a server's requests stay together."""
    server = split_qualified_name(sorted(query_gold)[0])[0]
    return int(hashlib.sha256(server.encode()).hexdigest(), 16) % folds


def examples(index: HybridIndex, queries: Sequence[Query]) -> list[_Example]:
    """Each servable request with at least one gold tool in the catalog, and its signals."""
    positions = {name: position for position, name in enumerate(index.lexical.tool_names)}
    found = []
    for query in queries:
        gold = np.array(sorted(positions[name] for name in query.gold if name in positions), np.int64)
        if len(gold):
            found.append(_Example(query, gold, index.evidence(query.text).signals))
    return found


def _targets(index: HybridIndex, model: int, gold: Sequence[np.ndarray]) -> np.ndarray:
    """Per request, the normalised mean of its gold tools' vectors (both passages blended)."""
    semantic = index.semantic if model == 0 else index.companions[model - 1].semantic
    tools = semantic.blended_vectors()
    means = np.stack([tools[positions].mean(axis=0) for positions in gold])
    return means / np.maximum(np.linalg.norm(means, axis=1, keepdims=True), 1e-9)


def _fit_adapters(index: HybridIndex, chosen: Sequence[_Example]) -> tuple[np.ndarray, ...]:
    """The first model's adapter and, with a companion, the companion's (fitted on the requests in
    a language it knows)."""
    first = np.stack([e.signals.vector for e in chosen])
    adapters = [fit_adapter(first, _targets(index, 0, [e.gold for e in chosen]), RIDGE[0])]
    if index.companions:
        known = [e for e in chosen if e.signals.companion_vector is not None]
        vectors = np.stack(
            [e.signals.companion_vector for e in known if e.signals.companion_vector is not None]
        )
        adapters.append(fit_adapter(vectors, _targets(index, 1, [e.gold for e in known]), RIDGE[1]))
    return tuple(adapters)


def _feature_rows(
    index: HybridIndex, chosen: Sequence[_Example], folds: np.ndarray
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Features of every request, its adapted similarities cross-fitted by server fold."""
    rows: list[tuple[np.ndarray, np.ndarray]] = []
    adapted: dict[int, Signals] = {}
    for fold in np.unique(folds):
        adapters = _fit_adapters(index, [e for e, f in zip(chosen, folds, strict=True) if f != fold])
        for number in np.flatnonzero(folds == fold):
            adapted[int(number)] = index.adapted(chosen[number].signals, adapters)
    for number, example in enumerate(chosen):
        signals = adapted[number]
        tools = candidates(signals)
        features = feature_rows(signals, tools, index.groups, index.one_word_names)
        rows.append((features, np.isin(tools, example.gold)))
    return rows


def train_ranker(
    index: HybridIndex, queries: Sequence[Query], *, fingerprints: Sequence[str], training: dict[str, Any]
) -> Ranker:
    """A ranker for `index`'s models, trained on `queries` (`training` is recorded in it)."""
    chosen = examples(index, queries)
    return _trained(index, chosen, fingerprints, training)


def _trained(
    index: HybridIndex, chosen: Sequence[_Example], fingerprints: Sequence[str], training: dict[str, Any]
) -> Ranker:
    folds = np.array([server_fold(e.query.gold) for e in chosen])
    weights = fit_weights(_feature_rows(index, chosen, folds))
    settings = {"l2": L2, "ridge": list(RIDGE), "adapter_scale": ADAPTER_SCALE, "folds": FOLDS}
    return Ranker(
        weights,
        _fit_adapters(index, chosen),
        tuple(fingerprints),
        {**training, "requests": len(chosen), "settings": settings},
    )


def cross_validate(index: HybridIndex, queries: Sequence[Query]) -> tuple[list[Outcome], list[Outcome]]:
    """Outcomes on servers held out of training, by the fusion and by a ranker trained on the other
    folds: each request is ranked by a model that never saw its server."""
    chosen = examples(index, queries)
    folds = np.array([server_fold(e.query.gold) for e in chosen])
    names = index.lexical.tool_names
    fused, learned = [], []
    for fold in np.unique(folds):
        trained = [e for e, f in zip(chosen, folds, strict=True) if f != fold]
        ranker = _trained(index, trained, (), {})
        for number in np.flatnonzero(folds == fold):
            example = chosen[number]
            signals = index.adapted(example.signals, ranker.adapters)
            fused.append(_outcome(example.query, fused_scores(signals), names))
            scores = ranker.scores(signals, index.groups, index.one_word_names)
            learned.append(_outcome(example.query, scores, names))
    return fused, learned


def _outcome(query: Query, scores: np.ndarray, names: Sequence[str]) -> Outcome:
    top = np.argsort(-scores, kind="stable")[:DEPTH]
    ranked = tuple(names[position] for position in top)
    rank = next((rank for rank, name in enumerate(ranked) if name in query.gold), None)
    return Outcome(query, rank, False, 0.0, ranked)


def training_queries_path() -> Path:
    """The training requests shipped with the package (1,480, seven languages; see docs)."""
    return Path(str(importlib.resources.files("toolsearch") / "data" / "queries-train.jsonl"))


def shipped_ranker_path() -> Path:
    """The ranker trained for the profile `toolsearch model install` writes."""
    return Path(str(importlib.resources.files("toolsearch") / "data" / "ranker"))


def catalog_index(
    models: Sequence[Embedder], catalog: Path | None = None, cache: VectorCache | None = None
) -> tuple[HybridIndex, list[Tool]]:
    """The hybrid index (fusion, no ranker) of a catalog file, the recorded one by default; tool
    vectors from `cache` where it has them."""
    definitions = load_catalog_file(catalog or recorded_catalog_path())
    interner = ToolInterner()
    tools = [interner.intern(definition) for definition in definitions]
    first, *companions = models
    index = build_index(tools, first, cache=cache, companions=[QueryVectors(model) for model in companions])
    assert isinstance(index, HybridIndex)  # a model is given: never the lexical index alone
    return index, tools


def train_profile_ranker(
    models: Sequence[Embedder],
    queries_path: Path,
    catalog: Path | None = None,
    cache: VectorCache | None = None,
) -> tuple[Ranker, HybridIndex, list[Query]]:
    """A ranker for `models` trained on the requests of `queries_path` over the catalog file."""
    index, _ = catalog_index(models, catalog, cache)
    queries = load_queries(queries_path)
    training = {
        "queries_sha256": sha256_file(queries_path),
        "catalog_sha256": sha256_file(catalog or recorded_catalog_path()),
    }
    fingerprints = [model.fingerprint for model in models]
    return train_ranker(index, queries, fingerprints=fingerprints, training=training), index, queries
