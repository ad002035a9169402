"""Where catalogs live between requests: an async interface, and the in-process default.

A `CatalogRecord` is what a listing produced: interned tools, the upstream's instructions, when it
was listed and until when it may be served. It holds nothing process-bound, so a shared store
(`redis_store`) can serialise it and every replica can read it back. `listed_at` is the record's
version: a replica compares it with its own copy to notice a newer listing made elsewhere.

A store also grants leases (the right to list one catalog, so that replicas do not all list it at
once) and keeps the digests pinned for each catalog's tools (`integrity`).
"""

from __future__ import annotations

import hashlib
import weakref
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import orjson
from cachetools import LRUCache

from toolsearch.tool import Tool


@dataclass(frozen=True, slots=True, weakref_slot=True)
class CatalogRecord:
    tools: tuple[Tool, ...]
    instructions: str | None
    listed_at: float
    """Wall-clock seconds (time.time()) when the upstream listed it; replicas compare it."""
    expires_at: float | None = None
    """Wall-clock seconds after which it must not be served (its token's `exp`); None: no bound."""

    def expired(self, now: float) -> bool:
        return self.expires_at is not None and now >= self.expires_at


def catalog_digest(tools: Sequence[Tool]) -> str:
    """SHA-256 of a catalog's tool digests in order: callers who see the same tools share it."""
    return hashlib.sha256("\n".join(tool.digest for tool in tools).encode()).hexdigest()


def pinned_after(pinned: Mapping[str, str], digests: Mapping[str, str], *, replace: bool) -> dict[str, str]:
    """A catalog's pins once a listing of `digests` (tool name -> digest) is pinned: each name not
    pinned yet gets its digest, and with `replace` every listed one (see `CatalogStore.pin_digests`)."""
    if replace:
        return {**pinned, **digests}
    return {**digests, **pinned}


def pin_set(pins: Mapping[str, str]) -> tuple[str, bytes]:
    """The content address (SHA-256) and canonical JSON of a catalog's pins: catalogs with equal pins,
    such as every caller first listed with the same tools, share one copy."""
    encoded = orjson.dumps(pins, option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(encoded).hexdigest(), encoded


class StoreUnavailable(Exception):
    """The store did not answer (in time, or at all): serve without it."""


class CatalogStore(Protocol):
    async def get(self, key: str) -> CatalogRecord | None:
        """The record stored under `key` (a hash of the caller's identity), if any.

        None also when it could not be read back (a corrupt entry is discarded); an expired record
        may be returned (the caller checks `expired`). Raises `StoreUnavailable` when the store
        cannot be asked.
        """
        ...

    async def listed_at(self, key: str) -> float | None:
        """When the record under `key` was listed: a cheap check of whether a copy is current."""
        ...

    async def put(self, key: str, record: CatalogRecord) -> None:
        """Store `record`, unless the store already holds a newer listing of `key`."""
        ...

    def lease(self, key: str) -> AbstractAsyncContextManager[bool]:
        """`async with store.lease(key) as held:` True while this process alone may list `key`,
        False when another holder lists it now. An abandoned lease frees itself."""
        ...

    async def pin_digests(self, key: str, digests: Mapping[str, str], *, replace: bool) -> dict[str, str]:
        """The digests pinned for catalog `key` before this call, by tool name (names never pinned left
        out); pins each name of `digests` not pinned yet, and with `replace` every one, to its digest.
        Atomic: replicas listing at once agree on the first pin."""
        ...

    async def health(self) -> dict[str, Any]:
        """What `/readyz` shows of the store: its kind, `status` ("up" or "down") and its counters."""
        ...

    async def aclose(self) -> None: ...


class MemoryCatalogStore:
    """This process's own store: nothing to share, so no copy of its own.

    The catalog service in front of it keeps the catalogs this process serves, each holding the
    record it was made from (`catalog.Catalog.record`); the store sees a record for as long as
    something holds it, and so never keeps a catalog the service has dropped. Pins are the store's
    alone: the least recently listed catalogs' beyond `max_catalogs` are forgotten.
    """

    def __init__(self, max_catalogs: int = 10_000) -> None:
        self._records: weakref.WeakValueDictionary[str, CatalogRecord] = weakref.WeakValueDictionary()
        self._leased: set[str] = set()
        self._pins: LRUCache[str, _Pins] = LRUCache(max_catalogs)
        self._pin_sets: weakref.WeakValueDictionary[str, _Pins] = weakref.WeakValueDictionary()
        """Equal pins held once, by `pin_set` address, for as long as a catalog holds them."""

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

    async def health(self) -> dict[str, Any]:
        return {"store": "memory", "status": "up", "catalogs": len(self._records)}

    async def aclose(self) -> None:
        self._records.clear()


class _Pins(dict[str, str]):
    """One catalog's pins (tool name -> digest), never changed once made: equal ones are shared."""
