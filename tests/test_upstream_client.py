"""The proxy toward its upstream: both protocol eras, sessions, JSON and SSE, pagination, mirrored headers."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import call_json, call_text, connect, running_proxy, running_upstream

SQL_TOOL = {
    "name": "spanner_execute_sql",
    "description": "Execute SQL on Google Cloud Spanner",
    "inputSchema": {
        "type": "object",
        "properties": {
            "region": {"type": "string", "description": "Region to run in", "x-mcp-header": "Region"},
            "query": {"type": "string", "description": "The SQL query"},
        },
        "required": ["region", "query"],
    },
    "annotations": {"readOnlyHint": True},
}
BROKEN_HEADER_TOOL = {
    "name": "spanner_broken",
    "description": "A tool whose x-mcp-header annotation breaks the rules",
    "inputSchema": {"type": "object", "properties": {"ratio": {"type": "number", "x-mcp-header": "Ratio"}}},
}


async def _search_and_call(proxy: str) -> tuple[dict[str, Any], tuple[bool, str]]:
    async with connect(proxy, "t") as client:
        found = await call_json(client, "search_tools", {"query": "current time"})
        called = await call_text(
            client, "call_read_tool", {"name": "time_get_current_time", "arguments": {"timezone": "UTC"}}
        )
    return found, called


@pytest.mark.parametrize(
    "options",
    [
        {"legacy_only": True},
        {"legacy_only": True, "stateless": False},
        {"json_response": True},
        {"json_response": False},
    ],
    ids=["legacy-stateless", "legacy-stateful", "json", "sse"],
)
async def test_proxy_works_with_every_kind_of_upstream(catalog_tools, options: dict[str, Any]) -> None:
    with running_upstream(catalog_tools, **options) as (url, upstream), running_proxy(url) as proxy:
        found, (is_error, text) = await _search_and_call(proxy)
    assert found["total"] == len(catalog_tools)
    assert not is_error, text
    assert upstream.calls[-1].name == "time_get_current_time"


async def test_legacy_upstream_session_id_is_sent_back(catalog_tools) -> None:
    with (
        running_upstream(catalog_tools, legacy_only=True, stateless=False) as (url, upstream),
        running_proxy(url) as proxy,
    ):
        await _search_and_call(proxy)
    initialize = upstream.requests_for("initialize")
    call = upstream.requests_for("tools/call")[-1]
    assert len(initialize) == 1
    assert call.headers.get("mcp-session-id")
    assert call.headers["mcp-protocol-version"] == "2025-11-25"


async def test_modern_upstream_gets_the_real_tool_name_in_mcp_name(catalog_tools) -> None:
    with running_upstream(catalog_tools) as (url, upstream), running_proxy(url) as proxy:
        await _search_and_call(proxy)
    call = upstream.requests_for("tools/call")[-1]
    assert call.headers["mcp-protocol-version"] == "2026-07-28"
    assert call.headers["mcp-method"] == "tools/call"
    assert call.headers["mcp-name"] == "time_get_current_time"


async def test_parameters_marked_x_mcp_header_are_mirrored(catalog_tools) -> None:
    with running_upstream([*catalog_tools, SQL_TOOL]) as (url, upstream), running_proxy(url) as proxy:
        async with connect(proxy, "t") as client:
            is_error, text = await call_text(
                client,
                "call_read_tool",
                {"name": "spanner_execute_sql", "arguments": {"region": "eu-north1", "query": "SELECT 1"}},
            )
    assert not is_error, text
    assert upstream.requests_for("tools/call")[-1].headers["mcp-param-region"] == "eu-north1"


async def test_tools_with_invalid_x_mcp_header_are_left_out(catalog_tools) -> None:
    with running_upstream([*catalog_tools, BROKEN_HEADER_TOOL]) as (url, _), running_proxy(url) as proxy:
        async with connect(proxy, "t") as client:
            answer = await call_json(client, "describe_tool", {"names": ["spanner_broken"]})
    assert answer["tools"] == []


async def test_paginated_listing_is_followed_to_the_end(catalog_tools) -> None:
    with running_upstream(catalog_tools, page_size=40) as (url, upstream), running_proxy(url) as proxy:
        found, _ = await _search_and_call(proxy)
    assert found["total"] == len(catalog_tools)
    assert upstream.list_calls["Bearer t"] == -(-len(catalog_tools) // 40)


async def test_page_count_is_bounded(catalog_tools) -> None:
    with (
        running_upstream(catalog_tools, page_size=10) as (url, upstream),
        running_proxy(url, max_list_pages=3) as proxy,
    ):
        found, _ = await _search_and_call(proxy)
    assert found["total"] == 30
    assert upstream.list_calls["Bearer t"] == 3
