"""Per-caller catalogs: what the upstream lists for a caller, cached, refreshed, and searchable.

A catalog holds the listed tools a caller may be shown (`listing`). A caller is known by its
identity key (`identity`: the SHA-256 of its `Authorization` header, or of its verified JWT
identity), never by the header itself. Catalogs are fresh for a TTL; a stale one keeps serving
while one background listing replaces it, and one listing per catalog runs at a time, in this
process and across replicas (`coherence`).

Each replica keeps the catalogs it served last (a bounded LRU) in front of the store. Callers with
the same tools share one `Toolset` (`toolsets`: the interned tools, their name lookup and their
search index); what each caller's catalog withholds is its own (`quarantine`).
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any

from cachetools import LRUCache

from toolsearch.backends.base import CatalogRecord, CatalogStore
from toolsearch.catalog.coherence import Background, CatalogCoherence
from toolsearch.catalog.listing import UpstreamListing
from toolsearch.catalog.quarantine import Quarantine, Withholding
from toolsearch.catalog.toolsets import IndexBuilder, Toolset, Toolsets
from toolsearch.identity import CallerIdentity, Identifier, TokenIdentifier
from toolsearch.integrity.flags import MAX_DEMOTED, flagged_last
from toolsearch.integrity.tool_guard import ToolGuard
from toolsearch.mcp.caller import CallerHeaders
from toolsearch.naming import split_qualified_name
from toolsearch.runtime import Supervisor
from toolsearch.search import SearchHit, SearchIndex
from toolsearch.search.products import RequestProducts, request_products
from toolsearch.telemetry import CATALOG_RESULT, Telemetry
from toolsearch.tool import Tool, ToolInterner
from toolsearch.upstream.client import UpstreamClient

TWIN_ROOM = 2
"""Hits asked for per entry of an answer: a twin group is one entry however many tools it holds."""


class Catalog:
    """One caller's tools, in upstream order, with the search index shared by equal catalogs."""

    __slots__ = ("_toolset", "record", "withholding")

    def __init__(
        self, toolset: Toolset, record: CatalogRecord, withholding: Withholding | None = None
    ) -> None:
        self._toolset = toolset
        self.record = record
        """What it was made from; holding it keeps it in an in-process store (`store`)."""
        self.withholding = withholding
        """What it keeps from its caller (`quarantine`); None: nothing."""

    @property
    def instructions(self) -> str | None:
        return self.record.instructions

    @property
    def listed_at(self) -> float:
        return self.record.listed_at

    @property
    def expires_at(self) -> float | None:
        return self.record.expires_at

    @property
    def tools(self) -> tuple[Tool, ...]:
        return self._toolset.tools

    @property
    def digest(self) -> str:
        return self._toolset.digest

    @property
    def index(self) -> SearchIndex:
        return self._toolset.index

    def __len__(self) -> int:
        return len(self._toolset.tools)

    def get(self, name: str) -> Tool | None:
        position = self._toolset.positions.get(name)
        return None if position is None else self._toolset.tools[position]

    @property
    def names(self) -> list[str]:
        return list(self._toolset.positions)

    @property
    def servers(self) -> tuple[tuple[str, int], ...]:
        """(server, tool count) by the `<server>_<tool>` names, most tools first."""
        return self._toolset.servers

    def hits(self, query: str, entries: int) -> list[SearchHit]:
        """The hits for `query` that an answer of `entries` distinct tools is made from, best first:
        `TWIN_ROOM` times as many, so that twins folded into one entry leave room for other tools;
        tools withheld from this caller left out and flagged ones after the others. The one place
        that decides how many hits a search asks its index for."""
        wanted = TWIN_ROOM * entries
        withheld = {self._toolset.positions[name] for name in self._withheld()}
        flagged = self._toolset.flagged_positions
        hits = self.index.search(query, wanted + len(withheld) + min(len(flagged), MAX_DEMOTED))
        return flagged_last([hit for hit in hits if hit.position not in withheld], flagged)[:wanted]

    def twins(self, name: str) -> tuple[str, ...]:
        """The names of tool `name`'s twin group, the leading one first; () when it has no twin."""
        position = self._toolset.positions.get(name)
        group = self._toolset.twins.get(position) if position is not None else None
        return tuple(self._toolset.tools[p].name for p in group) if group else ()

    def boilerplate(self, name: str) -> tuple[str, ...]:
        """The sentences most tools of tool `name`'s server share (`boilerplate`)."""
        return self._toolset.boilerplate.get(split_qualified_name(name)[0], ())

    def products(self, query: str) -> RequestProducts:
        """The servers whose product `query` names and the proper names in it that no tool mentions
        (`search.products`)."""
        return request_products(query, self._toolset.products)

    def suspicious(self, name: str) -> tuple[str, ...]:
        """Why tool `name` looks hostile (`integrity.REASONS`); () when it does not."""
        return self._toolset.flagged.get(name, ())

    def imitated(self, name: str) -> str | None:
        """The tool that tool `name` imitates (a look-alike), or None."""
        return self._toolset.imitated.get(name)

    def withheld(self, name: str) -> str | None:
        """Why tool `name` is kept from this caller (quarantined, or flagged with --hide-suspicious)."""
        tool = self.get(name)
        if tool is None or self.withholding is None:
            return None
        return self.withholding.reason(name, tool.digest, self.suspicious(name))

    def _withheld(self) -> list[str]:
        if self.withholding is None:
            return []
        return [name for name in self.withholding.candidates(self._toolset.flagged) if self.withheld(name)]


