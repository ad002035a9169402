"""SIGTERM: the proxy stops accepting, lets in-flight calls finish (bounded), and exits."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import call_text, connect, running_upstream
from toolsearch.testing import (
    ServedProcess,
    base_url,
    free_port,
    proxy_command,
    recorded_tools,
    serve_process,
    serve_proxy_process,
)


async def test_sigterm_lets_the_in_flight_call_finish_then_exits(catalog_tools) -> None:
    started = asyncio.Event()

    async def on_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        started.set()
        await asyncio.sleep(1.0)
        return {"content": [{"type": "text", "text": "finished"}]}

    with (
        running_upstream(catalog_tools, on_call=on_call) as (upstream_url, _),
        serve_proxy_process(upstream_url, "--shutdown-grace=10") as served,
    ):
        async with connect(f"{served.url}/mcp", "t") as client:
            await call_text(client, "search_tools", {"query": "time"})
            call = asyncio.create_task(
                call_text(
                    client,
                    "call_read_tool",
                    {"name": "time_get_current_time", "arguments": {"timezone": "UTC"}},
                )
            )
            while not started.is_set():
                await asyncio.sleep(0.01)
            served.process.send_signal(signal.SIGTERM)
            is_error, text = await call
        exit_code = await asyncio.to_thread(served.process.wait, 30)
        with pytest.raises(httpx.TransportError):
            httpx.get(f"{served.url}/healthz")
    assert (is_error, text) == (False, "finished")
    # uvicorn re-raises SIGTERM once it has shut down, so the parent sees the usual "terminated".
    assert exit_code == -signal.SIGTERM


async def test_sigterm_does_not_wait_past_the_grace_period(catalog_tools) -> None:
    started = asyncio.Event()

    async def on_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        started.set()
        await asyncio.sleep(120)
        return {"content": [{"type": "text", "text": "too late"}]}

    with (
        running_upstream(catalog_tools, on_call=on_call) as (upstream_url, _),
        serve_proxy_process(upstream_url, "--shutdown-grace=0.5") as served,
    ):
        async with connect(f"{served.url}/mcp", "t") as client:
            call = asyncio.create_task(
                client.call_tool(
                    "call_read_tool", {"name": "time_get_current_time", "arguments": {"timezone": "UTC"}}
                )
            )
            while not started.is_set():
                await asyncio.sleep(0.01)
            served.process.send_signal(signal.SIGTERM)
            exit_code = await asyncio.to_thread(served.process.wait, 60)
            call.cancel()
    assert exit_code == -signal.SIGTERM


@pytest.fixture(scope="module")
def use_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Universal Sentence Encoder multilingual, the quicker of the two models to import."""
    from toolsearch.embedding.use_import import import_use_multilingual

    directory = tmp_path_factory.mktemp("models") / "use"
    import_use_multilingual(directory)
    return directory


@contextmanager
def _proxy_as_pid_1(upstream_url: str, *flags: str) -> Iterator[ServedProcess]:
    """`toolsearch serve` as PID 1 of a new PID namespace, as in a container without an init."""
    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip("needs unshare(1) and root to make a PID namespace")
    port = free_port()
    command = ["unshare", "--pid", "--fork", "--kill-child", *proxy_command(upstream_url, port, *flags)]
    env = {"PYTHONPATH": os.pathsep.join(sys.path)}
    with serve_process(command, url=base_url("127.0.0.1", port), env=env) as served:
        yield served


def _namespace_init(unshare: int) -> int:
    """The PID (in our namespace) of the process `unshare --fork` started."""
    return int(Path(f"/proc/{unshare}/task/{unshare}/children").read_text().split()[0])


async def test_sigterm_while_a_catalog_embeds_exits_cleanly_as_pid_1(use_model: Path) -> None:
    with (
        running_upstream(recorded_tools(limit=1500)) as (upstream_url, _),
        _proxy_as_pid_1(upstream_url, f"--model-dir={use_model}", "--embedding-wait=0") as served,
    ):
        async with connect(f"{served.url}/mcp", "t") as client:
            await call_text(client, "search_tools", {"query": "list open issues"})
        await asyncio.sleep(1.0)  # well inside the seconds 1,500 tools take to embed
        assert "a catalog was embedded" not in served.output()
        os.kill(_namespace_init(served.process.pid), signal.SIGTERM)
        exit_code = await asyncio.to_thread(served.process.wait, 30)
        output = served.output()
    assert "terminate called" not in output
    assert "a catalog was embedded" not in output
    # As PID 1 the process does not die of the SIGTERM uvicorn re-raises; it exits by itself.
    assert exit_code == 0
