"""Where catalogs live between requests: an async interface, and the in-process default.

A `CatalogRecord` is what a listing produced: plain tool definitions (by content digest), the
upstream's instructions and when it was listed. It holds nothing process-bound, so a shared
store (Redis) can serialise it and every replica can read it back.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Protocol

from toolsearch.tool import Tool


@dataclass(frozen=True, slots=True)
class CatalogRecord:
    tools: tuple[Tool, ...]
    instructions: str | None
    listed_at: float
    """Wall-clock seconds (time.time()) when the upstream listed it; replicas compare it."""


class CatalogStore(Protocol):
    async def get(self, key: str) -> CatalogRecord | None:
        """The record stored under `key` (a hash of the caller's identity), if any."""
        ...

    async def put(self, key: str, record: CatalogRecord) -> None: ...

    async def aclose(self) -> None: ...


class MemoryCatalogStore:
    """This process's catalogs, least recently used dropped beyond `max_catalogs`."""

    def __init__(self, max_catalogs: int = 10_000) -> None:
        self._records: OrderedDict[str, CatalogRecord] = OrderedDict()
        self._max_catalogs = max_catalogs

    async def get(self, key: str) -> CatalogRecord | None:
        record = self._records.get(key)
        if record is not None:
            self._records.move_to_end(key)
        return record

    async def put(self, key: str, record: CatalogRecord) -> None:
        self._records[key] = record
        self._records.move_to_end(key)
        while len(self._records) > self._max_catalogs:
            self._records.popitem(last=False)

    async def aclose(self) -> None:
        self._records.clear()
