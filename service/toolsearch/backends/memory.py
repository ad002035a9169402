"""The in-process backend: nothing shared, nothing to wait for.

The catalog service in front of it keeps the catalogs this process serves, each holding the record
it was made from (`catalog.Catalog.record`); the store sees a record for as long as something holds
it, and so never keeps a catalog the service has dropped. Pins are the store's alone: the least
recently listed catalogs' beyond `max_catalogs` are forgotten. Tool vectors are kept in a bounded
LRU, outcome records for their window, at most `max_callers` of them, and what catalogs learned
from use (`MemoryLearning`) within its bounds.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
from cachetools import LRUCache, TLRUCache

from toolsearch.backends.base import OUTCOME_GRACE_SECONDS, CatalogRecord, pin_set, pinned_after
from toolsearch.search.learning import MAX_TOOLS, LearningPolicy, ToolAggregate, contribute
from toolsearch.search.vectors import MemoryVectorCache, VectorStore

_MAX_CALLERS: Final = 100_000


class MemoryCatalogStore:
    """`CatalogStore` in this process: no copy of its own of a record something else holds."""

    def __init__(self, max_catalogs: int = 10_000) -> None:
        self._records: weakref.WeakValueDictionary[str, CatalogRecord] = weakref.WeakValueDictionary()
        self._leased: set[str] = set()
        self._pins: LRUCache[str, _Pins] = LRUCache(max_catalogs)
        self._pin_sets: weakref.WeakValueDictionary[str, _Pins] = weakref.WeakValueDictionary()
        """Equal pins held once, by `pin_set` address, for as long as a catalog holds them."""

    def __len__(self) -> int:
        return len(self._records)

    async def get(self, key: str) -> CatalogRecord | None:
        return self._records.get(key)

    async def listed_at(self, key: str) -> float | None:
        record = self._records.get(key)
        return None if record is None else record.listed_at

    async def put(self, key: str, record: CatalogRecord) -> None:
        stored = self._records.get(key)
        if stored is None or stored.listed_at <= record.listed_at:
            self._records[key] = record

    @asynccontextmanager
    async def lease(self, key: str) -> AsyncIterator[bool]:
        if key in self._leased:
            yield False
            return
        self._leased.add(key)
        try:
            yield True
        finally:
            self._leased.discard(key)

    async def pin_digests(self, key: str, digests: Mapping[str, str], *, replace: bool) -> dict[str, str]:
        pins = self._pins.get(key) or _Pins()
        after = pinned_after(pins, digests, replace=replace)
        address, _ = pin_set(after)
        self._pins[key] = self._pin_sets.setdefault(address, _Pins(after))
        return {name: pins[name] for name in digests if name in pins}

    def clear(self) -> None:
        self._records.clear()


class _Pins(dict[str, str]):
    """One catalog's pins (tool name -> digest), never changed once made: equal ones are shared."""


@dataclass(slots=True)
class _Record:
    search: str | None
    ranks: dict[str, int]
    shown: set[str]
    expires_at: float


class MemoryOutcomes:
    """`OutcomeMemory` in this process: a record lives until its `expires_at`, and the least recently
    active callers' are dropped beyond `max_callers`."""

    def __init__(self, max_callers: int = _MAX_CALLERS, clock: Callable[[], float] = time.monotonic) -> None:
        self._records: TLRUCache[str, _Record] = TLRUCache(
            max_callers, ttu=lambda _caller, record, _now: record.expires_at, timer=clock
        )
        self._clock = clock

    async def begin(self, caller: str, search: str, ranks: Mapping[str, int], window: float) -> bool:
        record = self._records.get(caller)
        replaced = record is not None and record.search is not None
        shown = record.shown if record is not None else set()
        shown.update(ranks)
        expires_at = self._clock() + window + OUTCOME_GRACE_SECONDS
        self._records[caller] = _Record(search, dict(ranks), shown, expires_at)
        return replaced

    async def end(self, caller: str, name: str) -> tuple[dict[str, int] | None, bool]:
        record = self._records.get(caller)
        if record is None:
            return None, False
        ranks = record.ranks if record.search is not None else None
        record.search, record.ranks = None, {}
        return ranks, name in record.shown

    async def expire(self, caller: str, search: str) -> bool:
        record = self._records.get(caller)
        if record is None or record.search != search:
            return False
        record.search, record.ranks = None, {}
        return True


class MemoryVectors:
    """`VectorStore` in this process: a `MemoryVectorCache` (least recently used dropped past its bound)."""

    def __init__(self, cache: MemoryVectorCache | None = None) -> None:
        self.cache = cache if cache is not None else MemoryVectorCache()

    async def get_many(self, model: str, digests: Sequence[str]) -> dict[str, np.ndarray]:
        return self.cache.get_many(model, digests)

    async def put_many(self, model: str, vectors: Mapping[str, np.ndarray]) -> None:
        self.cache.put_many(model, vectors)


class MemoryLearning:
    """`LearningStore` in this process: at most `MAX_TOOLS` aggregates per catalog (the least
    recently taught dropped), the least recently taught catalogs' beyond `max_catalogs` forgotten."""

    def __init__(self, max_catalogs: int = 10_000, clock: Callable[[], float] = time.time) -> None:
        self._catalogs: LRUCache[str, LRUCache[str, ToolAggregate]] = LRUCache(max_catalogs)
        self._clock = clock

    async def aggregates(self, catalog: str) -> dict[str, ToolAggregate]:
        return dict(self._catalogs.get(catalog, {}))

    async def teach(
        self, catalog: str, tool: str, vector: np.ndarray, who: str, definition: str, policy: LearningPolicy
    ) -> bool:
        tools = self._catalogs.get(catalog)
        if tools is None:
            tools = self._catalogs[catalog] = LRUCache(MAX_TOOLS)
        taught = contribute(tools.get(tool), vector, who, definition, self._clock(), policy)
        if taught is not None:
            tools[tool] = taught
        return taught is not None

    async def forget(self, catalog: str) -> None:
        self._catalogs.pop(catalog, None)


class MemoryBackend:
    """`Backend` in this process."""

    def __init__(self, max_catalogs: int = 10_000) -> None:
        self.catalogs = MemoryCatalogStore(max_catalogs)
        self.vectors: VectorStore = MemoryVectors()
        self.outcomes = MemoryOutcomes()
        self.learning = MemoryLearning(max_catalogs)
        self.failures = 0

    async def health(self) -> dict[str, Any]:
        return {"store": "memory", "status": "up", "catalogs": len(self.catalogs)}

    async def aclose(self) -> None:
        self.catalogs.clear()
