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
import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

from toolsearch.embedding import Embedder, EmbedderClosed
from toolsearch.embedding.embedder import usable_cores
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


_Job = tuple[ProgressiveIndex, Callable[[], SearchIndex], Future[bool]]

EmbeddingDone = Callable[[float, bool], None]
"""Told each finished embedding's seconds and whether it succeeded (telemetry)."""


class EmbeddingWorker:
    """One daemon thread that upgrades indexes in order, running `models`, until `close`; and the
    threads a request's further model runs go to meanwhile (`query_runs`), shut down with it."""

    def __init__(self, models: Sequence[Embedder] = (), on_done: EmbeddingDone | None = None) -> None:
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._models = tuple(models)
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._pending = 0
        self._closed = False
        self._on_done = on_done
        self.query_runs = ThreadPoolExecutor(usable_cores(), thread_name_prefix="toolsearch-query-runs")
        """Where a request's further model runs go while its first runs on the searching thread."""

    @property
    def pending(self) -> int:
        """Catalogs submitted and not embedded yet (searched with BM25 meanwhile)."""
        return self._pending

    @property
    def running(self) -> bool:
        """Whether the thread is alive: after `close`, still inside a model run."""
        return self._thread is not None and self._thread.is_alive()

    def submit(self, index: ProgressiveIndex, build: Callable[[], SearchIndex]) -> Future[bool]:
        """Upgrade `index` to what `build` makes, after the catalogs submitted before it; the future
        of whether it was upgraded, done when `index.upgraded` is set."""
        done: Future[bool] = Future()
        done.set_running_or_notify_cancel()  # a waiter giving up must not cancel what the thread sets
        with self._lock:
            if self._closed:
                index.upgraded.set()  # shutting down: the catalog stays lexical
                done.set_result(False)
                return done
            self._pending += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="toolsearch-embedding", daemon=True)
                self._thread.start()
        self._jobs.put((index, build, done))
        return done

    def close(self, timeout: float) -> bool:
        """Embed nothing more and wait up to `timeout` seconds for the thread to end; whether it did.

        The models are closed, so the catalog under way stops after its current model run, and it
        and the ones waiting stay lexical. The process must not finalize while the thread is inside
        onnxruntime: that aborts it ("terminate called without an active exception")."""
        with self._lock:
            self._closed = True
            thread = self._thread
        for model in self._models:
            model.close()
        self.query_runs.shutdown(wait=True, cancel_futures=True)  # their runs end with the models'
        if thread is None:
            return True
        self._jobs.put(None)
        thread.join(timeout)
        return not thread.is_alive()

    def _run(self) -> None:
        while (job := self._jobs.get()) is not None:
            index, build, done = job
            started = time.perf_counter()
            upgraded = False
            try:
                upgraded = not self._closed and index.upgrade(build)
                seconds = time.perf_counter() - started
                with self._lock:
                    self._pending -= 1
                if self._closed:
                    continue
                if upgraded:
                    logger.info("a catalog was embedded in %.1f s; its search is hybrid", seconds)
                if self._on_done is not None:
                    self._on_done(seconds, upgraded)
            except Exception:  # a failing report must not stop the thread that embeds every catalog
                logger.exception("reporting an embedding failed")
            finally:
                # Last, so that whoever waits for the upgrade also sees it counted.
                index.upgraded.set()
                done.set_result(upgraded)
