"""Isolation: a bound on what a tool that describes no one job gains in dense search.

A text that describes no one job (frequent words stuffed together, claims of every capability, a
bag of requests, a name of the most requested verbs) embeds near the centre of the catalog, where
every request's vector has some similarity, yet near no tool in particular: real tools have
neighbours (the same job on other servers, the other tools of their server). Its `generality` is
its cosine to the catalog's mean direction less its mean cosine to its `NEIGHBOURS` nearest tools.
Each model's similarities lose, per tool, `WEIGHT` times how far its generality is past the
catalog's median by more than `SPREADS` robust spreads (median absolute deviations, which the few
hostile tools of a catalog cannot move). Most real tools are within that range and lose nothing;
what a text gains from being generic is bounded by how generic it is. It is judged against the
catalog the tool sits in, with each model's own vectors, so it needs no reference data and no
retraining: the ranker reads the penalised similarities as it reads any.

The constants were chosen on the development attack families only (docs/security.md).
"""

from __future__ import annotations

import numpy as np

NEIGHBOURS = 10
"""How many nearest tools a tool's neighbourhood holds."""
SPREADS = 4.0
"""How many median absolute deviations past the catalog's median distance are tolerated."""
WEIGHT = 6.0
"""Cosine lost per cosine of distance past that range."""
MIN_TOOLS = 100
"""A smaller catalog has too few tools to say what a usual neighbourhood is: no penalty."""
_BLOCK_ROWS = 512
"""Tools compared with the whole catalog at once: bounds the similarity block's memory."""


def neighbour_similarity(vectors: np.ndarray, neighbours: int = NEIGHBOURS) -> np.ndarray:
    """Each row's mean cosine to its `neighbours` most similar other rows (rows need not be
    normalised; a zero row is similar to none)."""
    count = len(vectors)
    neighbours = min(neighbours, count - 1)
    if neighbours <= 0:
        return np.zeros(count, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = (vectors / np.maximum(norms, 1e-9)).astype(np.float32)
    means = np.empty(count, dtype=np.float32)
    for start in range(0, count, _BLOCK_ROWS):
        block = unit[start : start + _BLOCK_ROWS] @ unit.T
        rows = np.arange(len(block))
        block[rows, start + rows] = -np.inf  # a tool is not its own neighbour
        nearest = np.partition(block, count - neighbours, axis=1)[:, count - neighbours :]
        means[start : start + len(block)] = nearest.mean(axis=1)
    return means


def generality(vectors: np.ndarray, neighbours: int = NEIGHBOURS) -> np.ndarray:
    """Per row: its cosine to the catalog's mean direction less its mean cosine to its nearest other
    rows. High for a text near the centre of the catalog but near no tool in particular."""
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-9)
    centre = unit.mean(axis=0)
    centrality = unit @ (centre / max(float(np.linalg.norm(centre)), 1e-9))
    spread: np.ndarray = (centrality - neighbour_similarity(vectors, neighbours)).astype(np.float32)
    return spread


def isolation_penalty(
    vectors: np.ndarray,
    *,
    neighbours: int = NEIGHBOURS,
    spreads: float = SPREADS,
    weight: float = WEIGHT,
    min_tools: int = MIN_TOOLS,
) -> np.ndarray:
    """Per tool (row of `vectors`), the similarity it loses for being more general than its
    catalog's tools usually are (0 for most; all 0 in a catalog under `min_tools`)."""
    if len(vectors) < min_tools:
        return np.zeros(len(vectors), dtype=np.float32)
    value = generality(vectors, neighbours)
    median = float(np.median(value))
    spread = float(np.median(np.abs(value - median)))
    excess = value - (median + spreads * spread)
    penalty: np.ndarray = (weight * np.maximum(excess, 0.0)).astype(np.float32)
    return penalty


def without_foreign_meaning(similarities: np.ndarray, foreign: np.ndarray) -> np.ndarray:
    """`similarities` (one row per query, or one query's) with the `foreign` tools' at most the
    row's mean over the catalog: a tool written in another language than its catalog's gains no
    dense evidence (`documents.foreign_tools`); a poor match stays poor."""
    if not foreign.any():
        return similarities
    mean = similarities.mean(axis=-1, keepdims=True)
    bounded: np.ndarray = np.where(foreign, np.minimum(similarities, mean), similarities)
    return bounded
