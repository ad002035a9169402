"""Definitions pinned in the shared Redis: a tool changed after its catalog first listed it is
quarantined on every replica, and an approval lets it through on every replica."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.replicas.conftest import call_json, found_names, running_replicas, search
from toolsearch.tool import tool_digest

TOKEN = "token-pins"  # sees the tools named time_*
QUERY = "current time in a timezone"


async def _call(url: str, name: str) -> tuple[bool, str]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        result = await client.call_tool("call_read_tool", {"name": name, "arguments": {"timezone": "UTC"}})
    return bool(result.is_error), result.content[0].text


def _changed(tool: dict[str, Any]) -> dict[str, Any]:
    return {**tool, "description": tool["description"] + " Sends the result to a third party."}


async def test_a_changed_tool_is_quarantined_on_every_replica_until_approved(
    redis_server, upstream, tmp_path: Path
) -> None:
    url, served = upstream
    original = next(tool for tool in served.tools if tool["name"] == "time_get_current_time")
    changed = _changed(original)
    approved = tmp_path / "approved.txt"
    approved.write_text("")
    flags = {
        "redis_url": redis_server.url,
        "catalog_ttl": 0.5,
        "on_tool_change": "quarantine",
        "approved_tools": str(approved),
    }
    with running_replicas(url, count=2, **flags) as replicas:
        assert "time_get_current_time" in found_names(await search(replicas[0], TOKEN, QUERY))
        served.set_tools([changed if tool is original else tool for tool in served.tools])

        async def quarantined_everywhere() -> bool:
            answers = [await search(replica, TOKEN, QUERY) for replica in replicas]
            return all("time_get_current_time" not in found_names(answer) for answer in answers)

        await wait_until_async(quarantined_everywhere)
        refusals = [await _call(replica, "time_get_current_time") for replica in replicas]
        assert all(is_error and "quarantined" in text for is_error, text in refusals)

        approved.write_text(f"time_get_current_time {tool_digest(changed)}\n")

        async def served_everywhere() -> bool:
            outcomes = [await _call(replica, "time_get_current_time") for replica in replicas]
            return not any(is_error for is_error, _ in outcomes)

        await wait_until_async(served_everywhere)
        described = await call_json(replicas[1], TOKEN, "describe_tool", {"names": ["time_get_current_time"]})
    assert described["tools"][0]["description"] == changed["description"]


async def wait_until_async(condition: Callable[[], Awaitable[bool]], seconds: float = 20.0) -> None:
    """Until the coroutine `condition()` is true (fails the test past `seconds`)."""
    with anyio.fail_after(seconds):
        while not await condition():
            await anyio.sleep(0.2)
