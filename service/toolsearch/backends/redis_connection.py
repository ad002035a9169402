"""The connection to Redis: its URLs, the outage breaker, and every key and script toolsearch uses.

Every key toolsearch writes is made by `Keys` and listed, with what it holds and how long it lives,
in docs/configuration.md ("Redis keys"); every Lua script is here, each on one key (`KEYS[1]`).

The outage breaker (`Connection.ask`): every round trip has a short timeout; a failure marks Redis
down (logged once), and for a second after it every call answers `StoreUnavailable` at once instead
of waiting on a dead server. The next call after that tries Redis again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from contextlib import suppress
from typing import Any, Final, TypeVar
from urllib.parse import unquote, urlsplit

import redis.asyncio as redis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import Sentinel
from redis.backoff import NoBackoff
from redis.exceptions import RedisClusterException, RedisError, ResponseError

from toolsearch.backends.base import StoreUnavailable

logger = logging.getLogger(__name__)

T = TypeVar("T")

FETCH_CHUNK: Final = 500
"""Keys per MGET or pipeline."""
RETRY_SECONDS: Final = 1.0
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

# -- scripts: KEYS[1] is the one key each touches ----------------------------------------------------

# catalog; ARGV listed_at, body, ttl ms. Keeps the newer listing when replicas race.
PUT_CATALOG = """
local stored = tonumber(redis.call('HGET', KEYS[1], 'listed_at'))
if stored and stored >= tonumber(ARGV[1]) then return 0 end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'listed_at', ARGV[1], 'body', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
"""
# lock; ARGV owner. Only the owner deletes its lock (it may have expired and been retaken).
RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
# lock; ARGV owner, ttl ms.
RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""
# pins; ARGV the pin set read ('' for none), the one to point to, ttl ms. Compare and set:
# returns 0, changing nothing, when another replica moved the pointer since it was read.
SWAP_PINS = """
if (redis.call('GET', KEYS[1]) or '') ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
"""
# outcome: one hash per caller, `search` (the pending search's id), `ranks` (its tools' ranks, JSON)
# and a `shown:<tool>` field per tool shown within the window.
BEGIN_OUTCOME = """
local replaced = redis.call('HEXISTS', KEYS[1], 'search')
redis.call('HSET', KEYS[1], 'search', ARGV[1], 'ranks', ARGV[2])
for i = 4, #ARGV do redis.call('HSET', KEYS[1], 'shown:' .. ARGV[i], 1) end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return replaced
"""
END_OUTCOME = """
local ranks = redis.call('HGET', KEYS[1], 'ranks')
redis.call('HDEL', KEYS[1], 'search', 'ranks')
return {ranks or false, redis.call('HEXISTS', KEYS[1], 'shown:' .. ARGV[1])}
"""
EXPIRE_OUTCOME = """
if redis.call('HGET', KEYS[1], 'search') ~= ARGV[1] then return 0 end
redis.call('HDEL', KEYS[1], 'search', 'ranks')
return 1
"""
# learning: one hash per catalog digest, a field per tool (`search.learning`'s aggregate, see
# `redis_learning`). Compare and set: ARGV field, the value read before ('' when none), the new
# value, the most fields, ttl ms. 1: written; 0: changed meanwhile; -1: the catalog is full.
TEACH = """
local stored = redis.call('HGET', KEYS[1], ARGV[1])
if (stored or '') ~= ARGV[2] then return 0 end
if not stored and redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[4]) then return -1 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1
"""


class Keys:
    """Every key toolsearch writes, under its prefix (default `toolsearch:`); see the table in
    docs/configuration.md. `caller` is the SHA-256 of a caller's token or verified identity."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    def catalog(self, caller: str) -> str:
        return f"{self.prefix}catalog:{caller}"

    def toolset(self, digest: str) -> str:
        return f"{self.prefix}toolset:{digest}"

    def tool(self, digest: str) -> str:
        return f"{self.prefix}tool:{digest}"

    def vectors(self, model: str, digest: str) -> str:
        return f"{self.prefix}vectors:{model}:{digest}"

    def lock(self, caller: str) -> str:
        return f"{self.prefix}lock:{caller}"

    def pins(self, caller: str) -> str:
        return f"{self.prefix}pins:{caller}"

    def pinset(self, address: str) -> str:
        return f"{self.prefix}pinset:{address}"

    def outcome(self, caller: str) -> str:
        return f"{self.prefix}outcome:{caller}"

    def learning(self, catalog: str) -> str:
        return f"{self.prefix}learning:{catalog}"


class CorruptEntry(Exception):
    """An entry that cannot be read back as what it should hold."""


class Connection:
    """One Redis client behind the outage breaker, with the counters metrics and `/readyz` show."""

    def __init__(self, client: redis.Redis | RedisCluster, *, prefix: str, timeout: float) -> None:
        self.client = client
        self.keys = Keys(prefix)
        self._timeout = timeout
        self._down_since: float | None = None
        self._retry_at = 0.0
        self.outages = 0
        """Times Redis went from answering to not answering."""
        self.failures = 0
        """Operations that failed or timed out."""
        self.corrupt_entries = 0
        """Entries read back that were unusable, deleted to be rebuilt."""

    @property
    def down(self) -> bool:
        return self._down_since is not None

    async def ask(self, operation: Callable[[], Awaitable[T]]) -> T:
        """One Redis round trip within the timeout; a key of the wrong type raises `CorruptEntry`."""
        if self._down_since is not None and time.monotonic() < self._retry_at:
            raise StoreUnavailable("Redis is down")
        try:
            async with asyncio.timeout(self._timeout):
                result = await operation()
        except ResponseError as exc:
            if str(exc).startswith("WRONGTYPE"):
                self._up()
                raise CorruptEntry from exc
            self._down(exc)
            raise StoreUnavailable(type(exc).__name__) from exc
        except _CLIENT_FAILURES as exc:
            self._down(exc)
            raise StoreUnavailable(type(exc).__name__) from exc
        self._up()
        return result

    async def evaluate(self, script: str, key: str, *args: Any) -> Any:
        """Run the Lua `script` on `key`: `StoreUnavailable` when Redis cannot be asked; a key of
        another type is deleted and answers None."""
        try:
            return await self.ask(lambda: self.client.eval(script, 1, key, *args))
        except CorruptEntry:
            await self.discard(key)
            return None

    def get_many(self, keys: list[str]) -> Awaitable[list[bytes | str | None]]:
        """MGET, split per slot on a cluster (which refuses one MGET across slots)."""
        if isinstance(self.client, RedisCluster):
            return self.client.mget_nonatomic(keys)
        return self.client.mget(keys)

    async def discard(self, *keys: str) -> None:
        self.corrupt_entries += 1
        logger.warning("discarded a corrupt Redis entry; it is rebuilt")
        with suppress(StoreUnavailable):
            await self.ask(lambda: self.client.delete(*keys))

    async def ping(self) -> None:
        """Try Redis when it is down and due for a retry, so that `/readyz` notices its return."""
        if self._down_since is not None:
            with suppress(StoreUnavailable):
                await self.ask(self.client.ping)

    def _down(self, exc: BaseException) -> None:
        self.failures += 1
        self._retry_at = time.monotonic() + RETRY_SECONDS
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
