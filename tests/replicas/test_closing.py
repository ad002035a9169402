"""A proxy owns every task and thread its parts start (its `Supervisor`): once `Proxy.aclose`
returns, none of them is left, whichever backend keeps its state."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import running_upstream
from tests.embedding.tiny_models import write_model
from toolsearch.mcp.caller import CallerHeaders
from toolsearch.proxy import Proxy
from toolsearch.runtime.supervisor import THREAD_PREFIX
from toolsearch.settings import Settings
from toolsearch.telemetry import Telemetry
from toolsearch.testing import RedisServer

_THREADS_END_SECONDS = 5.0
"""A pool's threads end once their last work item returns: shortly after the shutdown."""


def _our_threads(before: frozenset[threading.Thread] = frozenset()) -> list[str]:
    """Our threads but those of `before` (other tests' models may keep theirs for the session)."""
    return [
        thread.name
        for thread in threading.enumerate()
        if thread.name.startswith(THREAD_PREFIX) and thread not in before
    ]


def _our_tasks() -> list[str]:
    return [task.get_name() for task in asyncio.all_tasks() if task.get_name().startswith(THREAD_PREFIX)]


async def _exercise(proxy: Proxy) -> None:
    """What starts the proxy's tasks and pools: a first listing, a toolset and its index, a
    search, and a search whose outcome waits to be judged."""
    caller = CallerHeaders(authorization="Bearer closing")
    catalog = await proxy.catalogs.get(caller)
    hits = await asyncio.get_running_loop().run_in_executor(proxy.work, catalog.hits, "current time", 5)
    assert hits
    await proxy.outcomes.searched(caller, [{"tools": [{"name": catalog.tools[hits[0].position].name}]}])


@pytest.mark.parametrize("backend", ["memory", "redis"])
async def test_a_closed_proxy_leaves_no_task_or_thread_of_its_own(
    backend: str, catalog_tools: list[dict[str, Any]], tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    write_model(tmp_path / "model", name="tiny-closing")
    options: dict[str, Any] = {"model_dir": [str(tmp_path / "model")]}
    if backend == "redis":
        redis: RedisServer = request.getfixturevalue("redis_server")
        options["redis_url"] = redis.url
    before = frozenset(threading.enumerate())
    with running_upstream(catalog_tools) as (upstream_url, _):
        proxy = Proxy.from_settings(
            Settings(upstream=upstream_url, **options), Telemetry(use_environment=False)
        )
        await _exercise(proxy)
        assert _our_threads(before) and _our_tasks()  # the exercise started some of each

        await proxy.aclose()

    assert _our_tasks() == []
    deadline = time.monotonic() + _THREADS_END_SECONDS
    while _our_threads(before) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert _our_threads(before) == []
