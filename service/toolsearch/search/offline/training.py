"""Training the learned ranking (`search.ranking`) on requests whose serving tools are known (the
abstention model is trained on the same cross-fitting, in `search.abstention_training`).

Given a hybrid index over a catalog (without a ranker) and training requests, `train_ranker`:

1. computes every request's signals once (`HybridIndex.evidence`);
2. fits the first model's query adapter contrastively: the adapted embedding of each request
   should be nearer its gold tools than every other tool of the catalog (`fit_adapter`), with
   the fusion's scores in the softmax as a prior (`FUSION_PRIOR`), so that the adapter learns
   what the fusion misses rather than ranking alone: the re-ranker reads both;
3. fits the re-ranker's weights on the candidates' features with a listwise softmax loss and an
   L2 pull toward the fusion (`fit_weights`). The adapted similarities it learns from are
   *cross-fitted*: each request's come from adapters fitted without its server's requests, so the
   weights learn how much an adapter helps on servers it has not seen, which is how the product
   meets a new catalog;
4. refits the adapter on all requests for the shipped ranker;
5. fits the abstention model (`search.abstention_training`): the features of each servable request ranked by
   weights and an adapter fitted without its server, and of each unservable request ranked by the
   ranker; a logistic regression, its threshold chosen on the servable requests of servers held
   out of its own fit (`held_out_abstention`).

Folds are whole servers (a hash of the name of the first gold tool's server), so nothing is random
and a run is repeatable to the bit on the same machine. `cross_validate` reports what the learned
ranking gains over the fusion on servers held out of training, the figure that says whether it
generalises. Only numpy and scipy are needed: serving's own dependencies. On 2 cores a run over
the recorded catalog takes about 10 minutes once the catalog is embedded (six adapter fits).
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.resources
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.optimize
from threadpoolctl import threadpool_limits

from toolsearch.catalog_file import load_catalog_tools, recorded_catalog_path
from toolsearch.embedding import Embedder
from toolsearch.embedding.manifest import sha256_file
from toolsearch.naming import split_qualified_name
from toolsearch.search.build import profile_index
from toolsearch.search.dictionaries import Dictionaries, digest_of
from toolsearch.search.hybrid import HybridIndex
from toolsearch.search.offline.evaluation import DEPTH, Outcome, Query, load_queries
from toolsearch.search.profile import Profile
from toolsearch.search.ranking import Ranker, adapt, candidates, feature_rows, initial_weights
from toolsearch.search.scoring import Fusion
from toolsearch.search.signals import Signals, standardised
from toolsearch.search.vectors import VectorCache

FOLDS = 5
L2 = 0.03
"""Pull of the weights back toward the fusion: chosen by by-server cross-validation on the
training set (0.01 to 0.3 tried)."""
ADAPTER_STEPS = 100
ADAPTER_RATE = 1e-3
TEMPERATURE = 0.05
"""Of the adapter's softmax over the catalog (e5's cosines span about 0.7 to 0.9)."""
FUSION_PRIOR = 1.0
"""How much of each tool's fusion z-score the adapter's softmax adds to its cosine (over the
temperature): where the fusion already ranks a request's gold tool first, the adapter has little
left to learn from it. Chosen on the dev set (0.3 to 3 tried)."""
MAX_ITERATIONS = 300
_TRAINING_THREADS = 2


@dataclass(frozen=True, slots=True)
class _Example:
    query: Query
    gold: np.ndarray
    signals: Signals


def fit_adapter(
    vectors: np.ndarray, tools: np.ndarray, gold: Sequence[np.ndarray], prior: np.ndarray | None = None
) -> np.ndarray:
    """W of the adapter `q + q @ W` for requests' `vectors` (one row each) over a catalog's `tools`
    (one vector row each), trained by Adam from W = 0 for `ADAPTER_STEPS` steps on the softmax
    cross-entropy of each request's `gold` positions among all tools; `prior` (one row per request,
    one column per tool) is added to the softmax's scores, which are the cosines over the
    temperature."""
    x = vectors.astype(np.float32)
    count, dimensions = x.shape
    is_gold = np.zeros((count, len(tools)), dtype=bool)
    for row, positions in enumerate(gold):
        is_gold[row, positions] = True
    weights = np.zeros((dimensions, dimensions), np.float32)
    first, second = np.zeros_like(weights), np.zeros_like(weights)
    for step in range(1, ADAPTER_STEPS + 1):
        moved = x + x @ weights
        norms = np.linalg.norm(moved, axis=1, keepdims=True)
        unit = moved / norms
        scores = unit @ tools.T / TEMPERATURE
        if prior is not None:
            scores += prior
        p = np.exp(scores - scores.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        p_gold = np.where(is_gold, p, 0.0)
        # d loss / d scores: the softmax minus its renormalised restriction to the gold tools
        d_scores = (p - p_gold / p_gold.sum(axis=1, keepdims=True)) / count
        d_unit = d_scores @ tools / TEMPERATURE
        d_moved = (d_unit - (d_unit * unit).sum(axis=1, keepdims=True) * unit) / norms
        gradient = x.T @ d_moved
        first = 0.9 * first + 0.1 * gradient
        second = 0.999 * second + 0.001 * gradient * gradient
        step_size = ADAPTER_RATE * np.sqrt(1 - 0.999**step) / (1 - 0.9**step)
        weights -= (step_size * first / (np.sqrt(second) + 1e-8)).astype(np.float32)
    return weights


def fit_weights(rows: Sequence[tuple[np.ndarray, np.ndarray]], l2: float = L2) -> np.ndarray:
    """Re-ranker weights for (features, is-gold) per request, by a listwise softmax loss (the
    probability the gold tools get among the candidates) plus `l2` x the distance to the fusion."""
    rows = [(features, gold) for features, gold in rows if gold.any()]
    width = max(len(features) for features, _ in rows)
    x = np.zeros((len(rows), width, rows[0][0].shape[1]))
    present = np.zeros((len(rows), width), dtype=bool)
    gold = np.zeros((len(rows), width), dtype=bool)
    for number, (features, is_gold) in enumerate(rows):
        x[number, : len(features)] = features
        present[number, : len(features)] = True
        gold[number, : len(features)] = is_gold
    start = initial_weights(x.shape[2])

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


def server_fold(query_gold: Iterable[str], folds: int = FOLDS) -> int:
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


def _fit_adapters(index: HybridIndex, chosen: Sequence[_Example]) -> tuple[np.ndarray, ...]:
    """The first model's adapter, fitted on `chosen` with their fusion as its prior (several BLAS
    threads: it is matrix products)."""
    vectors = np.stack([e.signals.vector for e in chosen])
    prior = FUSION_PRIOR * np.stack([standardised(e.signals.fusion) for e in chosen]).astype(np.float32)
    with threadpool_limits(limits=_TRAINING_THREADS, user_api="blas"):
        adapter = fit_adapter(vectors, index.semantic.blended, [e.gold for e in chosen], prior)
    return (adapter,)


def _cross_fitted(index: HybridIndex, chosen: Sequence[_Example], folds: np.ndarray) -> list[Signals]:
    """Each request's signals with its adapted similarities from an adapter fitted without its fold."""
    by_number: dict[int, Signals] = {}
    for fold in np.unique(folds):
        adapters = _fit_adapters(index, [e for e, f in zip(chosen, folds, strict=True) if f != fold])
        for number in map(int, np.flatnonzero(folds == fold)):
            by_number[number] = adapted(index, chosen[number].signals, adapters)
    return [by_number[number] for number in range(len(chosen))]


