"""The shared backend: catalogs, tool vectors and search outcomes in a Redis every replica uses.

Catalogs, their leases and pins are `redis_catalogs`'; vectors and outcomes are here; the keys, the
scripts and the outage breaker are `redis_connection`'s.

On a Redis Cluster the keys spread over the slots by their whole name: no hash tags. Tools and
vectors are shared by every caller who lists them, so no caller's keys belong together, and one
tag would put every tool on one node; a caller's catalog and lock are never used by one command.
The reads of many keys (tools, vectors) go as one MGET per slot, pipelined per node
(`mget_nonatomic`), and the writes as pipelines the cluster client splits per node; every other
command and script touches one key. A failover or a MOVED/ASK redirection is followed by the
cluster client within the same timeout, and past it is one more outage like any other.

What is read back is checked (shapes, digests); a corrupt entry is deleted and reported as absent,
so the caller lists again and rewrites it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from functools import partial
from typing import Any

import numpy as np
import orjson
import redis.asyncio as redis
from redis.asyncio.cluster import RedisCluster

from toolsearch.backends.base import OUTCOME_GRACE_SECONDS, StoreUnavailable
from toolsearch.backends.memory import MemoryOutcomes
from toolsearch.backends.redis_catalogs import RedisCatalogStore
from toolsearch.backends.redis_connection import (
    BEGIN_OUTCOME,
    END_OUTCOME,
    EXPIRE_OUTCOME,
    FETCH_CHUNK,
    Connection,
    CorruptEntry,
    connect,
)
from toolsearch.backends.redis_learning import RedisLearning
from toolsearch.runtime import Supervisor
from toolsearch.search.vectors import VectorStore
from toolsearch.tool import ToolInterner


class RedisVectors:
    """`VectorStore` in Redis, so that replicas embed each tool once per model: float32 little-endian."""

    def __init__(self, connection: Connection, ttl_ms: int) -> None:
        self._redis = connection
        self._ttl_ms = ttl_ms

    async def get_many(self, model: str, digests: Sequence[str]) -> dict[str, np.ndarray]:
        keys = [self._redis.keys.vectors(model, digest) for digest in digests]
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(keys), FETCH_CHUNK):
            chunk = keys[start : start + FETCH_CHUNK]
            try:
                values = await self._redis.ask(partial(self._redis.get_many, chunk))
            except (StoreUnavailable, CorruptEntry):
                return found  # the rest is computed, as without Redis
            for digest, key, raw in zip(digests[start:], chunk, values, strict=False):
                if raw is None:
                    continue
                if not isinstance(raw, bytes) or not raw or len(raw) % 4:
                    await self._redis.discard(key)
                    continue
                found[digest] = np.frombuffer(raw, dtype="<f4")
        return found

    async def put_many(self, model: str, vectors: Mapping[str, np.ndarray]) -> None:
        async def write() -> None:
            async with self._redis.client.pipeline(transaction=False) as pipe:
                for digest, vector in vectors.items():
                    raw = np.ascontiguousarray(vector, dtype="<f4").tobytes()
                    pipe.set(self._redis.keys.vectors(model, digest), raw, px=self._ttl_ms)
                await pipe.execute()

        with suppress(StoreUnavailable, CorruptEntry):
            await self._redis.ask(write)


class RedisOutcomes:
    """`OutcomeMemory` in Redis; while Redis is unavailable, in this process."""

    def __init__(self, connection: Connection) -> None:
        self._redis = connection
        self._local = MemoryOutcomes()

    async def begin(self, caller: str, search: str, ranks: Mapping[str, int], window: float) -> bool:
        ttl_ms = int((window + OUTCOME_GRACE_SECONDS) * 1000)
        key = self._redis.keys.outcome(caller)
        try:
            replaced = await self._redis.evaluate(
                BEGIN_OUTCOME, key, search, orjson.dumps(ranks), ttl_ms, *ranks
            )
        except StoreUnavailable:
            return await self._local.begin(caller, search, ranks, window)
        return bool(replaced)

    async def end(self, caller: str, name: str) -> tuple[dict[str, int] | None, bool]:
        try:
            answer = await self._redis.evaluate(END_OUTCOME, self._redis.keys.outcome(caller), name)
        except StoreUnavailable:
            return await self._local.end(caller, name)
        if not answer:  # the entry was corrupt, and is gone
            return None, False
        raw, shown = answer
        try:
            ranks = orjson.loads(raw) if raw else None
        except orjson.JSONDecodeError:  # not written by us: judged as no pending search
            ranks = None
        return (ranks if isinstance(ranks, dict) else None), bool(shown)

    async def expire(self, caller: str, search: str) -> bool:
        try:
            return bool(await self._redis.evaluate(EXPIRE_OUTCOME, self._redis.keys.outcome(caller), search))
        except StoreUnavailable:
            return await self._local.expire(caller, search)


class RedisBackend:
    """`Backend` on Redis: catalogs, tools, embeddings and search outcomes shared by every replica."""

    def __init__(
        self,
        client: redis.Redis | RedisCluster,
        interner: ToolInterner,
        *,
        supervisor: Supervisor,
        prefix: str = "toolsearch:",
        ttl: float = 86_400.0,
        timeout: float = 1.0,
        lease_ttl: float = 10.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.connection = Connection(client, prefix=prefix, timeout=timeout)
        ttl_ms = max(1, int(ttl * 1000))
        self.catalogs = RedisCatalogStore(
            self.connection,
            interner,
            ttl_ms=ttl_ms,
            lease_ms=max(1, int(lease_ttl * 1000)),
            clock=clock,
            supervisor=supervisor,
        )
        self.vectors: VectorStore = RedisVectors(self.connection, ttl_ms)
        self.outcomes = RedisOutcomes(self.connection)
        self.learning = RedisLearning(self.connection, clock)

    @classmethod
    def from_url(
        cls, url: str, interner: ToolInterner, *, supervisor: Supervisor, timeout: float = 1.0, **options: Any
    ) -> RedisBackend:
        return cls(connect(url, timeout=timeout), interner, supervisor=supervisor, timeout=timeout, **options)

    @property
    def failures(self) -> int:
        return self.connection.failures

    async def health(self) -> dict[str, Any]:
        await self.connection.ping()
        return {
            "store": "redis",
            "status": "down" if self.connection.down else "up",
            "outages": self.connection.outages,
            "failures": self.connection.failures,
            "corrupt_entries": self.connection.corrupt_entries,
        }

    async def aclose(self) -> None:
        await self.connection.client.aclose()
