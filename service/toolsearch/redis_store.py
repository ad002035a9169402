"""Catalogs shared by replicas through Redis, stored so that equal tools cost one copy.

Layout under a prefix (default `toolsearch:`), every key with a TTL:

- `catalog:<key>`: a hash, `listed_at` (the version replicas compare, read alone on every request)
  and `body` (JSON: format, toolset digest, upstream instructions, expiry). `<key>` is the SHA-256
  of the caller's token or verified identity.
- `toolset:<digest>`: the catalog's tool digests, 32 raw bytes each, in upstream order. Callers who
  see the same tools point to the same toolset, so 1,000 of them cost one list, not 1,000.
- `tool:<digest>`: one tool definition (JSON), stored once whoever lists it.
- `vectors:<model>:<digest>`: one tool's embedding under one model, float32 little-endian.
- `lock:<key>`: the lease of the replica listing `<key>` now (SET NX PX, renewed while it lists,
  deleted only by its owner).
- `pins:<key>`: the address of the pins of `<key>` (`integrity`: tool name -> the digest first
  listed for it), kept `PINS_TTL` past the last listing.
- `pinset:<digest>`: pins as JSON, addressed by their SHA-256 (`store.pin_set`). Callers first
  listed with the same tools point to the same pin set, so 1,000 of them cost one copy of it; a
  caller's pointer never outlives the set it points to.

On a Redis Cluster the keys spread over the slots by their whole name: no hash tags. Tools and
vectors are shared by every caller who lists them, so no caller's keys belong together, and one
tag would put every tool on one node; a caller's catalog and lock are never used by one command.
The reads of many keys (tools, vectors) go as one MGET per slot, pipelined per node
(`mget_nonatomic`), and the writes as pipelines the cluster client splits per node; every other
command and script touches one key. A failover or a MOVED/ASK redirection is followed by the
cluster client within the same timeout, and past it is one more outage like any other.

What is read back is checked (shapes, digests); a corrupt entry is deleted and reported as absent,
so the caller lists again and rewrites it. Every Redis round trip has a short timeout; a failure
marks Redis down (logged once), and for a second after it the store answers `StoreUnavailable`
at once instead of waiting on a dead server. The next call after that tries Redis again.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from functools import partial
from typing import Any, Final, TypeVar
from urllib.parse import unquote, urlsplit

import numpy as np
import orjson
import redis.asyncio as redis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import Sentinel
from redis.backoff import NoBackoff
from redis.exceptions import RedisClusterException, RedisError, ResponseError

from toolsearch.store import CatalogRecord, StoreUnavailable, catalog_digest, pin_set, pinned_after
from toolsearch.tool import Tool, ToolInterner

logger = logging.getLogger(__name__)

T = TypeVar("T")

FORMAT: Final = 1
"""Version of the stored layout; a record of another format is ignored (and relisted)."""
_DIGEST_BYTES: Final = 32
_FETCH_CHUNK: Final = 500
_RETRY_SECONDS: Final = 1.0
"""After a failure, how long Redis is left alone before the next call tries it again."""
_CLIENT_FAILURES: Final = (
    RedisError,
    RedisClusterException,
    OSError,
    TimeoutError,
    RuntimeError,
    AttributeError,
)
"""What a failing Redis raises: redis-py's errors and the socket's; from its cluster client, also
"no node reachable" (not a RedisError) and the RuntimeError or AttributeError of a connection it
closed under a concurrent command (it closes them all to relearn the layout after a failover)."""

# KEYS[1] catalog; ARGV listed_at, body, ttl ms. Keeps the newer listing when replicas race.
_PUT_CATALOG = """
local stored = tonumber(redis.call('HGET', KEYS[1], 'listed_at'))
if stored and stored >= tonumber(ARGV[1]) then return 0 end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'listed_at', ARGV[1], 'body', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
"""
# KEYS[1] lock; ARGV owner. Only the owner deletes its lock (it may have expired and been retaken).
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
# KEYS[1] lock; ARGV owner, ttl ms.
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""


# KEYS[1] pins; ARGV the pin set read ('' for none), the one to point to, ttl ms. Compare and set:
# returns 0, changing nothing, when another replica moved the pointer since it was read.
_SWAP_PINS = """
if (redis.call('GET', KEYS[1]) or '') ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
"""
_PIN_ATTEMPTS: Final = 5
"""Compare-and-set rounds of one pinning before it gives up (replicas pinning one catalog at once)."""
PINS_TTL = 90 * 86_400.0
"""Seconds a catalog's pinned digests outlive its last listing: longer than catalogs, so that a tool
changed while its callers were away is still noticed."""
_PINS_TTL_MS: Final = int(PINS_TTL * 1000)
_PIN_SET_TTL_MS: Final = _PINS_TTL_MS + 86_400_000
"""A pin set is kept a day longer than the pointers set along with it: none outlives its pins."""
_ADDRESS: Final = re.compile(r"[0-9a-f]{64}")


class _Corrupt(Exception):
    """An entry that cannot be read back as what it should hold."""


def connect(url: str, *, timeout: float) -> redis.Redis | RedisCluster:
    """A client for `redis://`, `rediss://`, `unix://`, `redis+sentinel://` or `redis+cluster://` URLs
    (`rediss+` for TLS).

    Sentinel URLs: `redis+sentinel://[[user]:password@]host:port[,host:port...]/service[/db]`; the
    credentials are the Redis servers' (sentinels are asked without). Cluster URLs:
    `redis+cluster://[[user]:password@]host:port[,host:port...]`, any nodes of the cluster (the
    client discovers the others). One immediate retry at most (a pooled connection may predate a
    Redis restart, a cluster's layout a failover), within the caller's timeout: a failure means
    "serve without Redis for now", not "wait for it".
    """
    options: dict[str, Any] = {
        "socket_timeout": timeout,
        "socket_connect_timeout": timeout,
        "retry": Retry(NoBackoff(), 1),  # one reconnection: a pooled connection may predate a restart
    }
    parts = urlsplit(url)
    if parts.scheme not in ("redis+sentinel", "rediss+sentinel", "redis+cluster", "rediss+cluster"):
        return redis.Redis.from_url(url, **options)
    hosts = parts.netloc.rpartition("@")[2]
    username = unquote(parts.username) if parts.username else None
    password = unquote(parts.password) if parts.password else None
    ssl = parts.scheme.startswith("rediss")
    if parts.scheme.endswith("+cluster"):
        if not hosts or parts.path.strip("/") not in ("", "0"):
            raise ValueError(f"a cluster URL names its nodes, and no database but 0: {_redact(url)}")
        nodes = [ClusterNode(*_host_port(host, 6379)) for host in hosts.split(",")]
        return RedisCluster(startup_nodes=nodes, username=username, password=password, ssl=ssl, **options)
    service, _, db = parts.path.strip("/").partition("/")
    if not hosts or not service:
        raise ValueError(f"a Sentinel URL names its sentinels and service: {_redact(url)}")
    sentinels = [_host_port(host, 26379) for host in hosts.split(",")]
    sentinel = Sentinel(sentinels, sentinel_kwargs=dict(options), **options)
    master: redis.Redis = sentinel.master_for(
        service, username=username, password=password, ssl=ssl, db=int(db or 0), **options
    )
    return master


def _host_port(address: str, default_port: int) -> tuple[str, int]:
    parts = urlsplit(f"//{address}")
    if not parts.hostname:
        raise ValueError(f"not a host[:port] in a Redis URL: {address!r}")
    return parts.hostname, parts.port or default_port


def _redact(url: str) -> str:
    parts = urlsplit(url)
    return url.replace(parts.password, "***") if parts.password else url


class RedisCatalogStore:
    """`CatalogStore` on Redis: catalogs, tools and embeddings shared by every replica."""

    def __init__(
        self,
        client: redis.Redis | RedisCluster,
        interner: ToolInterner,
        *,
        prefix: str = "toolsearch:",
        ttl: float = 86_400.0,
        timeout: float = 1.0,
        lease_ttl: float = 10.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._redis = client
        self._interner = interner
        self._prefix = prefix
        self._ttl_ms = max(1, int(ttl * 1000))
        self._timeout = timeout
        self._lease_ms = max(1, int(lease_ttl * 1000))
        self._clock = clock
        self._put_catalog = client.register_script(_PUT_CATALOG)
        self._release = client.register_script(_RELEASE)
        self._renew = client.register_script(_RENEW)
        self._swap_pins = client.register_script(_SWAP_PINS)
        self._lease_tasks: set[asyncio.Task[None]] = set()
        """Renewals and late releases of leases, running on their own."""
        self._down_since: float | None = None
        self._retry_at = 0.0
        self.outages = 0
        """Times Redis went from answering to not answering (a counter for metrics)."""
        self.failures = 0
        """Redis operations that failed or timed out."""
        self.corrupt_entries = 0
        """Entries read back that were unusable, deleted to be rebuilt."""
        self.loop: asyncio.AbstractEventLoop | None = None
        """The event loop this store serves on (known from its first call); `RedisVectorCache` uses it."""

    @classmethod
    def from_url(
        cls, url: str, interner: ToolInterner, *, timeout: float = 1.0, **options: Any
    ) -> RedisCatalogStore:
        return cls(connect(url, timeout=timeout), interner, timeout=timeout, **options)

    # -- catalogs ----------------------------------------------------------------------------------

    async def listed_at(self, key: str) -> float | None:
        catalog_key = self._key("catalog", key)
        try:
            raw = await self._ask(lambda: self._redis.hget(catalog_key, "listed_at"))
            return None if raw is None else float(raw)
        except (_Corrupt, ValueError):
            await self._discard(catalog_key)
            return None

    async def get(self, key: str) -> CatalogRecord | None:
        catalog_key = self._key("catalog", key)
        discarded = [catalog_key]
        try:
            raw_listed_at, raw_body = await self._ask(
                lambda: self._redis.hmget(catalog_key, ["listed_at", "body"])
            )
            if raw_listed_at is None and raw_body is None:
                return None
            listed_at, body = _catalog_fields(raw_listed_at, raw_body)
            if body["format"] != FORMAT:
                return None
            toolset_key = self._key("toolset", body["toolset"])
            discarded.append(toolset_key)
            raw_toolset = await self._ask(lambda: self._redis.get(toolset_key))
            tools = await self._tools(_toolset_digests(raw_toolset, body["toolset"]))
        except _Corrupt:
            await self._discard(*discarded)
            return None
        return CatalogRecord(tools, body["instructions"], listed_at, body["expires_at"])

    async def put(self, key: str, record: CatalogRecord) -> None:
        ttl_ms = self._ttl_ms
        if record.expires_at is not None:
            ttl_ms = min(ttl_ms, int((record.expires_at - self._clock()) * 1000))
        if ttl_ms <= 0:
            return
        toolset = catalog_digest(record.tools)
        toolset_key = self._key("toolset", toolset)
        remaining_ms = await self._ask(lambda: self._redis.pttl(toolset_key))
        if remaining_ms < self._ttl_ms // 2:
            # Written now, or renewed when half its life is gone: tools first, so that they outlive it.
            await self._put_tools(record.tools)
            packed = b"".join(bytes.fromhex(tool.digest) for tool in record.tools)
            await self._ask(lambda: self._redis.set(toolset_key, packed, px=self._ttl_ms))
            remaining_ms = self._ttl_ms
        body = orjson.dumps(
            {
                "format": FORMAT,
                "toolset": toolset,
                "instructions": record.instructions,
                "expires_at": record.expires_at,
            }
        )
        catalog_key = self._key("catalog", key)
        try:
            await self._ask(
                lambda: self._put_catalog(
                    keys=[catalog_key], args=[repr(record.listed_at), body, min(ttl_ms, remaining_ms)]
                )
            )
        except _Corrupt:
            await self._discard(catalog_key)

    @asynccontextmanager
    async def lease(self, key: str) -> AsyncIterator[bool]:
        lock_key = self._key("lock", key)
        owner = secrets.token_hex(16)
        try:
            held = await self._ask(lambda: self._redis.set(lock_key, owner, nx=True, px=self._lease_ms))
        except StoreUnavailable:
            # A command that timed out may still have run: a lease taken so would keep every other
            # replica waiting for a listing nobody makes until it expired.
            self._release_soon(lock_key, owner)
            raise
        if not held:
            if await self._ask(lambda: self._redis.pttl(lock_key)) == -1:
                await self._discard(lock_key)  # not a lease of ours: it would never expire
            yield False
            return
        released = asyncio.Event()
        self._spawn(self._keep_lease(lock_key, owner, released))
        try:
            yield True
        finally:
            # Told to stop, not cancelled: redis-py on Python 3.11 can swallow a cancellation that
            # lands as a command completes, and a renewal that outlived it would hold the lease, and
            # this request waiting for it, forever. It stops by itself; its last renewal, if one is
            # on the way, finds the lease gone and changes nothing.
            released.set()
            try:
                await self._ask(lambda: self._release(keys=[lock_key], args=[owner]))
            except (StoreUnavailable, _Corrupt):
                self._release_soon(lock_key, owner)

    async def evaluate(self, script: str, kind: str, name: str, *args: Any) -> Any:
        """Run the Lua `script` on the one key `<prefix><kind>:<name>` (search outcomes keep their
        records so) within the store's timeout and outage handling: `StoreUnavailable` when Redis
        cannot be asked; a key of another type is deleted and answers None."""
        key = self._key(kind, name)
        try:
            return await self._ask(lambda: self._redis.eval(script, 1, key, *args))
        except _Corrupt:
            await self._discard(key)
            return None

    async def pin_digests(self, key: str, digests: Mapping[str, str], *, replace: bool) -> dict[str, str]:
        if not digests:
            return {}
        pins_key = self._key("pins", key)
        for _ in range(_PIN_ATTEMPTS):
            try:
                raw = await self._ask(lambda: self._redis.get(pins_key))
            except _Corrupt:  # a pins hash of an earlier version, or junk: pinned anew
                raw = b"?"
            address = raw.decode("ascii", "replace") if isinstance(raw, bytes) else ""
            if raw is not None and not _ADDRESS.fullmatch(address):
                await self._discard(pins_key)
                address = ""
            pinned = await self._pin_set(address) if address else {}
            after = await self._put_pin_set(pinned_after(pinned, digests, replace=replace))
            swap = partial(self._swap_pins, keys=[pins_key], args=[address, after, _PINS_TTL_MS])
            if await self._ask(swap):
                return {name: pinned[name] for name in digests if name in pinned}
        raise StoreUnavailable("pins kept changing under this replica")

    # -- embeddings --------------------------------------------------------------------------------

    async def get_vectors(self, model: str, digests: Sequence[str]) -> dict[str, np.ndarray]:
        keys = [self._key("vectors", f"{model}:{digest}") for digest in digests]
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(keys), _FETCH_CHUNK):
            chunk = keys[start : start + _FETCH_CHUNK]
            values = await self._ask(partial(self._get_many, chunk))
            for digest, key, raw in zip(digests[start:], chunk, values, strict=False):
                if raw is None:
                    continue
                if not isinstance(raw, bytes) or not raw or len(raw) % 4:
                    await self._discard(key)
                    continue
                found[digest] = np.frombuffer(raw, dtype="<f4")
        return found

    async def put_vectors(self, model: str, vectors: Mapping[str, np.ndarray]) -> None:
        async def write() -> None:
            async with self._redis.pipeline(transaction=False) as pipe:
                for digest, vector in vectors.items():
                    raw = np.ascontiguousarray(vector, dtype="<f4").tobytes()
                    pipe.set(self._key("vectors", f"{model}:{digest}"), raw, px=self._ttl_ms)
                await pipe.execute()

        await self._ask(write)

    # -- health ------------------------------------------------------------------------------------

    async def health(self) -> dict[str, Any]:
        """Tries Redis when it is down and due for a retry, so that `/readyz` notices its return."""
        if self._down_since is not None:
            with suppress(StoreUnavailable):
                await self._ask(self._redis.ping)
        return {
            "store": "redis",
            "status": "down" if self._down_since is not None else "up",
            "outages": self.outages,
            "failures": self.failures,
            "corrupt_entries": self.corrupt_entries,
        }

    async def aclose(self) -> None:
        await self._redis.aclose()

    # -- internals ---------------------------------------------------------------------------------

    def _key(self, kind: str, name: str) -> str:
        return f"{self._prefix}{kind}:{name}"

    def _get_many(self, keys: list[str]) -> Awaitable[list[bytes | str | None]]:
        """MGET, split per slot on a cluster (which refuses one MGET across slots)."""
        if isinstance(self._redis, RedisCluster):
            return self._redis.mget_nonatomic(keys)
        return self._redis.mget(keys)

    async def _ask(self, operation: Callable[[], Awaitable[T]]) -> T:
        """One Redis round trip within the timeout; a key of the wrong type raises `_Corrupt`."""
        self.loop = asyncio.get_running_loop()
        if self._down_since is not None and time.monotonic() < self._retry_at:
            raise StoreUnavailable("Redis is down")
        try:
            async with asyncio.timeout(self._timeout):
                result = await operation()
        except ResponseError as exc:
            if str(exc).startswith("WRONGTYPE"):
                self._up()
                raise _Corrupt from exc
            self._down(exc)
            raise StoreUnavailable(type(exc).__name__) from exc
        except _CLIENT_FAILURES as exc:
            self._down(exc)
            raise StoreUnavailable(type(exc).__name__) from exc
        self._up()
        return result

    def _down(self, exc: BaseException) -> None:
        self.failures += 1
        self._retry_at = time.monotonic() + _RETRY_SECONDS
        if self._down_since is None:
            self._down_since = time.monotonic()
            self.outages += 1
            logger.warning(
                "Redis unavailable (%s): catalogs come from this replica and the upstream until it returns",
                type(exc).__name__,
            )

    def _up(self) -> None:
        if self._down_since is not None:
            logger.info("Redis available again after %.1f s", time.monotonic() - self._down_since)
            self._down_since = None

    async def _discard(self, *keys: str) -> None:
        self.corrupt_entries += 1
        logger.warning("discarded a corrupt catalog store entry; it is rebuilt from the upstream")
        with suppress(StoreUnavailable):
            await self._ask(lambda: self._redis.delete(*keys))

    async def _tools(self, digests: Sequence[str]) -> tuple[Tool, ...]:
        # Tools interned in this process (listed, or read before) are not read again.
        known = {digest: self._interner.get(digest) for digest in digests}
        tools = {digest: tool for digest, tool in known.items() if tool is not None}
        missing = [digest for digest in known if digest not in tools]
        for start in range(0, len(missing), _FETCH_CHUNK):
            chunk = missing[start : start + _FETCH_CHUNK]
            keys = [self._key("tool", digest) for digest in chunk]
            values = await self._ask(partial(self._get_many, keys))
            unusable = []
            for digest, key, raw in zip(chunk, keys, values, strict=True):
                tool = _decode_tool(raw, self._interner)
                if tool is None or tool.digest != digest:
                    unusable.append(key)
                else:
                    tools[digest] = tool
            if unusable:  # the relisting that follows writes them again
                await self._discard(*unusable)
                raise _Corrupt
        return tuple(tools[digest] for digest in digests)

    async def _put_tools(self, tools: Sequence[Tool]) -> None:
        async def renew() -> list[Any]:
            async with self._redis.pipeline(transaction=False) as pipe:
                for tool in tools:
                    pipe.pexpire(self._key("tool", tool.digest), self._ttl_ms)
                return await pipe.execute()

        async def write(missing: list[Tool]) -> None:
            async with self._redis.pipeline(transaction=False) as pipe:
                for tool in missing:
                    pipe.set(self._key("tool", tool.digest), orjson.dumps(tool.definition), px=self._ttl_ms)
                await pipe.execute()

        renewed = await self._ask(renew)
        missing = [tool for tool, exists in zip(tools, renewed, strict=True) if not exists]
        for start in range(0, len(missing), _FETCH_CHUNK):
            await self._ask(partial(write, missing[start : start + _FETCH_CHUNK]))

    async def _pin_set(self, address: str) -> dict[str, str]:
        """The pins at `address`; none when they are gone or unusable (deleted: pinned anew)."""
        pin_set_key = self._key("pinset", address)
        raw = await self._ask(lambda: self._redis.get(pin_set_key))
        pins = _decode_pins(raw, address)
        if pins is None:
            if raw is not None:
                await self._discard(pin_set_key)
            return {}
        return pins

    async def _put_pin_set(self, pins: dict[str, str]) -> str:
        """Keep `pins` under their address (written if they are not there yet), longer than any pointer
        to them; their address."""
        address, encoded = pin_set(pins)
        pin_set_key = self._key("pinset", address)
        if not await self._ask(lambda: self._redis.pexpire(pin_set_key, _PIN_SET_TTL_MS)):
            await self._ask(lambda: self._redis.set(pin_set_key, encoded, px=_PIN_SET_TTL_MS))
        return address

    def _release_soon(self, lock_key: str, owner: str) -> None:
        """Release the lease `owner` may hold once Redis is due to be tried again."""

        async def release() -> None:
            await asyncio.sleep(_RETRY_SECONDS)
            with suppress(StoreUnavailable, _Corrupt):
                await self._ask(lambda: self._release(keys=[lock_key], args=[owner]))

        self._spawn(release())

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._lease_tasks.add(task)
        task.add_done_callback(self._lease_tasks.discard)

    async def _keep_lease(self, lock_key: str, owner: str, released: asyncio.Event) -> None:
        """Renew the lease until `released`; a crashed holder stops renewing and its lease expires."""
        while True:
            with suppress(TimeoutError):
                await asyncio.wait_for(released.wait(), self._lease_ms / 3000)
            if released.is_set():
                return
            with suppress(StoreUnavailable, _Corrupt):
                if not await self._ask(lambda: self._renew(keys=[lock_key], args=[owner, self._lease_ms])):
                    return


class RedisVectorCache:
    """The semantic index's `VectorCache` on Redis, so that replicas embed each tool once per model.

    Indexes are built in worker threads, and these methods are synchronous: they run the store's
    calls on the event loop the store serves on and wait for them. Redis unavailable, slow, or no
    loop yet all read as "not cached" (the vectors are then computed, as without Redis).
    """

    def __init__(self, store: RedisCatalogStore, timeout: float = 2.0) -> None:
        self._store = store
        self._timeout = timeout

    def get_many(self, model: str, digests: Sequence[str]) -> dict[str, np.ndarray]:
        return self._wait(self._store.get_vectors(model, digests), {})

    def put_many(self, model: str, vectors: Mapping[str, np.ndarray]) -> None:
        self._wait(self._store.put_vectors(model, vectors), None)

    def _wait(self, operation: Coroutine[Any, Any, T], fallback: T) -> T:
        loop = self._store.loop
        if loop is None or loop.is_closed() or _on_a_running_loop():
            operation.close()  # waiting here would block the loop it needs
            return fallback
        try:
            return asyncio.run_coroutine_threadsafe(operation, loop).result(self._timeout)
        except (StoreUnavailable, _Corrupt, TimeoutError):
            return fallback


def _on_a_running_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _catalog_fields(raw_listed_at: Any, raw_body: Any) -> tuple[float, dict[str, Any]]:
    try:
        listed_at = float(raw_listed_at)
        body = orjson.loads(raw_body)
    except (TypeError, ValueError) as exc:
        raise _Corrupt from exc
    if not (
        isinstance(body, dict)
        and isinstance(body.get("format"), int)
        and isinstance(body.get("toolset"), str)
        and isinstance(body.get("instructions"), str | None)
        and isinstance(body.get("expires_at"), int | float | None)
    ):
        raise _Corrupt
    return listed_at, body


def _toolset_digests(raw: bytes | str | None, toolset: str) -> list[str]:
    if not isinstance(raw, bytes) or len(raw) % _DIGEST_BYTES:
        raise _Corrupt
    digests = [raw[start : start + _DIGEST_BYTES].hex() for start in range(0, len(raw), _DIGEST_BYTES)]
    if hashlib.sha256("\n".join(digests).encode()).hexdigest() != toolset:
        raise _Corrupt
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
