"""What callers do with search answers, measured without recording what they asked.

For each caller (by its catalog identity) the names of the tools its last `search_tools` answer
showed are kept for `window` seconds; the query never is. The caller's next call of an upstream tool
ends that search as *followed*: by a tool of the answer, at its rank (1 = best; with several queries,
its best rank in any of them), or by a tool the answer did not show. A new search before any call
ends it as *retried*; no call within the window, as *unfollowed*. A call of a tool that no search
showed the caller within the window of its last search is a call *without search*; a call of a name
the catalog lacks (a typo of one tool, or missing) is an *unknown tool* and ends nothing, since the
caller usually corrects it next.

The state is one small record per caller, kept by the backend (`backends`: `OutcomeMemory`): in
this process or, with Redis, in the shared store under `outcome:<identity>` (expiring shortly after
the window), so that a search answered by one replica
and the call that follows it through another are linked. The replica that answered a search ends it
as unfollowed when the window passes (a replica that dies takes that count with it). During a Redis
outage each replica keeps its own records.

Metrics carry counts and ranks only. The tools most often called without search, and those called
right after a search that did not show them, are counted by name in this process only, for `/stats`
and `toolsearch stats` (bounded, like everything else here).
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections import Counter, deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from toolsearch.backends.base import OutcomeMemory
from toolsearch.backends.memory import MemoryOutcomes
from toolsearch.identity import Identifier, TokenIdentifier
from toolsearch.mcp.caller import CallerHeaders
from toolsearch.runtime import Supervisor
from toolsearch.telemetry import OUTCOME, Telemetry

_MAX_NAMED: Final = 1_000
"""Most distinct tool names counted for `/stats`; calls of further tools count under `OTHER`."""
OTHER: Final = "(other tools)"
TOP: Final = 10

FOLLOWED: Final = "followed"
NOT_IN_RESULTS: Final = "not_in_results"
RETRIED: Final = "retried"
UNFOLLOWED: Final = "unfollowed"


class _NamedCounts:
    """Calls by tool name, at most `_MAX_NAMED` names (upstream names are unbounded)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def add(self, name: str) -> None:
        if name not in self.counts and len(self.counts) >= _MAX_NAMED:
            name = OTHER
        self.counts[name] += 1


@dataclass(slots=True)
class _Tally:
    searches: int = 0
    abstained: int = 0
    empty: int = 0
    ended: Counter[str] = field(default_factory=Counter)
    ranks: Counter[int] = field(default_factory=Counter)
    calls: int = 0
    without_search: _NamedCounts = field(default_factory=_NamedCounts)
    not_in_results: _NamedCounts = field(default_factory=_NamedCounts)
    unknown: Counter[str] = field(default_factory=Counter)


