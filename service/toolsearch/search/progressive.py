"""Lexical search at once, hybrid search once the catalog is embedded.

Embedding a catalog no process has seen takes minutes on a few cores (5,000 tools, two models:
about four and a half minutes on two). A caller should not wait for that: a new catalog's index
is its BM25F index until its vectors are ready, and then, in place, its hybrid index. Catalogs are
embedded one at a time by one background thread (`Embedding`), so searches of every other
catalog keep their cores. The index builder waits a moment for the hybrid index
(`--embedding-wait`): a catalog of known tools, whose vectors are cached, is ready within it and
never shows lexical results.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable

from toolsearch.search import SearchHit, SearchIndex

logger = logging.getLogger(__name__)


class ProgressiveIndex:
    """A search index that starts as one index and is replaced, once, by a better one."""

    def __init__(self, first: SearchIndex) -> None:
        self._current = first
        self.upgraded = threading.Event()
        """Set once the better index serves, or its build failed (then the first one stays)."""

    @property
    def current(self) -> SearchIndex:
        return self._current

    def search(self, query: str, limit: int) -> list[SearchHit]:
        return self._current.search(query, limit)

    def upgrade(self, build: Callable[[], SearchIndex]) -> bool:
        """Build the better index and serve it from now on; on failure, log and keep the first.
        Whether it was upgraded. (Whoever calls it sets `upgraded` when done with it.)"""
        try:
            self._current = build()
        except Exception:  # any failure of a model run: searches go on with the first index
            logger.exception("a catalog could not be embedded; its search stays lexical (BM25)")
            return False
        return True


EmbeddingDone = Callable[[float, bool], None]
"""Told each finished embedding's seconds and whether it succeeded (telemetry)."""


class Embedding:
    """One daemon thread that upgrades indexes in order (a daemon: shutdown never waits for one)."""

    def __init__(self, on_done: EmbeddingDone | None = None) -> None:
        self._jobs: queue.SimpleQueue[tuple[ProgressiveIndex, Callable[[], SearchIndex]]] = (
            queue.SimpleQueue()
        )
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._pending = 0
        self._on_done = on_done

    @property
    def pending(self) -> int:
        """Catalogs submitted and not embedded yet (searched with BM25 meanwhile)."""
        return self._pending

    def submit(self, index: ProgressiveIndex, build: Callable[[], SearchIndex]) -> None:
        """Upgrade `index` to what `build` makes, after the catalogs submitted before it."""
        with self._lock:
            self._pending += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="toolsearch-embedding", daemon=True)
                self._thread.start()
        self._jobs.put((index, build))

    def _run(self) -> None:
        while True:
            index, build = self._jobs.get()
            started = time.perf_counter()
            try:
                upgraded = index.upgrade(build)
                seconds = time.perf_counter() - started
                if upgraded:
                    logger.info("a catalog was embedded in %.1f s; its search is hybrid", seconds)
                with self._lock:
                    self._pending -= 1
                if self._on_done is not None:
                    self._on_done(seconds, upgraded)
            except Exception:  # a failing report must not stop the thread that embeds every catalog
                logger.exception("reporting an embedding failed")
            finally:
                # Last, so that whoever waits for the upgrade also sees it counted.
                index.upgraded.set()
