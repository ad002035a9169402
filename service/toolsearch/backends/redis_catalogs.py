"""Catalogs in Redis, stored so that equal tools cost one copy, with their leases and pins.

A catalog is a hash (`listed_at`, the version replicas compare, read alone on every request, and
`body`: format, toolset digest, upstream instructions, expiry) pointing to its toolset, the list of
its tools' digests, each tool stored once whoever lists it: callers who see the same tools point to
the same toolset. A lease is a key set NX with a TTL, renewed while its holder lists, deleted only by
its owner. A catalog's pins point to a pin set addressed by its SHA-256 (`base.pin_set`), so callers
first listed with the same tools share one copy; a caller's pointer never outlives the set it points
to. The keys are `redis_connection.Keys`'.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import secrets
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from functools import partial
from typing import Any, Final

import orjson

from toolsearch.backends.base import CatalogRecord, StoreUnavailable, catalog_digest, pin_set, pinned_after
from toolsearch.backends.redis_connection import (
    FETCH_CHUNK,
    PUT_CATALOG,
    RELEASE,
    RENEW,
    RETRY_SECONDS,
    SWAP_PINS,
    Connection,
    CorruptEntry,
)
from toolsearch.runtime import Supervisor
from toolsearch.tool import Tool, ToolInterner

FORMAT: Final = 1
"""Version of the stored layout; a record of another format is ignored (and relisted)."""
_DIGEST_BYTES: Final = 32
_PIN_ATTEMPTS: Final = 5
"""Compare-and-set rounds of one pinning before it gives up (replicas pinning one catalog at once)."""
PINS_TTL = 90 * 86_400.0
"""Seconds a catalog's pinned digests outlive its last listing: longer than catalogs, so that a tool
changed while its callers were away is still noticed."""
_PINS_TTL_MS: Final = int(PINS_TTL * 1000)
_PIN_SET_TTL_MS: Final = _PINS_TTL_MS + 86_400_000
"""A pin set is kept a day longer than the pointers set along with it: none outlives its pins."""
_ADDRESS: Final = re.compile(r"[0-9a-f]{64}")


class RedisCatalogStore:
    """`CatalogStore` on Redis: catalogs and tools shared by every replica."""

    def __init__(
        self,
        connection: Connection,
        interner: ToolInterner,
        *,
        ttl_ms: int,
        lease_ms: int,
        clock: Callable[[], float],
        supervisor: Supervisor,
    ) -> None:
        self._redis = connection
        self._supervisor = supervisor
        """Starts the renewals and late releases of leases, which run on their own."""
        self._interner = interner
        self._ttl_ms = ttl_ms
        self._lease_ms = lease_ms
        self._clock = clock
        client = connection.client
        self._put_catalog = client.register_script(PUT_CATALOG)
        self._release = client.register_script(RELEASE)
        self._renew = client.register_script(RENEW)
        self._swap_pins = client.register_script(SWAP_PINS)

    async def listed_at(self, key: str) -> float | None:
        catalog_key = self._redis.keys.catalog(key)
        try:
            raw = await self._redis.ask(lambda: self._redis.client.hget(catalog_key, "listed_at"))
            return None if raw is None else float(raw)
        except (CorruptEntry, ValueError):
            await self._redis.discard(catalog_key)
            return None

    async def get(self, key: str) -> CatalogRecord | None:
        catalog_key = self._redis.keys.catalog(key)
        discarded = [catalog_key]
        try:
            raw_listed_at, raw_body = await self._redis.ask(
                lambda: self._redis.client.hmget(catalog_key, ["listed_at", "body"])
            )
            if raw_listed_at is None and raw_body is None:
                return None
            listed_at, body = _catalog_fields(raw_listed_at, raw_body)
            if body["format"] != FORMAT:
                return None
            toolset_key = self._redis.keys.toolset(body["toolset"])
            discarded.append(toolset_key)
            raw_toolset = await self._redis.ask(lambda: self._redis.client.get(toolset_key))
            tools = await self._tools(_toolset_digests(raw_toolset, body["toolset"]))
        except CorruptEntry:
            await self._redis.discard(*discarded)
            return None
        return CatalogRecord(tools, body["instructions"], listed_at, body["expires_at"])

    async def put(self, key: str, record: CatalogRecord) -> None:
        ttl_ms = self._ttl_ms
        if record.expires_at is not None:
            ttl_ms = min(ttl_ms, int((record.expires_at - self._clock()) * 1000))
        if ttl_ms <= 0:
            return
        toolset = catalog_digest(record.tools)
        toolset_key = self._redis.keys.toolset(toolset)
        remaining_ms = await self._redis.ask(lambda: self._redis.client.pttl(toolset_key))
        if remaining_ms < self._ttl_ms // 2:
            # Written now, or renewed when half its life is gone: tools first, so that they outlive it.
            await self._put_tools(record.tools)
            packed = b"".join(bytes.fromhex(tool.digest) for tool in record.tools)
            await self._redis.ask(lambda: self._redis.client.set(toolset_key, packed, px=self._ttl_ms))
            remaining_ms = self._ttl_ms
        body = orjson.dumps(
            {
                "format": FORMAT,
                "toolset": toolset,
                "instructions": record.instructions,
                "expires_at": record.expires_at,
            }
        )
        catalog_key = self._redis.keys.catalog(key)
        try:
            await self._redis.ask(
                lambda: self._put_catalog(
                    keys=[catalog_key], args=[repr(record.listed_at), body, min(ttl_ms, remaining_ms)]
                )
            )
        except CorruptEntry:
            await self._redis.discard(catalog_key)

    @asynccontextmanager
    async def lease(self, key: str) -> AsyncIterator[bool]:
        lock_key = self._redis.keys.lock(key)
        owner = secrets.token_hex(16)
        try:
            held = await self._redis.ask(
                lambda: self._redis.client.set(lock_key, owner, nx=True, px=self._lease_ms)
            )
        except StoreUnavailable:
            # A command that timed out may still have run: a lease taken so would keep every other
            # replica waiting for a listing nobody makes until it expired.
            self._release_soon(lock_key, owner)
            raise
        if not held:
            if await self._redis.ask(lambda: self._redis.client.pttl(lock_key)) == -1:
                await self._redis.discard(lock_key)  # not a lease of ours: it would never expire
            yield False
            return
        released = asyncio.Event()
        self._supervisor.start(self._keep_lease(lock_key, owner, released), name="lease renewal")
        try:
            yield True
        finally:
            # Told to stop, not cancelled: redis-py on Python 3.11 can swallow a cancellation that
            # lands as a command completes, and a renewal that outlived it would hold the lease, and
            # this request waiting for it, forever. It stops by itself; its last renewal, if one is
            # on the way, finds the lease gone and changes nothing.
            released.set()
            try:
                await self._redis.ask(lambda: self._release(keys=[lock_key], args=[owner]))
            except (StoreUnavailable, CorruptEntry):
                self._release_soon(lock_key, owner)

    async def pin_digests(self, key: str, digests: Mapping[str, str], *, replace: bool) -> dict[str, str]:
        if not digests:
            return {}
        pins_key = self._redis.keys.pins(key)
        for _ in range(_PIN_ATTEMPTS):
            try:
                raw = await self._redis.ask(lambda: self._redis.client.get(pins_key))
            except CorruptEntry:  # a pins hash of an earlier version, or junk: pinned anew
                raw = b"?"
            address = raw.decode("ascii", "replace") if isinstance(raw, bytes) else ""
            if raw is not None and not _ADDRESS.fullmatch(address):
                await self._redis.discard(pins_key)
                address = ""
            pinned = await self._pin_set(address) if address else {}
            after = await self._put_pin_set(pinned_after(pinned, digests, replace=replace))
            swap = partial(self._swap_pins, keys=[pins_key], args=[address, after, _PINS_TTL_MS])
            if await self._redis.ask(swap):
                return {name: pinned[name] for name in digests if name in pinned}
        raise StoreUnavailable("pins kept changing under this replica")

    async def _tools(self, digests: Sequence[str]) -> tuple[Tool, ...]:
        # Tools interned in this process (listed, or read before) are not read again.
        known = {digest: self._interner.get(digest) for digest in digests}
        tools = {digest: tool for digest, tool in known.items() if tool is not None}
        missing = [digest for digest in known if digest not in tools]
        for start in range(0, len(missing), FETCH_CHUNK):
            chunk = missing[start : start + FETCH_CHUNK]
            keys = [self._redis.keys.tool(digest) for digest in chunk]
            values = await self._redis.ask(partial(self._redis.get_many, keys))
            unusable = []
            for digest, key, raw in zip(chunk, keys, values, strict=True):
                tool = _decode_tool(raw, self._interner)
                if tool is None or tool.digest != digest:
                    unusable.append(key)
                else:
                    tools[digest] = tool
            if unusable:  # the relisting that follows writes them again
                await self._redis.discard(*unusable)
                raise CorruptEntry
        return tuple(tools[digest] for digest in digests)

    async def _put_tools(self, tools: Sequence[Tool]) -> None:
        async def renew() -> list[Any]:
            async with self._redis.client.pipeline(transaction=False) as pipe:
                for tool in tools:
                    pipe.pexpire(self._redis.keys.tool(tool.digest), self._ttl_ms)
                return await pipe.execute()

        async def write(missing: list[Tool]) -> None:
            async with self._redis.client.pipeline(transaction=False) as pipe:
                for tool in missing:
                    pipe.set(
                        self._redis.keys.tool(tool.digest), orjson.dumps(tool.definition), px=self._ttl_ms
                    )
                await pipe.execute()

        renewed = await self._redis.ask(renew)
        missing = [tool for tool, exists in zip(tools, renewed, strict=True) if not exists]
        for start in range(0, len(missing), FETCH_CHUNK):
            await self._redis.ask(partial(write, missing[start : start + FETCH_CHUNK]))

    async def _pin_set(self, address: str) -> dict[str, str]:
        """The pins at `address`; none when they are gone or unusable (deleted: pinned anew)."""
        pin_set_key = self._redis.keys.pinset(address)
        raw = await self._redis.ask(lambda: self._redis.client.get(pin_set_key))
        pins = _decode_pins(raw, address)
        if pins is None:
            if raw is not None:
                await self._redis.discard(pin_set_key)
            return {}
        return pins

    async def _put_pin_set(self, pins: dict[str, str]) -> str:
        """Keep `pins` under their address (written if they are not there yet), longer than any pointer
        to them; their address."""
        address, encoded = pin_set(pins)
        pin_set_key = self._redis.keys.pinset(address)
        if not await self._redis.ask(lambda: self._redis.client.pexpire(pin_set_key, _PIN_SET_TTL_MS)):
            await self._redis.ask(lambda: self._redis.client.set(pin_set_key, encoded, px=_PIN_SET_TTL_MS))
        return address

    def _release_soon(self, lock_key: str, owner: str) -> None:
        """Release the lease `owner` may hold once Redis is due to be tried again."""

        async def release() -> None:
            await asyncio.sleep(RETRY_SECONDS)
            with suppress(StoreUnavailable, CorruptEntry):
                await self._redis.ask(lambda: self._release(keys=[lock_key], args=[owner]))

        self._supervisor.start(release(), name="lease release")

    async def _keep_lease(self, lock_key: str, owner: str, released: asyncio.Event) -> None:
        """Renew the lease until `released`; a crashed holder stops renewing and its lease expires."""
        while True:
            with suppress(TimeoutError):
                await asyncio.wait_for(released.wait(), self._lease_ms / 3000)
            if released.is_set():
                return
            with suppress(StoreUnavailable, CorruptEntry):
                if not await self._redis.ask(
                    lambda: self._renew(keys=[lock_key], args=[owner, self._lease_ms])
                ):
                    return


def _catalog_fields(raw_listed_at: Any, raw_body: Any) -> tuple[float, dict[str, Any]]:
    try:
        listed_at = float(raw_listed_at)
        body = orjson.loads(raw_body)
    except (TypeError, ValueError) as exc:
        raise CorruptEntry from exc
    if not (
        isinstance(body, dict)
        and isinstance(body.get("format"), int)
        and isinstance(body.get("toolset"), str)
        and isinstance(body.get("instructions"), str | None)
        and isinstance(body.get("expires_at"), int | float | None)
    ):
        raise CorruptEntry
    return listed_at, body


def _toolset_digests(raw: bytes | str | None, toolset: str) -> list[str]:
    if not isinstance(raw, bytes) or len(raw) % _DIGEST_BYTES:
        raise CorruptEntry
    digests = [raw[start : start + _DIGEST_BYTES].hex() for start in range(0, len(raw), _DIGEST_BYTES)]
    if hashlib.sha256("\n".join(digests).encode()).hexdigest() != toolset:
        raise CorruptEntry
    return digests


def _decode_pins(raw: bytes | str | None, address: str) -> dict[str, str] | None:
    if not isinstance(raw, bytes) or hashlib.sha256(raw).hexdigest() != address:
        return None
    pins = orjson.loads(raw)
    if not isinstance(pins, dict) or not all(isinstance(digest, str) for digest in pins.values()):
        return None
    return pins


def _decode_tool(raw: bytes | str | None, interner: ToolInterner) -> Tool | None:
    if raw is None:
        return None
    try:
        definition = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return interner.intern(definition) if isinstance(definition, dict) else None
