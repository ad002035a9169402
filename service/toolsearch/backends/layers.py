"""Tool vectors on this machine's disk, in front of a backend's (`--vector-cache-dir`).

The disk keeps them across restarts: in front of Redis, a restart reads no network; in front of the
process's memory, the memory keeps an index build from reading the disk. Misses of the front layer
are read from the back one and kept in front; new vectors go into both.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor

import numpy as np

from toolsearch.backends.disk_vectors import DiskVectorCache
from toolsearch.search.vectors import VectorStore


class DiskVectors:
    """`VectorStore` over a `DiskVectorCache`, its file reads and writes run on `executor`."""

    def __init__(self, cache: DiskVectorCache, executor: Executor) -> None:
        self.cache = cache
        self._executor = executor

    async def get_many(self, model: str, digests: Sequence[str]) -> dict[str, np.ndarray]:
        read = functools.partial(self.cache.get_many, model, digests)
        return await asyncio.get_running_loop().run_in_executor(self._executor, read)

    async def put_many(self, model: str, vectors: Mapping[str, np.ndarray]) -> None:
        write = functools.partial(self.cache.put_many, model, vectors)
        await asyncio.get_running_loop().run_in_executor(self._executor, write)


class LayeredVectors:
    """A fast `VectorStore` in front of a slower one."""

    def __init__(self, front: VectorStore, back: VectorStore) -> None:
        self.front = front
        self.back = back

    async def get_many(self, model: str, digests: Sequence[str]) -> dict[str, np.ndarray]:
        found = await self.front.get_many(model, digests)
        missing = [digest for digest in digests if digest not in found]
        if missing:
            behind = await self.back.get_many(model, missing)
            if behind:
                await self.front.put_many(model, behind)
                found.update(behind)
        return found

    async def put_many(self, model: str, vectors: Mapping[str, np.ndarray]) -> None:
        await self.front.put_many(model, vectors)
        await self.back.put_many(model, vectors)