class SearchOutcomes:
    """Records what follows each search; `counts()` and `report()` are what `/stats` serves."""

    def __init__(
        self,
        memory: OutcomeMemory,
        identifier: Identifier,
        telemetry: Telemetry,
        *,
        supervisor: Supervisor,
        window: float = 300.0,
    ) -> None:
        """The sweeper that ends searches nothing followed runs as a task of `supervisor`."""
        self._memory = memory
        self._supervisor = supervisor
        self._identifier = identifier
        self._telemetry = telemetry
        self.window = window
        self._tally = _Tally()
        self._deadlines: deque[tuple[float, str, str]] = deque()  # in order: every search waits `window`
        self._sweeper: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()

    @classmethod
    def in_process(
        cls, telemetry: Telemetry, supervisor: Supervisor, *, window: float = 300.0
    ) -> SearchOutcomes:
        """Outcomes kept in this process, callers known by their token's hash."""
        return cls(MemoryOutcomes(), TokenIdentifier(), telemetry, supervisor=supervisor, window=window)

    async def searched(self, caller: CallerHeaders, results: Sequence[Mapping[str, Any]]) -> None:
        """A `search_tools` answer: each query's result, with its `tools` and `matched`. Abstained:
        every query was answered "no tool matches well"; empty: no query was answered with a tool."""
        ranks: dict[str, int] = {}
        for result in results:
            for rank, tool in enumerate(result["tools"], start=1):
                ranks[tool["name"]] = min(rank, ranks.get(tool["name"], rank))
        self._tally.searches += 1
        if not ranks:
            self._tally.empty += 1
            self._telemetry.search_empty.add(1)
        elif all(result.get("matched") is False for result in results):
            self._tally.abstained += 1
            self._telemetry.search_abstained.add(1)
        key = await self._key(caller)
        search = secrets.token_hex(8)
        if await self._memory.begin(key, search, ranks, self.window):
            self._end(RETRIED)
        self._deadlines.append((time.monotonic() + self.window, key, search))
        self._wake_sweeper()

    async def called(self, caller: CallerHeaders, name: str) -> int | None:
        """A call of `name`, a tool of the caller's catalog: its rank in the search it ends (0 when
        that search did not show it), None when it ends none (what `catalog.learning` learns from)."""
        self._tally.calls += 1
        ranks, shown = await self._memory.end(await self._key(caller), name)
        if ranks is not None:
            rank = ranks.get(name)
            outcome = NOT_IN_RESULTS if rank is None else FOLLOWED
            self._end(outcome)
            self._telemetry.search_followed.record(rank or 0, {OUTCOME: outcome})
            if rank is None:
                self._tally.not_in_results.add(name)
            else:
                self._tally.ranks[rank] += 1
            return rank or 0
        if not shown:
            self._tally.without_search.add(name)
            self._telemetry.call_without_search.add(1)
        return None

    def unknown_tool(self, *, typo: bool) -> None:
        """A call of a name the caller's catalog lacks: a typo of one of its tools, or missing."""
        reason = "typo" if typo else "missing"
        self._tally.unknown[reason] += 1
        self._telemetry.call_unknown_tool.add(1, {OUTCOME: reason})

    def counts(self) -> dict[str, Any]:
        """This process's counts since it started, in the form `merge_counts` adds up."""
        tally = self._tally
        return {
            "window_seconds": self.window,
            "searches": tally.searches,
            "abstained": tally.abstained,
            "empty": tally.empty,
            "ended": {kind: tally.ended[kind] for kind in (FOLLOWED, NOT_IN_RESULTS, RETRIED, UNFOLLOWED)},
            "followed_by_rank": {str(rank): count for rank, count in sorted(tally.ranks.items())},
            "calls": tally.calls,
            "unknown_tool": {reason: tally.unknown[reason] for reason in ("typo", "missing")},
            "called_without_search": dict(tally.without_search.counts),
            "called_not_in_results": dict(tally.not_in_results.counts),
        }

    def report(self) -> dict[str, Any]:
        return report(self.counts())

    def _end(self, kind: str) -> None:
        self._tally.ended[kind] += 1
        if kind == RETRIED:
            self._telemetry.search_retried.add(1)
        elif kind == UNFOLLOWED:
            self._telemetry.search_unfollowed.add(1)

    async def _key(self, caller: CallerHeaders) -> str:
        return (await self._identifier.identify(caller.authorization)).key

    def _wake_sweeper(self) -> None:
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = self._supervisor.start(self._sweep(), name="outcome sweeper")
        self._wake.set()

    async def _sweep(self) -> None:
        """End each search whose window has passed, if nothing else ended it."""
        while True:
            while not self._deadlines:
                self._wake.clear()
                await self._wake.wait()
            deadline, key, search = self._deadlines[0]
            await asyncio.sleep(max(0.0, deadline - time.monotonic()))
            self._deadlines.popleft()
            if await self._memory.expire(key, search):
                self._end(UNFOLLOWED)


def report(counts: Mapping[str, Any]) -> dict[str, Any]:
    """`counts` with the shares an operator reads: searches followed by a result, by rank, the
    abstention rate, and the tools most often called without search."""
    ended = sum(counts["ended"].values())
    kinds = counts["ended"]

    def share(part: int, whole: int) -> float | None:
        return round(part / whole, 4) if whole else None

    def top(named: Mapping[str, int]) -> list[dict[str, Any]]:
        return [{"name": name, "calls": calls} for name, calls in Counter(named).most_common(TOP)]

    return {
        "counts": dict(counts),
        "followed_by_a_result": share(kinds.get(FOLLOWED, 0), ended),
        "followed_by_rank": {rank: share(count, ended) for rank, count in counts["followed_by_rank"].items()},
        "followed_by_another_tool": share(kinds.get(NOT_IN_RESULTS, 0), ended),
        "retried": share(kinds.get(RETRIED, 0), ended),
        "unfollowed": share(kinds.get(UNFOLLOWED, 0), ended),
        "abstention_rate": share(counts["abstained"], counts["searches"]),
        "most_called_without_search": top(counts["called_without_search"]),
        "most_called_not_in_results": top(counts["called_not_in_results"]),
    }


def merge_counts(replicas: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The sum of several replicas' `counts()` (their windows should be equal; the largest is kept)."""
    merged: dict[str, Any] = {}
    for counts in replicas:
        for key, value in counts.items():
            if key == "window_seconds":
                merged[key] = max(value, merged.get(key, value))
            elif isinstance(value, Mapping):
                total = merged.setdefault(key, {})
                for name, count in value.items():
                    total[name] = total.get(name, 0) + count
            else:
                merged[key] = merged.get(key, 0) + value
    return merged
