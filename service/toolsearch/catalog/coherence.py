"""One listing per catalog at a time, in this process and across replicas, and every replica's
copies kept as new as the store's.

Concurrent first requests of a caller share one listing (single flight); replicas share one through
the store's lease: the one holding it lists, the others poll the store for its record (or, past
`_MAX_WAIT_SECONDS`, list themselves: the other may be stuck). A replica asks the store only which
version of a catalog it holds (`listed_at`): a newer one written by another replica is read, an
older or missing one is replaced by this replica's copy. When the store is unavailable a replica
serves its own copy or lists the upstream itself.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from contextlib import suppress
from typing import Any, Final

from toolsearch.backends.base import CatalogRecord, CatalogStore, StoreUnavailable
from toolsearch.catalog.listing import UpstreamListing
from toolsearch.identity import CallerIdentity
from toolsearch.mcp.caller import CallerHeaders
from toolsearch.runtime import SingleFlight, Supervisor

logger = logging.getLogger(__name__)

_POLL_SECONDS: Final = 0.05
"""How often a replica waiting for another one's first listing looks for it."""
_MAX_WAIT_SECONDS: Final = 30.0
"""How long it waits at most before listing itself (the other one may be stuck)."""


class Background:
    """Catalog work left to run (tasks of `supervisor`, named `name`), at most one per key: a
    failure is logged, and the catalog served before keeps serving."""

    def __init__(self, supervisor: Supervisor, name: str) -> None:
        self.running: dict[str, asyncio.Task[Any]] = {}
        self._supervisor = supervisor
        self._name = name

    def start(self, key: str, work: Callable[[], Coroutine[Any, Any, Any]]) -> None:
        if key in self.running:
            return
        # Awaited by nobody, but its failure is logged below, and an outage not at all.
        task = self.running[key] = self._supervisor.start(work(), name=self._name, awaited=True)

        def finished(task: asyncio.Task[Any]) -> None:
            self.running.pop(key, None)
            if task.cancelled() or isinstance(task.exception(), StoreUnavailable | None):
                return  # the store logs its own outages
            # The previous catalog keeps serving; the next request past the TTL tries again.
            logger.warning("background catalog work failed: %s", type(task.exception()).__name__)

        task.add_done_callback(finished)


class CatalogCoherence:
    """Listings made once across replicas, and this replica's copies checked against the store's."""

    def __init__(
        self,
        store: CatalogStore,
        listing: UpstreamListing,
        supervisor: Supervisor,
        *,
        ttl: float,
        clock: Callable[[], float],
    ) -> None:
        self._store = store
        self._listing = listing
        self._ttl = ttl
        self._clock = clock
        self._first_listings: SingleFlight[CatalogRecord] = SingleFlight(supervisor, "first listing")
        self._write_backs = Background(supervisor, "catalog write-back")

    def first_listing_running(self, key: str) -> bool:
        """Whether a first listing of `key` is under way in this process."""
        return key in self._first_listings.running

    async def newer(self, key: str, local: CatalogRecord | None) -> CatalogRecord | None:
        """The store's record of `key` when it is newer than this replica's `local` copy and still
        servable; a `local` copy newer than the store's is written back."""
        try:
            stored_at = await self._store.listed_at(key)
            if stored_at is not None and (local is None or stored_at > local.listed_at):
                record = await self._store.get(key)
                if record is not None and not record.expired(self._clock()):
                    return record
            elif local is not None and (stored_at is None or stored_at < local.listed_at):
                self._write_back(key, local)  # the store lost it (restart, eviction) or holds an older one
        except StoreUnavailable:
            pass
        return None

    async def first(self, identity: CallerIdentity, caller: CallerHeaders) -> CatalogRecord:
        """Single flight: concurrent requests of one caller share one upstream listing."""
        return await self._first_listings.run(identity.key, lambda: self._list_shared(identity, caller))

    async def refreshed(self, identity: CallerIdentity, caller: CallerHeaders) -> CatalogRecord | None:
        """A refresh of a stale catalog; None when another replica holds the lease (it is refreshing it)."""
        try:
            return await self._list_leased(identity, caller)
        except StoreUnavailable:
            return await self._listing.catalog(identity, caller)

    async def relisted(self, identity: CallerIdentity, caller: CallerHeaders) -> CatalogRecord:
        """A listing made now, whoever holds the lease (the upstream said the tools changed)."""
        record = await self._listing.catalog(identity, caller)
        with suppress(StoreUnavailable):
            await self._store.put(identity.key, record)
        return record

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
        return await self._listing.catalog(identity, caller)

    async def _list_leased(self, identity: CallerIdentity, caller: CallerHeaders) -> CatalogRecord | None:
        """List under the lease of `identity.key`, or None when another replica holds it."""
        async with self._store.lease(identity.key) as held:
            if not held:
                return None
            record = await self._stored_fresh(identity.key)
            if record is None:
                record = await self._listing.catalog(identity, caller)
                with suppress(StoreUnavailable):
                    await self._store.put(identity.key, record)
            return record

    def _write_back(self, key: str, record: CatalogRecord) -> None:
        self._write_backs.start(key, lambda: self._store.put(key, record))
