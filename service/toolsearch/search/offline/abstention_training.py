"""Training the abstention model (`search.abstention`): on the training requests, each ranked by a
ranker that did not see its server (`search.training.cross_fitted`), and on requests no tool serves.

A logistic regression over each request's abstention features (`search.abstention.FEATURES`), both
classes weighed alike; its threshold is chosen on the servable requests of servers held out of its
own fit (`held_out_abstention`), so that it abstains wrongly on at most `WRONG_ABSTENTIONS` of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.optimize

from toolsearch.embedding import Embedder
from toolsearch.embedding.manifest import sha256_file
from toolsearch.search.abstention import WRONG_ABSTENTIONS, Abstainer
from toolsearch.search.dictionaries import Dictionaries
from toolsearch.search.hybrid import HybridIndex
from toolsearch.search.offline.evaluation import Outcome, Query, format_abstention, load_queries, summarize
from toolsearch.search.offline.training import (
    FOLDS,
    CrossFitted,
    adapted,
    catalog_index,
    cross_fitted,
    data_digests,
    held_out_rankers,
)
from toolsearch.search.ranking import Ranker
from toolsearch.search.vectors import VectorCache

ABSTENTION_L2 = 1.0
"""Of the abstention model's logistic regression, over standardised features."""


@dataclass(frozen=True, slots=True)
class AbstentionData:
    """The abstention model's training rows: one per request that names no tool."""

    queries: list[Query]
    rows: np.ndarray
    """`search.abstention.FEATURES` of each request."""
    unservable: np.ndarray
    folds: np.ndarray
    """Servable requests by their server (`server_fold`), unservable ones by their family."""


def abstention_data(
    index: HybridIndex, ranker: Ranker, fitted: CrossFitted, unservable: Sequence[Query]
) -> AbstentionData:
    """Each servable training request's features as ranked by a ranker that did not see its server
    (`fitted`'s signals, weights from the other folds), and each unservable request's as `ranker`
    ranks it."""
    queries, rows, folds = [], [], []
    for fold, held_out in held_out_rankers(fitted).items():
        for number in map(int, np.flatnonzero(fitted.folds == fold)):
            query, signals = fitted.examples[number].query, fitted.signals[number]
            if not len(signals.named):
                scores = held_out.scores(signals, index.groups, index.one_word_names)
                queries.append(query)
                rows.append(index.features(index.request(query.text), signals, scores))
                folds.append(fold)
    families = sorted({query.family for query in unservable})
    for query in unservable:
        signals = adapted(index, index.evidence(query.text).signals, ranker.adapters)
        if not len(signals.named):
            scores = ranker.scores(signals, index.groups, index.one_word_names)
            queries.append(query)
            rows.append(index.features(index.request(query.text), signals, scores))
            folds.append(families.index(query.family) % FOLDS)
    servable = len(queries) - sum(1 for query in queries if not query.gold)
    is_unservable = np.arange(len(queries)) >= servable
    return AbstentionData(queries, np.stack(rows), is_unservable, np.array(folds))


def fit_abstention(
    rows: np.ndarray, unservable: np.ndarray, l2: float = ABSTENTION_L2
) -> tuple[np.ndarray, ...]:
    """Centre, scale, weights and bias (a 1-array) of a logistic regression of `unservable` on the
    standardised `rows`, both classes weighed alike, with an `l2` penalty on the weights."""
    centre, scale = rows.mean(axis=0), np.maximum(rows.std(axis=0), 1e-9)
    x = (rows - centre) / scale
    y = unservable.astype(np.float64)
    weight = np.where(unservable, 0.5 / max(y.mean(), 1e-9), 0.5 / max(1 - y.mean(), 1e-9)) / len(y)

    def loss(parameters: np.ndarray) -> tuple[float, np.ndarray]:
        margin = x @ parameters[:-1] + parameters[-1]
        p = 1.0 / (1.0 + np.exp(-margin))
        value = float(weight @ (np.logaddexp(0.0, margin) - y * margin))
        residual = weight * (p - y)
        gradient = np.append(x.T @ residual + l2 * parameters[:-1] / len(y), residual.sum())
        return value + l2 * float(parameters[:-1] @ parameters[:-1]) / (2 * len(y)), gradient

    start = np.zeros(x.shape[1] + 1)
    result = scipy.optimize.minimize(loss, start, jac=True, method="L-BFGS-B", options={"maxiter": 500})
    return centre, scale, result.x[:-1], result.x[-1:]


