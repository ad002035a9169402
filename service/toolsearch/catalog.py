"""Per-caller catalogs: what the upstream lists for a caller, cached, refreshed, and searchable.

A catalog holds the listed tools a caller may be shown (`visible_tools`: servable ones, at
most `--max-catalog-tools`, and none a 2026-07-28 client would have to leave out). A caller is
known by its identity key (`identity`: the SHA-256 of its `Authorization` header, or of its
verified JWT identity), never by the header itself. Catalogs are fresh for a TTL; a stale one
keeps serving while one background listing replaces it. One listing per catalog at a time, in this
process (concurrent first requests share it) and across replicas (the store's lease: the others
wait for a first listing, or keep serving the stale catalog during a refresh).

Each replica keeps the catalogs it served last (a bounded LRU) in front of the store, and asks the
store only which version it holds: a newer one written by another replica is read, an older or
missing one is replaced by this replica's copy. When the store is unavailable the replica serves
its own copy or lists the upstream itself. Callers with the same tools share one `Toolset` (the
interned tools, their name lookup and their search index).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
import weakref
from collections import Counter
from collections.abc import AsyncIterable, Awaitable, Callable, Sequence
from contextlib import aclosing, suppress
from typing import Any, Final

import orjson
from cachetools import LRUCache

from toolsearch.backends.base import CatalogRecord, CatalogStore, StoreUnavailable, catalog_digest
from toolsearch.caller import CallerHeaders
from toolsearch.identity import CallerIdentity, Identifier, TokenIdentifier
from toolsearch.integrity import CONFUSABLE_NAME, MAX_DEMOTED, Integrity, ToolGuard, flagged_last, integrity
from toolsearch.naming import split_qualified_name
from toolsearch.protocol import valid_header_annotations
from toolsearch.search import SearchHit, SearchIndex
from toolsearch.single_flight import SingleFlight
from toolsearch.telemetry import CATALOG_RESULT, OUTCOME, Telemetry, elapsed
from toolsearch.tool import Tool, ToolInterner
from toolsearch.twins import twin_groups
from toolsearch.untrusted import MAX_DEFINITION_DEPTH, MAX_NAME_CHARS, unservable
from toolsearch.upstream import UpstreamClient

logger = logging.getLogger(__name__)

IndexBuilder = Callable[[Sequence[Tool]], Awaitable[SearchIndex]]

_POLL_SECONDS: Final = 0.05
"""How often a replica waiting for another one's first listing looks for it."""
_MAX_WAIT_SECONDS: Final = 30.0
"""How long it waits at most before listing itself (the other one may be stuck)."""


class Toolset:
    """A distinct list of tools, shared by every caller who sees exactly these tools."""

    __slots__ = (
        "__weakref__",
        "_servers",
        "digest",
        "flagged",
        "flagged_positions",
        "imitated",
        "index",
        "positions",
        "tools",
        "twins",
    )

    def __init__(
        self, tools: tuple[Tool, ...], digest: str, index: SearchIndex, flags: Integrity | None = None
    ) -> None:
        self.tools = tools
        self.digest = digest
        self.index = index
        self.positions = {tool.name: position for position, tool in enumerate(tools)}
        flags = flags or integrity(tools)
        self.flagged = flags.reasons
        """Why each flagged tool looks hostile (`integrity.integrity`), by name."""
        self.imitated = flags.imitated
        """The tool each look-alike imitates, by the look-alike's name."""
        self.flagged_positions = frozenset(
            self.positions[name] for name, reasons in self.flagged.items() if set(reasons) - {CONFUSABLE_NAME}
        )
        """Where the flagged tools are: search ranks them after the others (`integrity.flagged_last`).
        A name confusable with another's is no reason alone: where neither tool can be told to be the
        imitator both are flagged, and demoting both would let anyone push a real tool down by
        publishing a look-alike of its name."""
        self.twins = twin_groups(tools, self.flagged)
        """Each twin's position -> its group's positions, the leading name first (`twins`)."""
        self._servers: tuple[tuple[str, int], ...] | None = None

    @property
    def servers(self) -> tuple[tuple[str, int], ...]:
        """(server, tool count) of the servers in these tools' names, most tools first, then by name."""
        if self._servers is None:
            counts = Counter(server for server, _ in map(split_qualified_name, self.positions) if server)
            self._servers = tuple(sorted(counts.items(), key=lambda item: (-item[1], item[0])))
        return self._servers


