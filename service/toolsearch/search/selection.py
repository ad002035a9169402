"""From every tool's score to an answer, alike for every index: the tools a request names put
first, then the best `limit`, best first (ties by position). A long request's scores are combined
with its sentences' before (`search.sentences.combined`)."""

from __future__ import annotations

import numpy as np

from toolsearch.search import SearchHit


def named_first(scores: np.ndarray, named: np.ndarray, *, floor: float | None = None) -> np.ndarray:
    """`scores` (in place) with the tools at `named` above all others, by the span of the scores
    and one: from their lowest (`floor` where the ranking has a lowest score of its own, as BM25F's
    0; else the lowest finite one) to their best. Tools left out of a ranking (-inf) stay out."""
    if len(named):
        ranked = scores[np.isfinite(scores)]
        lowest = ranked.min() if floor is None else floor
        scores[named] += ranked.max() - lowest + 1.0
    return scores


def best_positions(scores: np.ndarray, limit: int, *, matching_only: bool = False) -> np.ndarray:
    """The positions of the `limit` best scores, best first (ties by position); with
    `matching_only`, only of tools that match at all (a score above 0, as BM25F gives a tool that
    has a word of the request: the fusion's z-scores have no such zero)."""
    positions = np.flatnonzero(scores > 0) if matching_only else np.arange(len(scores))
    if limit <= 0 or not len(positions):
        return positions[:0]
    if len(positions) > limit:
        positions = positions[np.argpartition(-scores[positions], limit - 1)[:limit]]
    ranked: np.ndarray = positions[np.lexsort((positions, -scores[positions]))]
    return ranked


def best_hits(
    scores: np.ndarray, limit: int, *, weak: bool = False, matching_only: bool = False
) -> list[SearchHit]:
    """The `limit` best tools by `scores` as hits (`best_positions`), each `weak` or not."""
    positions = best_positions(scores, limit, matching_only=matching_only)
    return [SearchHit(int(position), float(scores[position]), weak) for position in positions]