def adapted(index: HybridIndex, signals: Signals, adapters: Sequence[np.ndarray]) -> Signals:
    """`signals` with the first model's similarities to the request's vector moved by its adapter."""
    moved = adapt(signals.vector, adapters[0])
    return dataclasses.replace(signals, adapted_dense=index.semantic.similarities(moved))


def _rows(
    index: HybridIndex, chosen: Sequence[_Example], signals: Sequence[Signals]
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each request's candidates' features, and which candidates serve it."""
    rows = []
    for example, each in zip(chosen, signals, strict=True):
        tools = candidates(each)
        rows.append(
            (feature_rows(each, tools, index.groups, index.one_word_names), np.isin(tools, example.gold))
        )
    return rows


@dataclass(frozen=True, slots=True)
class CrossFitted:
    """Training requests with what a ranker that did not see their server makes of them."""

    examples: list[_Example]
    folds: np.ndarray
    signals: list[Signals]
    """Each request's, adapted by an adapter fitted without its fold."""
    rows: list[tuple[np.ndarray, np.ndarray]]
    """Each request's candidates' features (`_rows`) from those signals."""


def cross_fitted(index: HybridIndex, queries: Sequence[Query]) -> CrossFitted:
    """`queries`' examples, server folds, cross-fitted signals and feature rows (`_cross_fitted`)."""
    chosen = examples(index, queries)
    folds = np.array([server_fold(e.query.gold) for e in chosen])
    signals = _cross_fitted(index, chosen, folds)
    return CrossFitted(chosen, folds, signals, _rows(index, chosen, signals))


def train_ranker(
    index: HybridIndex,
    queries: Sequence[Query],
    *,
    fingerprints: Sequence[str],
    training: dict[str, Any],
    fitted: CrossFitted | None = None,
) -> Ranker:
    """A ranker for `index`'s models, trained on `queries` (`training` is recorded in it);
    `fitted` is their `cross_fitted`, made here when not given."""
    fitted = fitted or cross_fitted(index, queries)
    chosen = fitted.examples
    weights = fit_weights(fitted.rows)
    settings = {
        "l2": L2,
        "adapter_steps": ADAPTER_STEPS,
        "adapter_rate": ADAPTER_RATE,
        "temperature": TEMPERATURE,
        "fusion_prior": FUSION_PRIOR,
        "folds": FOLDS,
    }
    return Ranker(
        weights,
        _fit_adapters(index, chosen),
        tuple(fingerprints),
        {**training, "requests": len(chosen), "settings": settings},
        digest_of(index.dictionaries),
    )


def held_out_rankers(fitted: CrossFitted) -> dict[int, Ranker]:
    """Per fold, a ranker of weights fitted on the other folds' requests (its adapters are in the
    cross-fitted signals)."""
    folds, rows = fitted.folds, fitted.rows
    return {
        int(fold): Ranker(
            fit_weights([row for row, f in zip(rows, folds, strict=True) if f != fold]), (), (), {}
        )
        for fold in np.unique(folds)
    }


def cross_validate(
    index: HybridIndex, queries: Sequence[Query], fitted: CrossFitted | None = None
) -> tuple[list[Outcome], list[Outcome]]:
    """Outcomes on servers held out of training, by the fusion and by the learned ranking: each
    request's adapted similarities come from an adapter fitted without its fold's servers, and the
    weights that rank it from the other folds' requests. (Those requests' own adapted similarities
    come from adapters that saw the held-out fold: refitting every adapter per fold would cost five
    times the training, for a second-order effect.)"""
    fitted = fitted or cross_fitted(index, queries)
    names = index.lexical.tool_names
    fused, learned = [], []
    for fold, ranker in held_out_rankers(fitted).items():
        for number in np.flatnonzero(fitted.folds == fold):
            query, each = fitted.examples[number].query, fitted.signals[number]
            fused.append(_outcome(query, Fusion().scores(each), names))
            learned.append(_outcome(query, ranker.scores(each, index.groups, index.one_word_names), names))
    return fused, learned


def _outcome(query: Query, scores: np.ndarray, names: Sequence[str]) -> Outcome:
    top = np.argsort(-scores, kind="stable")[:DEPTH]
    ranked = tuple(names[position] for position in top)
    rank = next((rank for rank, name in enumerate(ranked) if name in query.gold), None)
    return Outcome(query, rank, False, 0.0, ranked)


def training_queries_path() -> Path:
    """The training requests shipped with the package (1,480, seven languages; see docs)."""
    return Path(str(importlib.resources.files("toolsearch") / "data" / "queries-train.jsonl"))


def unservable_queries_path() -> Path:
    """The requests no tool of the recorded catalog serves, shipped with the package (150, seven
    languages, four families; see docs)."""
    return Path(str(importlib.resources.files("toolsearch") / "data" / "queries-unservable.jsonl"))


def shipped_ranker_path() -> Path:
    """The ranker trained for the profile `toolsearch model install` writes."""
    return Path(str(importlib.resources.files("toolsearch") / "data" / "ranker"))


def catalog_index(
    models: Sequence[Embedder],
    catalog: Path | None = None,
    cache: VectorCache | None = None,
    dictionaries: Dictionaries | None = None,
) -> HybridIndex:
    """The hybrid index (fusion, no ranker) of a catalog file, the recorded one by default, that
    translates queries with `dictionaries`; tool vectors from `cache` where it has them."""
    tools = load_catalog_tools(catalog or recorded_catalog_path())
    index = profile_index(tools, Profile(tuple(models), None, dictionaries), cache=cache)
    assert isinstance(index, HybridIndex)  # a model is given: never the lexical index alone
    return index


def train_profile_ranker(
    models: Sequence[Embedder],
    queries_path: Path,
    catalog: Path | None = None,
    cache: VectorCache | None = None,
    dictionaries: Dictionaries | None = None,
) -> tuple[Ranker, HybridIndex, list[Query]]:
    """A ranker for `models` and `dictionaries` trained on the requests of `queries_path` over the
    catalog file."""
    index = catalog_index(models, catalog, cache, dictionaries)
    queries = load_queries(queries_path)
    fingerprints = [model.fingerprint for model in models]
    training = data_digests(queries_path, catalog)
    return train_ranker(index, queries, fingerprints=fingerprints, training=training), index, queries


def data_digests(queries_path: Path, catalog: Path | None) -> dict[str, Any]:
    return {
        "queries_sha256": sha256_file(queries_path),
        "catalog_sha256": sha256_file(catalog or recorded_catalog_path()),
    }
