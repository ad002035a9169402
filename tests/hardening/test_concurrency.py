"""200 callers with distinct tokens at once through one proxy process, on loopback, for a few rounds:
no errors, each caller only ever sees and calls its own tools, and the process's memory stays bounded."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from toolsearch.metatools.validation import argument_problems
from toolsearch.testing import (
    DEMO_SERVERS,
    DemoUpstream,
    ServedProcess,
    base_url,
    bearer_visibility,
    free_port,
    recorded_tools,
    serve_app,
    serve_process,
)

from .rpc import LEAK_MARKERS, request

CALLERS = 200
ROUNDS = 3
SLICE = 30
GROWTH_BOUND_BYTES = 64 * 1024 * 1024
"""How much the proxy may grow over the rounds after the first (which lists and indexes every catalog)."""
RSS_BOUND_BYTES = 1024 * 1024 * 1024

TOOLS = recorded_tools(list(DEMO_SERVERS))
NAMES = [tool["name"] for tool in TOOLS]
CALLABLE = [
    tool["name"]
    for tool in TOOLS
    if not argument_problems(tool.get("inputSchema") or {}, {}, key=tool["name"])
]
"""Tools that take no arguments: every caller calls one of its own."""


def _slices() -> dict[str, list[str]]:
    """A different window of the catalog per token, plus one tool it can call without arguments."""
    slices = {}
    for caller in range(CALLERS):
        start = caller * 7 % len(NAMES)
        window = [NAMES[(start + offset) % len(NAMES)] for offset in range(SLICE)]
        callable_tool = CALLABLE[caller % len(CALLABLE)]
        slices[f"caller-{caller:03d}"] = [callable_tool, *(name for name in window if name != callable_tool)]
    return slices


def _rss_bytes(process: ServedProcess) -> int:
    for line in Path(f"/proc/{process.process.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc status")


@contextmanager
def _proxy_process(upstream_url: str) -> Iterator[ServedProcess]:
    port = free_port()
    command = [sys.executable, "-m", "toolsearch", "serve", "--upstream", upstream_url, "--port", str(port)]
    env = {"PYTHONPATH": ":".join(sys.path)}
    with serve_process(
        [*command, "--log-level", "warning"], url=base_url("127.0.0.1", port), env=env
    ) as served:
        yield served


async def _call(
    http: aiohttp.ClientSession, url: str, token: str, tool: str, arguments: Any
) -> dict[str, Any]:
    message, _ = request("tools/call", {"name": tool, "arguments": arguments})
    async with http.post(url, data=orjson.dumps(message), headers=_headers(token)) as response:
        text = await response.text()
    assert response.status == 200, text
    assert not LEAK_MARKERS.search(text), text
    body = orjson.loads(text)
    assert "result" in body, body
    return body["result"]


def _headers(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}


def _text(result: dict[str, Any]) -> str:
    return result["content"][0]["text"]


async def _caller(http: aiohttp.ClientSession, url: str, token: str, own: list[str], other: str) -> None:
    """One caller's session: search, describe, call its own tool, try another caller's."""
    found = await _call(http, url, token, "search_tools", {"queries": ["list", "create", "get"], "limit": 25})
    assert not found.get("isError"), _text(found)
    answer = orjson.loads(_text(found))
    assert answer["total"] == len(own)
    assert {tool["name"] for result in answer["results"] for tool in result["tools"]} <= set(own)
    described = orjson.loads(
        _text(await _call(http, url, token, "describe_tool", {"names": [own[1], other]}))
    )
    assert [tool["name"] for tool in described["tools"]] == [own[1]]
    called = await _call(http, url, token, "call_write_tool", {"name": own[0], "arguments": {}})
    assert not called.get("isError"), _text(called)
    refused = await _call(http, url, token, "call_write_tool", {"name": other, "arguments": {}})
    assert refused.get("isError") and "There is no tool named" in _text(refused)


async def _round(url: str, slices: dict[str, list[str]]) -> None:
    """Every caller's session at once. (aiohttp, not httpx: httpx's pool spends most of its time
    managing 200 connections, and would make the client, not the proxy, what the test measures.)"""
    connector = aiohttp.TCPConnector(limit=CALLERS)
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as http:
        await asyncio.gather(
            *(
                _caller(http, url, token, own, next(name for name in NAMES if name not in own))
                for token, own in slices.items()
            )
        )


async def test_200_concurrent_callers_only_see_their_own_tools_and_memory_stays_bounded() -> None:
    slices = _slices()
    upstream = DemoUpstream(TOOLS, visibility=bearer_visibility(slices), json_response=True)
    with serve_app(upstream.app()) as upstream_base, _proxy_process(f"{upstream_base}/mcp") as proxy:
        url = f"{proxy.url}/mcp"
        await _round(url, slices)
        warm = _rss_bytes(proxy)
        for _ in range(ROUNDS - 1):
            await _round(url, slices)
        after = _rss_bytes(proxy)
        output = proxy.output()
    assert after - warm < GROWTH_BOUND_BYTES, (warm, after)
    assert after < RSS_BOUND_BYTES, after
    assert len({(call.authorization, call.name) for call in upstream.calls}) == CALLERS
    assert all(call.name in slices[call.authorization.removeprefix("Bearer ")] for call in upstream.calls)
    assert sum(upstream.list_calls.values()) == CALLERS
    assert "Traceback" not in output and "ERROR" not in output, output
