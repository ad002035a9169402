"""Each caller sees and calls only what the upstream lists for its own credentials."""

from __future__ import annotations

import pytest
from mcp.shared.exceptions import MCPError

from tests.conftest import TOKEN_X, TOKEN_Y, call_json, call_text, connect


async def test_search_shows_a_caller_only_its_own_tools(
    proxy_url: str, x_names: set[str], y_names: set[str]
) -> None:
    queries = ["gitlab merge request", "linear issue", "slack message", "github pull request"]
    async with connect(proxy_url, TOKEN_X) as client:
        answer = await call_json(client, "search_tools", {"queries": queries, "limit": 25})
    found = {tool["name"] for result in answer["results"] for tool in result["tools"]}
    assert found <= x_names
    assert not found & (y_names - x_names)


async def test_catalog_size_is_per_caller(proxy_url: str, x_names: set[str], y_names: set[str]) -> None:
    async with connect(proxy_url, TOKEN_Y) as client:
        answer = await call_json(client, "search_tools", {"query": "issue"})
    assert answer["total"] == len(y_names) != len(x_names)


async def test_describe_does_not_reveal_another_callers_tool(proxy_url: str) -> None:
    async with connect(proxy_url, TOKEN_Y) as client:
        answer = await call_json(client, "describe_tool", {"names": ["github_create_issue"]})
    assert answer["tools"] == []
    assert all(not name.startswith("github_") for name in answer["unknown"][0]["similar"])


async def test_a_caller_cannot_call_another_callers_tool(proxy_url: str, upstream) -> None:
    calls_before = len(upstream[1].calls)
    arguments = {"name": "github_create_issue", "arguments": {"owner": "o", "repo": "r", "title": "t"}}
    async with connect(proxy_url, TOKEN_Y) as client:
        is_error, text = await call_text(client, "call_write_tool", arguments)
        with pytest.raises(MCPError) as direct:
            await client.call_tool("github_create_issue", arguments["arguments"])
    assert is_error
    assert "There is no tool named 'github_create_issue'" in text
    assert direct.value.error.code == -32602
    assert len(upstream[1].calls) == calls_before


async def test_upstream_receives_the_callers_own_credentials(proxy_url: str, upstream) -> None:
    async with connect(proxy_url, TOKEN_Y) as client:
        await client.call_tool(
            "call_read_tool", {"name": "time_get_current_time", "arguments": {"timezone": "UTC"}}
        )
    call = upstream[1].calls[-1]
    assert call.authorization == f"Bearer {TOKEN_Y}"


async def test_only_credentials_and_trace_context_are_forwarded(proxy_url: str, upstream) -> None:
    traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    async with connect(
        proxy_url,
        TOKEN_X,
        traceparent=traceparent,
        tracestate="vendor=1",
        Cookie="session=secret",
        **{"X-Api-Key": "secret", "X-Forwarded-For": "10.0.0.1"},
    ) as client:
        await client.call_tool(
            "call_read_tool", {"name": "time_get_current_time", "arguments": {"timezone": "UTC"}}
        )
    forwarded = upstream[1].requests_for("tools/call")[-1].headers
    assert forwarded["authorization"] == f"Bearer {TOKEN_X}"
    assert forwarded["traceparent"] == traceparent
    assert forwarded["tracestate"] == "vendor=1"
    assert "cookie" not in forwarded
    assert "x-api-key" not in forwarded
    assert "x-forwarded-for" not in forwarded
