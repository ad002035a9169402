"""Per-caller catalogs: what the upstream lists for a caller, cached, refreshed, and searchable.

A caller is known only by the SHA-256 of its `Authorization` header (never the header itself).
Catalogs are fresh for a TTL; a stale one keeps serving while one background listing replaces it,
and concurrent first requests for one caller share a single upstream listing. Callers with the
same tools share `Tool` objects (interned by content) and the search index built over them.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from toolsearch.search import SearchIndex
from toolsearch.store import CatalogRecord, CatalogStore
from toolsearch.tool import Tool, ToolInterner
from toolsearch.upstream import CallerHeaders, UpstreamClient

logger = logging.getLogger(__name__)

IndexBuilder = Callable[[Sequence[Tool]], SearchIndex]


def caller_key(authorization: str | None) -> str:
    """The catalog key of a caller: a hash of its credentials, so the token itself is never stored."""
    return hashlib.sha256((authorization or "").encode()).hexdigest()


def catalog_digest(tools: Sequence[Tool]) -> str:
    return hashlib.sha256("\n".join(tool.digest for tool in tools).encode()).hexdigest()


class Catalog:
    """One caller's tools, in upstream order, with the search index shared by equal catalogs."""

    __slots__ = ("_by_name", "digest", "index", "instructions", "listed_at", "tools")

    def __init__(self, record: CatalogRecord, digest: str, index: SearchIndex) -> None:
        self.tools = record.tools
        self.instructions = record.instructions
        self.listed_at = record.listed_at
        self.digest = digest
        self.index = index
        self._by_name = {tool.name: position for position, tool in enumerate(record.tools)}

    def __len__(self) -> int:
        return len(self.tools)

    def get(self, name: str) -> Tool | None:
        position = self._by_name.get(name)
        return None if position is None else self.tools[position]

    @property
    def names(self) -> list[str]:
        return list(self._by_name)

    def search(self, query: str, limit: int) -> list[tuple[Tool, float]]:
        return [(self.tools[hit.position], hit.score) for hit in self.index.search(query, limit)]


class CatalogService:
    """Hands every request its caller's catalog, listing the upstream only when it must."""

    def __init__(
        self,
        upstream: UpstreamClient,
        store: CatalogStore,
        index_builder: IndexBuilder,
        *,
        ttl: float,
        max_materialized: int = 1024,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._upstream = upstream
        self._store = store
        self._build_index = index_builder
        self._ttl = ttl
        self._clock = clock
        self._interner = ToolInterner()
        self._listings: dict[str, asyncio.Task[CatalogRecord]] = {}
        self._background: set[asyncio.Task[Any]] = set()
        self._catalogs: OrderedDict[str, Catalog] = OrderedDict()
        self._max_materialized = max_materialized
        self._indexes: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()
        self._index_builds: dict[str, asyncio.Task[SearchIndex]] = {}

    @property
    def interned_tools(self) -> int:
        return len(self._interner)

    async def get(self, caller: CallerHeaders) -> Catalog:
        key = caller_key(caller.authorization)
        record = await self._store.get(key)
        if record is None:
            record = await self._list_once(key, caller)
        elif self._clock() - record.listed_at >= self._ttl:
            self._refresh_in_background(key, caller)
        return await self._materialize(key, record)

    async def aclose(self) -> None:
        for task in [*self._background, *self._listings.values()]:
            task.cancel()
        await asyncio.gather(*self._background, *self._listings.values(), return_exceptions=True)

    # -- listing -----------------------------------------------------------------------------------

    async def _list_once(self, key: str, caller: CallerHeaders) -> CatalogRecord:
        """Single flight: concurrent requests of one caller share one upstream listing."""
        task = self._listings.get(key)
        if task is None:
            task = asyncio.create_task(self._list(key, caller))
            self._listings[key] = task
            task.add_done_callback(lambda _: self._listings.pop(key, None))
        return await asyncio.shield(task)

    async def _list(self, key: str, caller: CallerHeaders) -> CatalogRecord:
        started = time.perf_counter()
        listing = await self._upstream.list_tools(caller, key)
        tools: list[Tool] = []
        seen: set[str] = set()
        for definition in listing.tools:
            tool = self._interner.intern(definition)
            if not tool.name or tool.name in seen:
                logger.warning("left out upstream tool with an empty or duplicate name")
                continue
            seen.add(tool.name)
            tools.append(tool)
        record = CatalogRecord(tools=tuple(tools), instructions=listing.instructions, listed_at=self._clock())
        await self._store.put(key, record)
        logger.info(
            "catalog listed",
            extra={"tools": len(tools), "duration_ms": round((time.perf_counter() - started) * 1000, 1)},
        )
        return record

    def _refresh_in_background(self, key: str, caller: CallerHeaders) -> None:
        if key in self._listings:
            return
        task = asyncio.create_task(self._list_once(key, caller))
        self._background.add(task)
        task.add_done_callback(self._refresh_done)

    def _refresh_done(self, task: asyncio.Task[Any]) -> None:
        self._background.discard(task)
        if not task.cancelled() and task.exception() is not None:
            # The previous catalog keeps serving; the next request past the TTL tries again.
            logger.warning("background catalog refresh failed: %s", type(task.exception()).__name__)

    # -- materialising -----------------------------------------------------------------------------

    async def _materialize(self, key: str, record: CatalogRecord) -> Catalog:
        catalog = self._catalogs.get(key)
        if (
            catalog is not None
            and catalog.listed_at == record.listed_at
            and len(catalog) == len(record.tools)
        ):
            self._catalogs.move_to_end(key)
            return catalog
        digest = catalog_digest(record.tools)
        catalog = Catalog(record, digest, await self._index(digest, record.tools))
        self._catalogs[key] = catalog
        self._catalogs.move_to_end(key)
        while len(self._catalogs) > self._max_materialized:
            self._catalogs.popitem(last=False)
        return catalog

    async def _index(self, digest: str, tools: Sequence[Tool]) -> SearchIndex:
        """One index per distinct catalog, built off the event loop so other callers keep being served."""
        index = self._indexes.get(digest)
        if index is not None:
            return index
        task = self._index_builds.get(digest)
        if task is None:
            task = asyncio.create_task(asyncio.to_thread(self._build_index, tools))
            self._index_builds[digest] = task
            task.add_done_callback(lambda _: self._index_builds.pop(digest, None))
        index = await asyncio.shield(task)
        self._indexes[digest] = index
        return index
