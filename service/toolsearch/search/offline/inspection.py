"""What a hybrid index makes of a request, for diagnosis beside serving: what each signal added to a
hit's score (`toolsearch search --explain`), and the catalog words a request's words are translated
into."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from toolsearch.search import SearchHit
from toolsearch.search.request import looked_up
from toolsearch.search.selection import best_hits

if TYPE_CHECKING:
    from toolsearch.search.hybrid import HybridIndex


def explain(index: HybridIndex, query: str, limit: int) -> list[tuple[SearchHit, dict[str, float]]]:
    """The best `limit` tools for `query`, each with what every signal added to its score: the
    learned ranking's features times their weights, or the fusion's three parts, and for a long
    request what its best sentence added (`best_sentence`)."""
    ranking = index.ranking(query)
    signals = ranking.evidence.signals
    hits = best_hits(ranking.scores, limit, weak=ranking.weak)
    positions = np.array([hit.position for hit in hits], dtype=np.int64)
    parts = index.scoring.contributions(signals, positions)
    named = set(signals.named.tolist())
    for hit, part in zip(hits, parts, strict=True):
        part["best_sentence"] = float(ranking.scores[hit.position] - ranking.whole[hit.position])
        part["named"] = float(hit.position in named)
    return list(zip(hits, parts, strict=True))


def translations(index: HybridIndex, query: str, language: str) -> list[str]:
    """The catalog's words for the words of `query` that no tool has (`search.request.looked_up`):
    what the dictionary of `language` gives for each, and for those it lacks, the nearest catalog
    word by the model, if near enough (`HybridIndex.guessed`)."""
    read, unread, _ = looked_up(
        query,
        language,
        index.lexical,
        index.query_vectors.embedder.pieces,
        index.dictionaries,
        guesses=index.translation_cosine is not None,
    )
    return read + index.guessed(unread)
