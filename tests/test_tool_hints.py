"""Hints servers put in a tool's `_meta`: `anthropic/alwaysLoad` pins it, `anthropic/searchHint` is
searched like its description, and an MCP Apps tool visible to the app only (`ui.visibility`
without "model") stays out of what the model sees and calls through the meta-tools. The proxy's
tools/list is the same whatever order the upstream lists in."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from tests.conftest import call_json, call_text, connect, running_proxy, running_upstream
from tests.support.upstream import recorded_tools

OBJECT = {"type": "object", "properties": {}}
ALWAYS = {"name": "acme_status", "description": "Current status of the ACME plant.", "inputSchema": OBJECT}
HINTED = {"name": "acme_lookup", "description": "Looks a record up.", "inputSchema": OBJECT}
APP_ONLY = {"name": "acme_chart_refresh", "description": "Refreshes the status chart.", "inputSchema": OBJECT}
HINTS = {
    "acme_status": {"anthropic/alwaysLoad": True},
    "acme_lookup": {"anthropic/searchHint": "weather forecast rainfall"},
    "acme_chart_refresh": {"ui": {"resourceUri": "ui://acme/chart.html", "visibility": ["app"]}},
}


def _with_meta(tool: dict[str, Any]) -> dict[str, Any]:
    return {**tool, "_meta": HINTS[tool["name"]]}


@pytest.fixture(scope="module")
def hinted_proxy() -> Iterator[str]:
    tools = [*recorded_tools(["time"]), *map(_with_meta, (ALWAYS, HINTED, APP_ONLY))]
    with running_upstream(tools) as (url, _), running_proxy(url) as proxy:
        yield proxy


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_tool_marked_always_load_is_listed_without_a_pin(hinted_proxy: str, mode: str) -> None:
    async with connect(hinted_proxy, mode=mode) as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
    assert names[5:] == ["acme_status"]


async def test_a_search_hint_is_searched_like_the_description(hinted_proxy: str) -> None:
    async with connect(hinted_proxy) as client:
        answer = await call_json(client, "search_tools", {"query": "rainfall forecast"})
    assert answer["results"][0]["tools"][0]["name"] == "acme_lookup"


async def test_an_app_only_tool_is_not_found_described_or_called_through_the_meta_tools(
    hinted_proxy: str,
) -> None:
    async with connect(hinted_proxy) as client:
        found = await call_json(client, "search_tools", {"query": "refresh the status chart", "limit": 25})
        described = await call_json(client, "describe_tool", {"names": ["acme_chart_refresh"]})
        is_error, text = await call_text(client, "call_write_tool", {"name": "acme_chart_refresh"})
    assert "acme_chart_refresh" not in {tool["name"] for tool in found["results"][0]["tools"]}
    assert described["tools"] == [] and described["unknown"][0]["name"] == "acme_chart_refresh"
    assert is_error and "There is no tool named 'acme_chart_refresh'" in text


async def test_an_app_only_tool_stays_callable_by_its_real_name(hinted_proxy: str) -> None:
    async with connect(hinted_proxy) as client:
        result = await client.call_tool("acme_chart_refresh", {})
    assert not result.is_error


async def test_pinned_tools_are_listed_by_name_whatever_the_upstreams_order() -> None:
    tools = recorded_tools(["time"])
    listings = []
    for order in (tools, tools[::-1]):
        with running_upstream(order) as (url, _), running_proxy(url, pin=["time_*"]) as proxy:
            async with connect(proxy) as client:
                listed = (await client.list_tools()).tools
        listings.append(orjson.dumps([tool.model_dump(mode="json") for tool in listed]))
    assert listings[0] == listings[1]
