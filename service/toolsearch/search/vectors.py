"""Where tool vectors are kept between index builds: per (model, tool digest), shared by every
catalog that contains the tool. The Redis store has its own implementation (`redis_store`)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Protocol

import numpy as np


class VectorCache(Protocol):
    def get_many(self, model: str, digests: Sequence[str]) -> dict[str, np.ndarray]:
        """The vectors held for these tool digests (absent ones left out)."""
        ...

    def put_many(self, model: str, vectors: Mapping[str, np.ndarray]) -> None: ...


class MemoryVectorCache:
    """Tool vectors in this process, least recently used dropped past `max_vectors`."""

    def __init__(self, max_vectors: int = 100_000) -> None:
        self._vectors: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._max_vectors = max_vectors
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._vectors)

    def clear(self) -> None:
        with self._lock:
            self._vectors.clear()

    def get_many(self, model: str, digests: Sequence[str]) -> dict[str, np.ndarray]:
        found = {}
        with self._lock:
            for digest in digests:
                vector = self._vectors.get((model, digest))
                if vector is not None:
                    self._vectors.move_to_end((model, digest))
                    found[digest] = vector
        return found

    def put_many(self, model: str, vectors: Mapping[str, np.ndarray]) -> None:
        with self._lock:
            for digest, vector in vectors.items():
                self._vectors[(model, digest)] = vector
                self._vectors.move_to_end((model, digest))
            while len(self._vectors) > self._max_vectors:
                self._vectors.popitem(last=False)
