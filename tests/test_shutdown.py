"""SIGTERM: the proxy stops accepting, lets in-flight calls finish (bounded), and exits."""

from __future__ import annotations

import asyncio
import signal
from typing import Any

import httpx
import pytest

from tests.conftest import call_text, connect, running_upstream
from toolsearch.demo.serving import serve_proxy_process


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
