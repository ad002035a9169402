"""Lexical search at once, hybrid search once the catalog is embedded.

Embedding a catalog no process has seen takes minutes on a few cores (5,000 tools, two models:
about four and a half minutes on two). A caller should not wait for that: a new catalog's index
is its BM25F index until its vectors are ready, and then, in place, its hybrid index. Catalogs are
embedded one at a time by one background thread (`EmbeddingWorker`), so searches of every other
catalog keep their cores. The index builder waits a moment for the hybrid index
(`--embedding-wait`): a catalog of known tools, whose vectors are cached, is ready within it and
never shows lexical results.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future

from toolsearch.embedding import Embedder, EmbedderClosed
from toolsearch.embedding.embedder import usable_cores
from toolsearch.runtime import Supervisor
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

    def unknown_words(self, query: str) -> list[str]:
        return self._current.unknown_words(query)

    def upgrade(self, build: Callable[[], SearchIndex]) -> bool:
        """Build the better index and serve it from now on; on failure, log and keep the first.
        Whether it was upgraded. (Whoever calls it sets `upgraded` when done with it.)"""
        try:
            self._current = build()
        except EmbedderClosed:  # the process is stopping: nothing to report
            return False
        except Exception:  # any failure of a model run: searches go on with the first index
            logger.exception("a catalog could not be embedded; its search stays lexical (BM25)")
            return False
        return True


EmbeddingDone = Callable[[float, bool], None]
"""Told each finished embedding's seconds and whether it succeeded (telemetry)."""


class EmbeddingWorker:
    """Upgrades indexes one at a time, in order, on its one thread (`embedding`), running `models`
    until `close`; and the threads a request's further model runs go to meanwhile (`query_runs`).
    Both pools are `supervisor`'s, which shuts them down."""

    def __init__(
        self, models: Sequence[Embedder], supervisor: Supervisor, on_done: EmbeddingDone | None = None
    ) -> None:
        self._models = tuple(models)
        self._embedding = supervisor.pool("embedding", 1)
        self._lock = threading.Lock()
        self._pending = 0
        self._running = 0
        self._closed = False
        self._on_done = on_done
        self.query_runs = supervisor.pool("query-runs", usable_cores())
        """Where a request's further model runs go while its first runs on the searching thread."""

    @property
    def pending(self) -> int:
        """Catalogs submitted and not embedded yet (searched with BM25 meanwhile)."""
        return self._pending

    @property
    def running(self) -> bool:
        """Whether a catalog is being embedded: after `close`, still inside a model run."""
        return self._running > 0

    def submit(self, index: ProgressiveIndex, build: Callable[[], SearchIndex]) -> Future[bool]:
        """Upgrade `index` to what `build` makes, after the catalogs submitted before it; the future
        of whether it was upgraded, done when `index.upgraded` is set."""
        with self._lock:
            if not self._closed:
                self._pending += 1
                return self._embedding.submit(self._upgrade, index, build)
        index.upgraded.set()  # shutting down: the catalog stays lexical
        done: Future[bool] = Future()
        done.set_result(False)
        return done

    def close(self, timeout: float) -> bool:
        """Embed nothing more and wait up to `timeout` seconds for the catalog under way; whether
        none is left running.

        The models are closed, so the catalog under way stops after its current model run, and it
        and the ones waiting stay lexical. The process must not finalize while a thread is inside
        onnxruntime: that aborts it ("terminate called without an active exception")."""
        with self._lock:
            self._closed = True
        for model in self._models:
            model.close()
        deadline = time.monotonic() + timeout
        # Those waiting run at once, each seeing the worker closed: none is left to the pool's shutdown.
        while (self.running or self._pending) and time.monotonic() < deadline:
            time.sleep(0.01)
        return not self.running

    def _upgrade(self, index: ProgressiveIndex, build: Callable[[], SearchIndex]) -> bool:
        started = time.perf_counter()
        upgraded = False
        with self._lock:
            self._running += 1
        try:
            upgraded = not self._closed and index.upgrade(build)
            seconds = time.perf_counter() - started
            with self._lock:
                self._pending -= 1
            if upgraded and not self._closed:
                logger.info("a catalog was embedded in %.1f s; its search is hybrid", seconds)
            if self._on_done is not None and not self._closed:
                self._on_done(seconds, upgraded)
        except Exception:  # a failing report must not stop the thread that embeds every catalog
            logger.exception("reporting an embedding failed")
        finally:
            with self._lock:
                self._running -= 1
            # Last, so that whoever waits for the upgrade also sees it counted.
            index.upgraded.set()
        return upgraded
