"""Where tool vectors are kept between index builds: per (model, tool digest), shared by every
catalog that contains the tool.

A `VectorCache` is what an index build reads and fills on its own thread (eval, training, the
benchmarks). A `VectorStore` is what a proxy's backend serves (`toolsearch.backends`): asked from
the event loop before a catalog is embedded and told the new vectors after, so that an index
build never waits on the network. Search defines both; the backends implement them.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Protocol

import numpy as np
from cachetools import LRUCache


class VectorCache(Protocol):
    def get_many(self, model: str, digests: Sequence[str]) -> dict[str, np.ndarray]:
        """The vectors held for these tool digests (absent ones left out)."""
        ...

    def put_many(self, model: str, vectors: Mapping[str, np.ndarray]) -> None: ...


class VectorStore(Protocol):
    """Tool vectors asked for and written from async code. An outage of the store reads as "not
    cached" and drops the write: the vectors are then computed, as without it."""

    async def get_many(self, model: str, digests: Sequence[str]) -> dict[str, np.ndarray]: ...

    async def put_many(self, model: str, vectors: Mapping[str, np.ndarray]) -> None: ...


class MemoryVectorCache:
    """Tool vectors in this process, least recently used dropped past `max_bytes` of them (entries
    differ in size: a vector of a model's dimensions, or a whole catalog's neighbourhoods,
    `search.isolation`); an entry larger than the bound is not kept."""

    def __init__(self, max_bytes: int = 300_000_000) -> None:
        """The default holds 100,000 vectors of 768 dimensions."""
        self._vectors: LRUCache[tuple[str, str], np.ndarray] = LRUCache(max_bytes, getsizeof=_bytes)
        self._max_bytes = max_bytes
        self._lock = threading.Lock()  # index builds run in worker threads

    def __len__(self) -> int:
        return len(self._vectors)

    def get_many(self, model: str, digests: Sequence[str]) -> dict[str, np.ndarray]:
        with self._lock:
            found = {digest: self._vectors.get((model, digest)) for digest in digests}
        return {digest: vector for digest, vector in found.items() if vector is not None}

    def put_many(self, model: str, vectors: Mapping[str, np.ndarray]) -> None:
        kept = (
            ((model, digest), vector)
            for digest, vector in vectors.items()
            if vector.nbytes <= self._max_bytes
        )
        with self._lock:
            self._vectors.update(kept)


def _bytes(vector: np.ndarray) -> int:
    return int(vector.nbytes)
