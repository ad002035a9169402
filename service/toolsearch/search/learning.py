"""Search that learns from use: what callers end up calling teaches their catalog's ranking.

When a search is followed by a call of a tool (shown below the top, not shown at all, or after a
retry), the caller's request vector is a label: requests like this one lead to that tool. Each
tool of a catalog keeps one aggregate of such vectors (`ToolAggregate`):

- the decayed sum of its contributors' unit request vectors, and its decayed weight;
- the keyed hashes of the distinct callers who contributed (`contributor`): a caller counts once
  per tool however often it calls it, so one token cannot push a tool on its own;
- the digest of the tool's definition it was learned for: a changed definition drops it.

No request text is kept, and no single request vector once a second caller contributed: the
aggregate is a sum. It has no effect until `k` distinct callers contributed (`LearningPolicy.k`).

A request's learned evidence (`LearnedCatalog.bonus`) is, for each tool with an effective
aggregate, the request's cosine to the aggregate's direction above `floor`, scaled to at most
`weight` (in units of the dense cosine) and by how much weight the aggregate still has after
decay. It is added to the tool's dense similarity (`search.signals`), so a description's own
evidence still counts and what is learned is bounded. Flagged tools (`integrity`) gain nothing:
their aggregates never take effect.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final

import numpy as np

MAX_CONTRIBUTORS: Final = 64
"""Contributor hashes kept per tool (the newest): the gate needs `k` of them, not every caller."""
MAX_TOOLS: Final = 512
"""Aggregates kept per catalog (the most recently taught): what bounds a catalog's keys and bytes."""


@dataclass(frozen=True, slots=True)
class LearningPolicy:
    k: int = 3
    """Distinct callers a tool's aggregate needs before it has any effect."""
    half_life: float = 14 * 86_400.0
    """Seconds after which a contribution counts half."""
    weight: float = 0.06
    """The largest learned evidence, in units of the dense cosine."""
    floor: float = 0.85
    """Request-to-aggregate cosine at and below which a tool gains nothing."""
    saturation: float = 3.0
    """Decayed contributions at which an aggregate has its full weight."""

    def __post_init__(self) -> None:
        if self.k < 1:
            raise ValueError(f"learning k must be at least 1, not {self.k}")
        if not self.half_life > 0:
            raise ValueError(f"learning half-life must be positive, not {self.half_life}")
        if not 0 <= self.floor < 1:
            raise ValueError(f"learning floor must be in [0, 1), not {self.floor}")


@dataclass(frozen=True, slots=True)
class ToolAggregate:
    """What a catalog learned of one tool: see the module's docstring."""

    definition: str
    """The digest of the tool's definition it was learned for."""
    total: np.ndarray
    """The decayed sum of the contributors' unit request vectors (float32)."""
    mass: float
    """The decayed number of contributions."""
    contributors: tuple[str, ...] = field(default=())
    """Keyed hashes of the distinct callers who contributed, oldest first."""
    updated: float = 0.0
    """Wall-clock seconds of the last contribution."""

    def decayed(self, now: float, half_life: float) -> ToolAggregate:
        """This aggregate as it counts at `now`."""
        factor = 0.5 ** (max(0.0, now - self.updated) / half_life)
        return replace(
            self, total=(self.total * factor).astype(np.float32), mass=self.mass * factor, updated=now
        )


def contributor(catalog: str, caller: str) -> str:
    """A caller's contributor hash in one catalog: its identity key (itself a hash of the token)
    hashed with the catalog's digest, so hashes of one caller in two catalogs cannot be linked."""
    return hashlib.sha256(f"{catalog}\n{caller}".encode()).hexdigest()[:16]


def unit(vector: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(vector))
    return (vector / norm if norm > 0 else vector).astype(np.float32)


def contribute(
    aggregate: ToolAggregate | None,
    vector: np.ndarray,
    who: str,
    definition: str,
    now: float,
    policy: LearningPolicy,
) -> ToolAggregate | None:
    """`aggregate` once caller `who` (a `contributor` hash) was seen to want the tool for a
    request of `vector`; None when nothing changes (`who` already counted). An aggregate learned
    for another definition of the tool is dropped first."""
    if aggregate is not None and aggregate.definition != definition:
        aggregate = None
    if aggregate is not None and who in aggregate.contributors:
        return None
    if aggregate is None:
        return ToolAggregate(definition, unit(vector), 1.0, (who,), now)
    current = aggregate.decayed(now, policy.half_life)
    contributors = (*current.contributors, who)[-MAX_CONTRIBUTORS:]
    return replace(
        current, total=current.total + unit(vector), mass=current.mass + 1.0, contributors=contributors
    )


def strength(aggregate: ToolAggregate, now: float, policy: LearningPolicy) -> float:
    """How much of `policy.weight` the aggregate carries at `now`: 0 below `k` contributors."""
    if len(aggregate.contributors) < policy.k:
        return 0.0
    mass = aggregate.mass * 0.5 ** (max(0.0, now - aggregate.updated) / policy.half_life)
    return min(1.0, float(mass) / policy.saturation)


@dataclass(frozen=True, slots=True)
class LearnedCatalog:
    """A catalog's effective aggregates as ranking reads them: the positions of the tools that
    gain, their aggregates' directions and strengths. Immutable: searches read it from any thread."""

    positions: np.ndarray
    directions: np.ndarray
    strengths: np.ndarray
    policy: LearningPolicy

    @classmethod
    def of(
        cls,
        aggregates: Mapping[str, ToolAggregate],
        tools: Sequence[tuple[str, str]],
        flagged: Iterable[str],
        now: float,
        policy: LearningPolicy,
    ) -> LearnedCatalog | None:
        """The effective part of `aggregates` (by tool name) over a catalog's `tools` ((name,
        definition digest), in index order), none for a `flagged` tool, one whose definition
        changed, or one below `k` contributors. None when nothing is effective."""
        excluded = set(flagged)
        rows: list[tuple[int, np.ndarray, float]] = []
        for position, (name, definition) in enumerate(tools):
            aggregate = aggregates.get(name)
            if aggregate is None or name in excluded or aggregate.definition != definition:
                continue
            weight = strength(aggregate, now, policy)
            if weight > 0:
                rows.append((position, unit(aggregate.total), weight))
        if not rows:
            return None
        return cls(
            np.array([row[0] for row in rows], dtype=np.int64),
            np.stack([row[1] for row in rows]),
            np.array([row[2] for row in rows], dtype=np.float32),
            policy,
        )

    def __len__(self) -> int:
        return len(self.positions)

    def bonus(self, vector: np.ndarray, tools: int) -> np.ndarray:
        """Every tool's learned evidence for a request of `vector` (`tools` entries, in cosine
        units): at most `policy.weight`, zero for tools without an effective aggregate."""
        floor = self.policy.floor
        cosines = self.directions @ unit(vector)
        gain = np.clip((cosines - floor) / (1.0 - floor), 0.0, 1.0) * self.strengths * self.policy.weight
        result = np.zeros(tools, dtype=np.float32)
        result[self.positions] = gain
        return result


def bytes_of(aggregate: ToolAggregate) -> int:
    """Roughly what one aggregate takes in a store: its vector, its hashes and a few numbers."""
    return int(aggregate.total.nbytes) + 16 * len(aggregate.contributors) + 64 + len(aggregate.definition)