class Catalog:
    """One caller's tools, in upstream order, with the search index shared by equal catalogs."""

    __slots__ = ("_guard", "_quarantined", "_toolset", "record")

    def __init__(
        self,
        toolset: Toolset,
        record: CatalogRecord,
        *,
        guard: ToolGuard | None = None,
        quarantined: dict[str, str] | None = None,
    ) -> None:
        self._toolset = toolset
        self.record = record
        """What it was made from; holding it keeps it in an in-process store (`store`)."""
        self._guard = guard
        self._quarantined = quarantined or {}
        """Changed tools of this caller's catalog (name -> listed digest), withheld unless approved."""

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

    def hits(self, query: str, limit: int) -> list[SearchHit]:
        """The index's best `limit` hits for `query`, tools withheld from this caller left out and
        flagged ones after the others."""
        withheld = {self._toolset.positions[name] for name in self._withheld()}
        flagged = self._toolset.flagged_positions
        hits = self.index.search(query, limit + len(withheld) + min(len(flagged), MAX_DEMOTED))
        return flagged_last([hit for hit in hits if hit.position not in withheld], flagged)[:limit]

    def twins(self, name: str) -> tuple[str, ...]:
        """The names of tool `name`'s twin group, the leading one first; () when it has no twin."""
        position = self._toolset.positions.get(name)
        group = self._toolset.twins.get(position) if position is not None else None
        return tuple(self._toolset.tools[p].name for p in group) if group else ()

    def unknown_words(self, query: str) -> list[str]:
        """The words of `query` that no tool's text has (`LexicalIndex.unknown_words`): a product the
        catalog does not serve, another language's words, or a misspelling."""
        return self.index.unknown_words(query)

    def suspicious(self, name: str) -> tuple[str, ...]:
        """Why tool `name` looks hostile (`integrity.REASONS`); () when it does not."""
        return self._toolset.flagged.get(name, ())

    def imitated(self, name: str) -> str | None:
        """The tool that tool `name` imitates (a look-alike), or None."""
        return self._toolset.imitated.get(name)

    def withheld(self, name: str) -> str | None:
        """Why tool `name` is kept from this caller (quarantined, or flagged with --hide-suspicious)."""
        tool = self.get(name)
        if tool is None or self._guard is None:
            return None
        return self._guard.withheld_reason(name, tool.digest, self._quarantined, self.suspicious(name))

    def _withheld(self) -> list[str]:
        if self._guard is None:
            return []
        candidates = [*self._quarantined, *(self._toolset.flagged if self._guard.hide_suspicious else ())]
        return [name for name in dict.fromkeys(candidates) if self.withheld(name)]


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
        max_tools: int = 10_000,
        identifier: Identifier | None = None,
        interner: ToolInterner | None = None,
        clock: Callable[[], float] = time.time,
        telemetry: Telemetry | None = None,
        guard: ToolGuard | None = None,
    ) -> None:
        self._telemetry = telemetry or Telemetry(use_environment=False)
        self._guard = guard
        self._upstream = upstream
        self._store = store
        self._build_index = index_builder
        self._ttl = ttl
        self._clock = clock
        self._identifier = identifier or TokenIdentifier()
        self._interner = interner or ToolInterner()
        self._listings: SingleFlight[CatalogRecord] = SingleFlight()
        self._refreshing: set[str] = set()
        self._writing_back: set[str] = set()
        self._background: set[asyncio.Task[Any]] = set()
        self._catalogs: LRUCache[str, Catalog] = LRUCache(max_materialized)
        self._max_tools = max_tools
        self._toolsets: weakref.WeakValueDictionary[str, Toolset] = weakref.WeakValueDictionary()
        self._verdicts: weakref.WeakKeyDictionary[Tool, str] = weakref.WeakKeyDictionary()
        """Whether each listed tool may be shown (`visible_tools`), for as long as it is interned."""
        self._toolset_builds: SingleFlight[Toolset] = SingleFlight()
        self.listings = 0
        """Upstream listings made by this process (a counter for metrics)."""

    @property
    def interned_tools(self) -> int:
        return len(self._interner)

    async def get(self, caller: CallerHeaders) -> Catalog:
        with self._telemetry.span("catalog lookup") as span:
            identity = await self._identifier.identify(caller.authorization)
            catalog = await self._current(identity.key)
            if catalog is None:
                result = "miss"
                span.set_attribute(CATALOG_RESULT, result)
                self._telemetry.catalog_lookups.add(1, {CATALOG_RESULT: result})
                return await self._materialize(identity.key, await self._list_once(identity, caller))
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

    async def _relist(self, identity: CallerIdentity, caller: CallerHeaders) -> None:
        record = await self._list(identity, caller)
        with suppress(StoreUnavailable):
            await self._store.put(identity.key, record)
        await self._materialize(identity.key, record)

    def health(self) -> dict[str, Any]:
        """This process's catalog counters, for `/readyz`."""
        return {"cached_catalogs": len(self._catalogs), "listings": self.listings}

    async def aclose(self) -> None:
        tasks = [*self._background, *self._listings.running.values()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._identifier.aclose()

    # -- finding the current catalog ---------------------------------------------------------------

    async def _current(self, key: str) -> Catalog | None:
        """The newest catalog of `key` to be had without listing: this replica's, or the store's if newer."""
        local = self._catalogs.get(key)
        if local is not None and local.expires_at is not None and self._clock() >= local.expires_at:
            del self._catalogs[key]
            local = None
        try:
            stored_at = await self._store.listed_at(key)
            if stored_at is not None and (local is None or stored_at > local.listed_at):
                record = await self._store.get(key)
                if record is not None and not record.expired(self._clock()):
                    return await self._materialize(key, record)
            elif local is not None and (stored_at is None or stored_at < local.listed_at):
                self._write_back(key, local)  # the store lost it (restart, eviction) or holds an older one
        except StoreUnavailable:
            pass
        return local

    async def _stored_fresh(self, key: str) -> CatalogRecord | None:
        """The store's record of `key` if it is fresh: another replica listed it a moment ago."""
        try:
            record = await self._store.get(key)
        except StoreUnavailable:
            return None
        now = self._clock()
        if record is None or record.expired(now) or now - record.listed_at >= self._ttl:
            return None
        return record

    # -- listing -----------------------------------------------------------------------------------

    async def _list_once(self, identity: CallerIdentity, caller: CallerHeaders) -> CatalogRecord:
        """Single flight: concurrent requests of one caller share one upstream listing."""
        return await self._listings.run(identity.key, lambda: self._list_shared(identity, caller))

    async def _list_shared(self, identity: CallerIdentity, caller: CallerHeaders) -> CatalogRecord:
        """A first listing: made here under the store's lease, or awaited from the replica that holds it."""
        deadline = time.monotonic() + _MAX_WAIT_SECONDS
        try:
            while time.monotonic() < deadline:
                record = await self._list_leased(identity, caller)
                if record is not None:
                    return record
                await asyncio.sleep(_POLL_SECONDS)
                record = await self._stored_fresh(identity.key)
                if record is not None:
                    return record
        except StoreUnavailable:
            pass
        return await self._list(identity, caller)

    async def _list_leased(self, identity: CallerIdentity, caller: CallerHeaders) -> CatalogRecord | None:
        """List under the lease of `identity.key`, or None when another replica holds it."""
        async with self._store.lease(identity.key) as held:
            if not held:
                return None
            record = await self._stored_fresh(identity.key)
            if record is None:
                record = await self._list(identity, caller)
                with suppress(StoreUnavailable):
                    await self._store.put(identity.key, record)
            return record

    async def _list(self, identity: CallerIdentity, caller: CallerHeaders) -> CatalogRecord:
        started = time.perf_counter()
        self.listings += 1
        outcome = {OUTCOME: "error"}
        try:
            modern = await self._upstream.era(caller) == "modern"
            instructions = await self._upstream.instructions(caller)
            async with aclosing(self._upstream.tool_pages(caller)) as pages:
                listed = await visible_tools(
                    pages,
                    modern=modern,
                    max_tools=self._max_tools,
                    interner=self._interner,
                    verdicts=self._verdicts,
                )
            outcome[OUTCOME] = "ok"
        finally:
            self._telemetry.catalog_refreshes.add(1, outcome)
            self._telemetry.catalog_listing_duration.record(elapsed(started), outcome)
        tools: list[Tool] = []
        seen: set[str] = set()
        for tool in listed:
            if not tool.name or tool.name in seen:
                continue
            seen.add(tool.name)
            tools.append(tool)
        if len(tools) < len(listed):  # one line per listing, however many a hostile upstream repeats
            logger.warning(
                "left out %d upstream tools with an empty or duplicate name", len(listed) - len(tools)
            )
        shared = self._toolsets.get(catalog_digest(tools))  # callers with equal catalogs share one tuple
        if self._guard is not None:
            # A known catalog's flags are its toolset's; a new one's are found off the event loop.
            flagged = (
                shared.flagged if shared else (await asyncio.to_thread(self._guard.flags, tools)).reasons
            )
            with suppress(StoreUnavailable):  # pins are checked again at the next listing
                await self._guard.review(identity.key, tools, flagged)
        logger.info(
            "catalog listed",
            extra={"tools": len(tools), "duration_ms": round((time.perf_counter() - started) * 1000, 1)},
        )
        return CatalogRecord(
            shared.tools if shared else tuple(tools), instructions, self._clock(), identity.expires_at
        )

    def _refresh_in_background(
        self, identity: CallerIdentity, caller: CallerHeaders, *, relist: bool = False
    ) -> None:
        """`_refresh` (or, when the upstream said the tools changed, `_relist`), once at a time per key."""
        key = identity.key
        if key in self._listings.running or key in self._refreshing:
            return
        self._refreshing.add(key)
        work = self._relist(identity, caller) if relist else self._refresh(identity, caller)
        self._spawn(work, done=lambda: self._refreshing.discard(key))

    async def _refresh(self, identity: CallerIdentity, caller: CallerHeaders) -> None:
        """A refresh of a stale catalog; when another replica holds the lease, it is refreshing it."""
        try:
            record = await self._list_leased(identity, caller)
        except StoreUnavailable:
            record = await self._list(identity, caller)
        if record is not None:
            await self._materialize(identity.key, record)

    def _write_back(self, key: str, catalog: Catalog) -> None:
        if key in self._writing_back:
            return
        self._writing_back.add(key)
        self._spawn(self._store.put(key, catalog.record), done=lambda: self._writing_back.discard(key))

    def _spawn(self, work: Any, *, done: Callable[[], None]) -> None:
        task = asyncio.create_task(work)
        self._background.add(task)

        def finished(task: asyncio.Task[Any]) -> None:
            self._background.discard(task)
            done()
            if task.cancelled() or isinstance(task.exception(), StoreUnavailable | None):
                return  # the store logs its own outages
            # The previous catalog keeps serving; the next request past the TTL tries again.
            logger.warning("background catalog work failed: %s", type(task.exception()).__name__)

        task.add_done_callback(finished)

    # -- materialising -----------------------------------------------------------------------------

    async def _materialize(self, key: str, record: CatalogRecord) -> Catalog:
        catalog = self._catalogs.get(key)
        if catalog is None or catalog.listed_at < record.listed_at:
            toolset = await self._toolset(record.tools)
            quarantined = await self._quarantined(key, record.tools)
            if record.tools is not toolset.tools:  # one tuple of tools per distinct catalog
                record = dataclasses.replace(record, tools=toolset.tools)
            catalog = Catalog(toolset, record, guard=self._guard, quarantined=quarantined)
            current = self._catalogs.get(key)  # another request may have put a newer one meanwhile
            if current is not None and current.listed_at > catalog.listed_at:
                catalog = current
            self._catalogs[key] = catalog
        return catalog

    async def _quarantined(self, key: str, tools: Sequence[Tool]) -> dict[str, str]:
        if self._guard is None:
            return {}
        try:
            return await self._guard.quarantined(key, tools)
        except StoreUnavailable:
            # Unknown pins: this replica's last word on the caller stands, else nothing is known changed.
            current = self._catalogs.get(key)
            return current._quarantined if current is not None else {}

    async def _toolset(self, tools: tuple[Tool, ...]) -> Toolset:
        """One toolset (and index) per distinct catalog, built off the event loop so other callers keep
        being served."""
        digest = catalog_digest(tools)
        toolset = self._toolsets.get(digest)
        if toolset is not None:
            return toolset
        return await self._toolset_builds.run(digest, lambda: self._build_toolset(tools, digest))

    async def _build_toolset(self, tools: tuple[Tool, ...], digest: str) -> Toolset:
        # The index and the flags of a new catalog take a while: off the event loop.
        flags = self._guard.flags if self._guard is not None else integrity
        index = await self._build_index(tools)
        toolset = await asyncio.to_thread(lambda: Toolset(tools, digest, index, flags(tools)))
        self._toolsets[digest] = toolset
        return toolset


_SHOWN: Final = "shown"
_UNSERVABLE: Final = "unservable"
_BAD_HEADERS: Final = "bad-headers"
"""Servable, but with `x-mcp-header` annotations that break the spec's rules: shown to legacy eras only."""


async def visible_tools(
    pages: AsyncIterable[list[Any]],
    *,
    modern: bool,
    max_tools: int,
    interner: ToolInterner,
    verdicts: weakref.WeakKeyDictionary[Tool, str] | None = None,
) -> list[Tool]:
    """Which of the tools an upstream lists a caller can be shown, interned: the first `max_tools`
    that are servable (`untrusted.unservable`) and, from a 2026-07-28 upstream, whose `x-mcp-header`
    annotations keep the spec's rules (clients must leave out those that break them).

    A definition is judged once for as long as its tool lives in `verdicts`: every caller listed the
    same 1,500 tools costs their digests, not 1,500 walks through their schemas.
    """
    verdicts = weakref.WeakKeyDictionary() if verdicts is None else verdicts
    tools: list[Tool] = []
    left_out = 0
    bad_headers = []
    async for page in pages:
        for definition in page:
            tool, verdict = _judged(definition, interner, verdicts)
            if tool is None:
                left_out += 1
            elif verdict == _BAD_HEADERS and modern:
                bad_headers.append(tool.name)
            else:
                tools.append(tool)
        if len(tools) > max_tools:
            logger.warning(
                "upstream listed more than %d tools; using the first ones (--max-catalog-tools)", max_tools
            )
            del tools[max_tools:]
            break
    if left_out:
        logger.warning(
            "left out %d upstream tools: a name that is not 1 to %d characters without control "
            "characters, or a definition nested more than %d levels deep",
            left_out,
            MAX_NAME_CHARS,
            MAX_DEFINITION_DEPTH,
        )
    for name in bad_headers:
        logger.warning("left out upstream tool %r: invalid x-mcp-header annotation", name)
    return tools


def _judged(
    definition: Any, interner: ToolInterner, verdicts: weakref.WeakKeyDictionary[Tool, str]
) -> tuple[Tool | None, str]:
    """`definition` interned and its verdict (`_SHOWN` or `_BAD_HEADERS`); no tool when it is unservable."""
    if not isinstance(definition, dict):
        return None, _UNSERVABLE
    try:
        tool = interner.intern(definition)
    except orjson.JSONEncodeError:  # nested past what canonical JSON allows: far too deep anyway
        return None, _UNSERVABLE
    verdict = verdicts.get(tool)
    if verdict is None:
        if unservable(definition) is not None:
            verdict = _UNSERVABLE
        else:
            verdict = _SHOWN if valid_header_annotations(definition) else _BAD_HEADERS
        verdicts[tool] = verdict
    return (None if verdict == _UNSERVABLE else tool), verdict