def held_out_abstention(data: AbstentionData, l2: float = ABSTENTION_L2) -> np.ndarray:
    """Each request's probability of being unservable by a model fitted without its fold (its
    servers, or its family)."""
    probabilities = np.zeros(len(data.rows))
    for fold in np.unique(data.folds):
        held = data.folds == fold
        centre, scale, weights, bias = fit_abstention(data.rows[~held], data.unservable[~held], l2)
        margin = ((data.rows[held] - centre) / scale) @ weights + bias[0]
        probabilities[held] = 1.0 / (1.0 + np.exp(-margin))
    return probabilities


def abstention_threshold(servable: np.ndarray, wrong: float = WRONG_ABSTENTIONS) -> float:
    """The probability above which at most `wrong` of these servable requests' are."""
    ranked = np.sort(servable)[::-1]
    return float(ranked[min(int(wrong * len(ranked)), len(ranked) - 1)])


def held_out_report(data: AbstentionData, held_out: np.ndarray, threshold: float) -> str:
    """What the abstention model abstains on at `threshold`, each request judged by a model fitted
    without its fold (servers held out, family held out), overall, per language and per family."""
    outcomes = [
        Outcome(query, None, bool(probability > threshold), 0.0)
        for query, probability in zip(data.queries, held_out, strict=True)
    ]
    return "\n".join(
        ["abstention, servers and families held out:", *format_abstention(summarize(outcomes)["abstention"])]
    )


def train_abstainer(
    index: HybridIndex,
    ranker: Ranker,
    fitted: CrossFitted,
    unservable: Sequence[Query],
    *,
    training: dict[str, Any],
) -> tuple[Abstainer, AbstentionData, np.ndarray]:
    """The abstention model for `ranker` over `index`, its data and the held-out probabilities its
    threshold was chosen on."""
    data = abstention_data(index, ranker, fitted, unservable)
    held_out = held_out_abstention(data)
    threshold = abstention_threshold(held_out[~data.unservable])
    centre, scale, weights, bias = fit_abstention(data.rows, data.unservable)
    abstained = held_out > threshold
    settings = {"l2": ABSTENTION_L2, "wrong_abstentions": WRONG_ABSTENTIONS, "folds": FOLDS}
    figures = {
        "servable": int((~data.unservable).sum()),
        "unservable": int(data.unservable.sum()),
        "held_out_abstained_on_unservable": round(float(abstained[data.unservable].mean()), 4),
        "held_out_wrongly_abstained": round(float(abstained[~data.unservable].mean()), 4),
    }
    abstainer = Abstainer(
        centre,
        scale,
        weights,
        float(bias[0]),
        threshold,
        ranker.models,
        ranker.dictionaries,
        ranker.digest,
        {**training, "settings": settings, **figures},
    )
    return abstainer, data, held_out


def train_profile_abstainer(
    models: Sequence[Embedder],
    ranker: Ranker,
    queries_path: Path,
    unservable_path: Path,
    catalog: Path | None = None,
    cache: VectorCache | None = None,
    dictionaries: Dictionaries | None = None,
) -> tuple[Abstainer, AbstentionData, np.ndarray]:
    """The abstention model for a profile's `ranker`, trained on the requests of `queries_path` (a
    tool serves each) and of `unservable_path` (none does) over the catalog file, with its data and
    held-out probabilities (`train_abstainer`)."""
    index = catalog_index(models, catalog, cache, dictionaries)
    fitted = cross_fitted(index, load_queries(queries_path))
    training = {**data_digests(queries_path, catalog), "unservable_sha256": sha256_file(unservable_path)}
    return train_abstainer(index, ranker, fitted, load_queries(unservable_path), training=training)
