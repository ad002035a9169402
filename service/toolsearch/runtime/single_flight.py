"""Work by key that concurrent callers share: one upstream listing, index build or handshake for
however many requests need it at once."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, Generic, TypeVar

from toolsearch.runtime.supervisor import Supervisor

_T = TypeVar("_T")


class SingleFlight(Generic[_T]):
    """The first caller of a key starts its work (a task of `supervisor`, named `name`), the others
    await the same task. Shielded, so that a caller who gives up does not cancel it for the rest; a
    failure reaches every caller waiting, and the next call starts afresh."""

    def __init__(self, supervisor: Supervisor, name: str) -> None:
        self.running: dict[str, asyncio.Task[_T]] = {}
        self._supervisor = supervisor
        self._name = name

    async def run(self, key: str, work: Callable[[], Coroutine[Any, Any, _T]]) -> _T:
        task = self.running.get(key)
        if task is None:
            task = self.running[key] = self._supervisor.start(work(), name=self._name, awaited=True)
            task.add_done_callback(lambda _: self.running.pop(key, None))
        return await asyncio.shield(task)
