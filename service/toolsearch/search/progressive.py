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
        """Set once the better index serves (or its build failed: then the first one stays)."""

    @property
    def current(self) -> SearchIndex:
        return self._current

    def search(self, query: str, limit: int) -> list[SearchHit]:
        return self._current.search(query, limit)

    def upgrade(self, build: Callable[[], SearchIndex]) -> None:
        """Build the better index and serve it from now on; on failure, log and keep the first."""
        started = time.perf_counter()
        try:
            self._current = build()
        except Exception:  # any failure of a model run: searches go on with the first index
            logger.exception("a catalog could not be embedded; its search stays lexical (BM25)")
        else:
            logger.info(
                "a catalog was embedded in %.1f s; its search is hybrid", time.perf_counter() - started
            )
        finally:
            self.upgraded.set()


class Embedding:
    """One daemon thread that runs embedding jobs in order (a daemon: shutdown never waits for one)."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="toolsearch-embedding", daemon=True)
                self._thread.start()
        self._jobs.put(job)

    def _run(self) -> None:
        while True:
            self._jobs.get()()
