"""Long requests: a request that tells a story around its ask is ranked by its sentences too.

Agents often pass on a user's whole message: background, the ask, thanks. Every ranker reads all of
it, and the story's words (a deadline, a team, a review on Friday) pull up the tools that mention
them: on the dev set's English requests with a few sentences of such context around each, recall@5
fell from 0.735 to 0.48 (docs/search-quality.md). So a request of at least `LONG_REQUEST_WORDS`
words and two or more sentences is also ranked sentence by sentence, and each tool scores its score
for the whole request plus its best score for any one sentence (`combined`): the ask, read alone,
brings its tools back up, while the whole request still counts what the sentences say together.
Shorter requests are ranked whole, at no extra cost.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

LONG_REQUEST_WORDS = 30
"""Requests of fewer words are ranked whole (as are every dev request and all but two training ones)."""
MIN_SENTENCE_WORDS = 3
"""A shorter piece ("Thanks!", "Okay, next task.") asks for nothing a tool does."""
MAX_SENTENCES = 6
"""At most this many sentences are ranked alone (the longest, each one search more)."""

# A sentence ends at . ! ? ; : (or their CJK forms) before a space, or at a line break.
_BOUNDARY = re.compile(r"(?<=[.!?;:。！？；：])\s+|\s*\n\s*")


def sentences(request: str) -> list[str]:
    """The sentences of a long `request` to rank alone, in their order; [] to rank it whole."""
    if len(request.split()) < LONG_REQUEST_WORDS:
        return []
    pieces = [piece.strip() for piece in _BOUNDARY.split(request)]
    pieces = [piece for piece in pieces if len(piece.split()) >= MIN_SENTENCE_WORDS]
    if len(pieces) < 2:
        return []
    if len(pieces) > MAX_SENTENCES:
        longest = sorted(range(len(pieces)), key=lambda number: -len(pieces[number].split()))
        pieces = [pieces[number] for number in sorted(longest[:MAX_SENTENCES])]
    return pieces


def combined(whole: np.ndarray, by_sentence: Sequence[np.ndarray]) -> np.ndarray:
    """Each tool's score for the whole request plus its best score for one sentence. A tool a
    ranking leaves out (-inf) counts as that ranking's lowest, so it still ranks by the others."""
    floored = np.stack([_floored(scores) for scores in (whole, *by_sentence)])
    result: np.ndarray = floored[0] + floored[1:].max(axis=0)
    return result


def _floored(scores: np.ndarray) -> np.ndarray:
    finite = np.isfinite(scores)
    if finite.all():
        return scores
    lowest = float(scores[finite].min()) if finite.any() else 0.0
    return np.where(finite, scores, lowest)
