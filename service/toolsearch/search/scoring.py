"""Scoring: from a request's signals (`search.signals`) to every tool's final score.

Two members, one interface: the hand-set fusion (`Fusion`), and the learned re-ranker
(`LearnedRanking`, `search.ranking`) where a ranker was trained for the index's models. Either
way a tool the request names ranks above all others. Each also says what every part of a tool's
score came from (`contributions`, for `toolsearch search --explain`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from toolsearch.search.ranking import Ranker, ServerGroups
from toolsearch.search.selection import named_first
from toolsearch.search.signals import DENSE_WEIGHT, LEXICAL_WEIGHT, Signals, relative, standardised


class Scoring(Protocol):
    def scores(self, signals: Signals) -> np.ndarray:
        """Every tool's final score, the named tools above all others."""
        ...

    def contributions(self, signals: Signals, positions: np.ndarray) -> list[dict[str, float]]:
        """What each part of the score adds, for each tool at `positions`."""
        ...


@dataclass(frozen=True, slots=True)
class Fusion:
    """The hand-set fusion's ranking (`Signals.fusion`)."""

    def scores(self, signals: Signals) -> np.ndarray:
        return named_first(signals.fusion.copy(), signals.named)

    def contributions(self, signals: Signals, positions: np.ndarray) -> list[dict[str, float]]:
        """The fusion's three parts: lexical, the first model's, and the companions'."""
        lexical = LEXICAL_WEIGHT * relative(signals.lexical)
        dense = DENSE_WEIGHT * standardised(signals.dense)
        companions = signals.fusion - lexical - dense
        return [
            {"lexical": float(lexical[p]), "dense": float(dense[p]), "companions": float(companions[p])}
            for p in positions
        ]


@dataclass(frozen=True, slots=True)
class LearnedRanking:
    """A trained `Ranker` over one catalog: its tools' servers and one-word names."""

    ranker: Ranker
    groups: ServerGroups
    one_word_names: np.ndarray

    def scores(self, signals: Signals) -> np.ndarray:
        return self.ranker.scores(signals, self.groups, self.one_word_names)

    def contributions(self, signals: Signals, positions: np.ndarray) -> list[dict[str, float]]:
        """Each feature times its weight."""
        rows = self.ranker.contributions(signals, positions, self.groups, self.one_word_names)
        return [dict(zip(self.ranker.features, map(float, row), strict=True)) for row in rows]
