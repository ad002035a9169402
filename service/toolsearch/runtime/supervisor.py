"""The one owner of a proxy's background work: every task it starts and every thread pool it makes.

Parts of the proxy never call `asyncio.create_task` or make a `ThreadPoolExecutor` themselves: they
are handed the proxy's `Supervisor` and start work through it, so that `aclose` (from
`Proxy.aclose`) can end all of it, in one place, in a known order: tasks first (given `grace`
seconds to finish, then cancelled), then the pools (their queued work dropped, their running work
waited for), newest first. A task's failure is logged, unless whoever awaits the task takes it.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

THREAD_PREFIX = "toolsearch-"
"""Every thread of the proxy's pools is named with it (what a test looks for after closing)."""


class SupervisorClosed(RuntimeError):
    """Work was started after the supervisor closed (the proxy is stopping)."""


class Supervisor:
    """Tasks and thread pools of one proxy, closed together by `aclose`."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self._pools: list[ThreadPoolExecutor] = []
        self._closed = False

    @property
    def tasks(self) -> frozenset[asyncio.Task[Any]]:
        """The tasks started and not finished yet."""
        return frozenset(self._tasks)

    def start(self, work: Coroutine[Any, Any, _T], *, name: str, awaited: bool = False) -> asyncio.Task[_T]:
        """Run `work` as a task of the running loop, owned here until it finishes. Its failure is
        logged, unless it is `awaited`: then it reaches whoever awaits the task, and is not logged
        here (nor reported as never retrieved when nobody is left waiting)."""
        if self._closed:
            work.close()
            raise SupervisorClosed(f"cannot start {name}: the proxy is stopping")
        task = asyncio.create_task(work, name=f"{THREAD_PREFIX}{name}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(_retrieved if awaited else _logged)
        return task

    def pool(self, name: str, workers: int | None = None) -> ThreadPoolExecutor:
        """A thread pool of `workers` threads (Python's default number without), shut down by `aclose`."""
        if self._closed:
            raise SupervisorClosed(f"cannot make the {name} threads: the proxy is stopping")
        pool = ThreadPoolExecutor(workers, thread_name_prefix=f"{THREAD_PREFIX}{name}")
        self._pools.append(pool)
        return pool

    async def aclose(self, grace: float = 0.0) -> None:
        """Wait up to `grace` seconds for the tasks, cancel those left, then shut the pools down."""
        self._closed = True
        tasks = list(self._tasks)
        if tasks and grace > 0:
            await asyncio.wait(tasks, timeout=grace)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        pools, self._pools = self._pools[::-1], []
        if pools:
            await _shut_down(pools)


def _retrieved(task: asyncio.Task[Any]) -> None:
    if not task.cancelled():
        task.exception()


def _logged(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and (error := task.exception()) is not None:
        logger.error("background work %s failed: %s", task.get_name(), type(error).__name__)


async def _shut_down(pools: list[ThreadPoolExecutor]) -> None:
    """Shut the pools down on a thread of its own (their running work may take a moment), joined
    before this returns: the event loop goes on meanwhile."""
    loop = asyncio.get_running_loop()
    done = loop.create_future()

    def shut_down() -> None:
        try:
            for pool in pools:
                pool.shutdown(wait=True, cancel_futures=True)
        finally:
            loop.call_soon_threadsafe(done.set_result, None)

    thread = threading.Thread(target=shut_down, name=f"{THREAD_PREFIX}shutdown")
    thread.start()
    await done
    thread.join()