class CatalogService:
    """Hands every request its caller's catalog, listing the upstream only when it must."""

    def __init__(
        self,
        upstream: UpstreamClient,
        store: CatalogStore,
        index_builder: IndexBuilder,
        *,
        supervisor: Supervisor,
        work: Executor,
        ttl: float,
        max_materialized: int = 1024,
        max_tools: int = 10_000,
        identifier: Identifier | None = None,
        interner: ToolInterner | None = None,
        clock: Callable[[], float] = time.time,
        telemetry: Telemetry | None = None,
        guard: ToolGuard | None = None,
    ) -> None:
        """Background work (first listings shared, refreshes, write-backs) is started through
        `supervisor`, which stops it; flags and toolsets are computed on `work`."""
        self._telemetry = telemetry or Telemetry(use_environment=False)
        self._identifier = identifier or TokenIdentifier()
        self._ttl = ttl
        self._clock = clock
        toolsets = Toolsets(index_builder, supervisor, work, guard)
        self._listing = UpstreamListing(
            upstream,
            toolsets,
            max_tools=max_tools,
            interner=interner or ToolInterner(),
            clock=clock,
            telemetry=self._telemetry,
            guard=guard,
        )
        self._coherence = CatalogCoherence(store, self._listing, supervisor, ttl=ttl, clock=clock)
        self._served = ServedCatalogs(toolsets, Quarantine(guard), size=max_materialized, clock=clock)
        self._refreshes = Background(supervisor, "catalog refresh")

    @property
    def listings(self) -> int:
        """Upstream listings made by this process (a counter for metrics)."""
        return self._listing.count

    @property
    def interned_tools(self) -> int:
        return len(self._listing.interner)

    async def get(self, caller: CallerHeaders) -> Catalog:
        with self._telemetry.span("catalog lookup") as span:
            identity = await self._identifier.identify(caller.authorization)
            catalog = await self._current(identity.key)
            if catalog is None:
                result = "miss"
                span.set_attribute(CATALOG_RESULT, result)
                self._telemetry.catalog_lookups.add(1, {CATALOG_RESULT: result})
                return await self._served.made(identity.key, await self._coherence.first(identity, caller))
            result = "stale" if self._clock() - catalog.listed_at >= self._ttl else "hit"
            if result == "stale":
                self._refresh_in_background(identity, caller)
            span.set_attribute(CATALOG_RESULT, result)
            self._telemetry.catalog_lookups.add(1, {CATALOG_RESULT: result})
            return catalog

    async def tools_changed(self, caller: CallerHeaders) -> None:
        """The upstream said this caller's tools changed (`notifications/tools/list_changed`): list
        them again now, in the background, while the current catalog keeps serving."""
        identity = await self._identifier.identify(caller.authorization)
        self._refresh_in_background(identity, caller, relist=True)

    def health(self) -> dict[str, Any]:
        """This process's catalog counters, for `/readyz` (the backend reports its own state)."""
        return {"cached_catalogs": len(self._served), "listings": self.listings}

    async def aclose(self) -> None:
        """Close the identifier (its JWKS client); background work is the supervisor's to stop."""
        await self._identifier.aclose()

    async def _current(self, key: str) -> Catalog | None:
        """The newest catalog of `key` to be had without listing: this replica's, or the store's if newer."""
        local = self._served.get(key)
        record = await self._coherence.newer(key, local.record if local is not None else None)
        return local if record is None else await self._served.made(key, record)

    def _refresh_in_background(
        self, identity: CallerIdentity, caller: CallerHeaders, *, relist: bool = False
    ) -> None:
        """`_refresh` (or, when the upstream said the tools changed, `_relist`), once at a time per key."""
        if self._coherence.first_listing_running(identity.key):
            return
        work = self._relist if relist else self._refresh
        self._refreshes.start(identity.key, lambda: work(identity, caller))

    async def _refresh(self, identity: CallerIdentity, caller: CallerHeaders) -> None:
        record = await self._coherence.refreshed(identity, caller)
        if record is not None:
            await self._served.made(identity.key, record)

    async def _relist(self, identity: CallerIdentity, caller: CallerHeaders) -> None:
        await self._served.made(identity.key, await self._coherence.relisted(identity, caller))


class ServedCatalogs:
    """The catalogs this replica served last (a bounded LRU in front of the store), each made from a
    record with the toolset equal catalogs share and what it withholds from its caller."""

    def __init__(
        self, toolsets: Toolsets, quarantine: Quarantine, *, size: int, clock: Callable[[], float]
    ) -> None:
        self._toolsets = toolsets
        self._quarantine = quarantine
        self._clock = clock
        self._catalogs: LRUCache[str, Catalog] = LRUCache(size)

    def __len__(self) -> int:
        return len(self._catalogs)

    def get(self, key: str) -> Catalog | None:
        """This replica's catalog of `key`, unless it may no longer be served (its token expired)."""
        local = self._catalogs.get(key)
        if local is not None and local.expires_at is not None and self._clock() >= local.expires_at:
            del self._catalogs[key]
            return None
        return local

    async def made(self, key: str, record: CatalogRecord) -> Catalog:
        """The catalog of `key` made from `record`, unless this replica holds one as new or newer."""
        catalog = self._catalogs.get(key)
        if catalog is None or catalog.listed_at < record.listed_at:
            toolset = await self._toolsets.of(record.tools)
            last = functools.partial(self._withholding, key)
            withholding = await self._quarantine.withholding(key, record.tools, last)
            if record.tools is not toolset.tools:  # one tuple of tools per distinct catalog
                record = dataclasses.replace(record, tools=toolset.tools)
            catalog = Catalog(toolset, record, withholding)
            current = self._catalogs.get(key)  # another request may have put a newer one meanwhile
            if current is not None and current.listed_at > catalog.listed_at:
                catalog = current
            self._catalogs[key] = catalog
        return catalog

    def _withholding(self, key: str) -> Withholding | None:
        current = self._catalogs.get(key)
        return current.withholding if current is not None else None
