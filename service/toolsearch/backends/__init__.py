"""Where the proxy keeps what outlives a request: one family of backends behind one set of Protocols.

`memory` keeps catalogs, tool vectors and search outcomes in this process; `redis` in a Redis every
replica shares (`redis_catalogs` its catalogs, `redis_connection` its keys, scripts and outage
breaker). `--vector-cache-dir` adds tool vectors on this machine's disk (`layers`). The Protocols and
records are `base`'s.
"""

from __future__ import annotations

from concurrent.futures import Executor

from toolsearch.backends.base import Backend
from toolsearch.backends.disk_vectors import DiskVectorCache
from toolsearch.backends.layers import DiskVectors, LayeredVectors
from toolsearch.backends.memory import MemoryBackend
from toolsearch.runtime import Supervisor
from toolsearch.settings import Settings
from toolsearch.tool import ToolInterner


def open_backend(
    settings: Settings, interner: ToolInterner, supervisor: Supervisor, executor: Executor
) -> Backend:
    """The backend the settings ask for: a Redis shared by the replicas with --redis-url (its lease
    renewals started through `supervisor`), else this process. With --vector-cache-dir, tool
    vectors are also kept on this machine's disk (read and written on `executor`): in front of
    Redis (a restart reads no network), behind the process's memory (an index build reads no disk)."""
    disk = None
    if settings.vector_cache_dir:
        cache = DiskVectorCache(settings.vector_cache_dir, max_bytes=settings.vector_cache_max_mb * 1_000_000)
        disk = DiskVectors(cache, executor)
    if not settings.redis_url:
        memory = MemoryBackend(max_catalogs=settings.max_cached_catalogs)
        if disk is not None:
            memory.vectors = LayeredVectors(memory.vectors, disk)
        return memory
    from toolsearch.backends.redis import RedisBackend

    shared = RedisBackend.from_url(
        settings.redis_url,
        interner,
        supervisor=supervisor,
        prefix=settings.redis_prefix,
        ttl=settings.redis_ttl,
        timeout=settings.redis_timeout,
    )
    if disk is not None:
        shared.vectors = LayeredVectors(disk, shared.vectors)
    return shared
