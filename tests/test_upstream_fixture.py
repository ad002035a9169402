"""The upstream MCP server every test runs against behaves as the tests assume it does.

Driven by the real MCP SDK client in both protocol modes (`auto`: 2026-07-28 via server/discover;
`legacy`: the 2025-11-25 initialize handshake), and by raw HTTP where the SDK hides the wire.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import jsonschema
import mcp_types
import pytest
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from tests.support.upstream import (
    INITIALIZE,
    DemoUpstream,
    bearer_visibility,
    legacy_headers,
    mcp_client,
    modern_request,
    post_jsonrpc,
    recorded_tools,
    response_message,
    serve_upstream,
)
from toolsearch.testing import CANNED_LABEL, base_url, free_port, serve_app, serve_process

TOOLS = recorded_tools(["github", "slack", "time", "yfinance", "notion"])
X_TOOLS = {tool["name"] for tool in TOOLS if tool["name"].startswith(("github_", "time_"))}
Y_TOOLS = {tool["name"] for tool in TOOLS if tool["name"].startswith(("slack_", "notion_", "time_"))}
X = "Bearer token-x"
Y = "Bearer token-y"
INSTRUCTIONS = "Recorded tools; calls get canned answers."
TRACE = {
    "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    "tracestate": "vendor=opaque",
}


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, DemoUpstream]]:
    visibility = bearer_visibility({"token-x": X_TOOLS, "token-y": Y_TOOLS})
    with serve_upstream(
        TOOLS, visibility=visibility, require_auth=True, instructions=INSTRUCTIONS, page_size=10
    ) as upstream:
        yield upstream


@pytest.fixture
def url(served: tuple[str, DemoUpstream]) -> str:
    served[1].reset_records()
    return served[0]


@pytest.fixture
def upstream(served: tuple[str, DemoUpstream], url: str) -> DemoUpstream:
    return served[1]


@pytest.fixture(params=["auto", "legacy"])
def mode(request: pytest.FixtureRequest) -> str:
    return request.param


async def all_tool_names(url: str, authorization: str, mode: str) -> list[str]:
    async with mcp_client(url, authorization=authorization, mode=mode) as client:
        names: list[str] = []
        cursor = None
        while True:
            page = await client.list_tools(cursor=cursor)
            names += [tool.name for tool in page.tools]
            if page.next_cursor is None:
                return names
            cursor = page.next_cursor


# Eras


async def test_auto_mode_negotiates_the_2026_era_and_legacy_mode_the_handshake(url: str, mode: str) -> None:
    async with mcp_client(url, authorization=X, mode=mode) as client:
        expected = "2026-07-28" if mode == "auto" else "2025-11-25"
        assert client.protocol_version == expected
        assert client.instructions == INSTRUCTIONS


async def test_legacy_only_upstream_refuses_discover_and_auto_clients_fall_back() -> None:
    with serve_upstream(TOOLS[:3], legacy_only=True) as (url, upstream):
        message, headers = modern_request("server/discover")
        refused = post_jsonrpc(url, message, headers)
        assert refused.status_code == 400
        assert refused.json()["error"]["code"] == mcp_types.INVALID_REQUEST
        async with mcp_client(url, mode="auto") as client:
            assert client.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS
            assert len((await client.list_tools()).tools) == 3
        assert [r.rpc_method for r in upstream.requests][1:3] == ["server/discover", "initialize"]


async def test_stateful_upstream_requires_the_session_it_issued(mode: str) -> None:
    with serve_upstream(TOOLS[:3], stateless=False) as (url, upstream):
        opened = post_jsonrpc(url, INITIALIZE)
        session = opened.headers["mcp-session-id"]
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        assert post_jsonrpc(url, listing, legacy_headers()).status_code == 400
        assert post_jsonrpc(url, listing, legacy_headers("not-a-session")).status_code == 404
        post_jsonrpc(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, legacy_headers(session))
        listed = response_message(post_jsonrpc(url, listing, legacy_headers(session)))
        assert len(listed["result"]["tools"]) == 3
        async with mcp_client(url, mode=mode) as client:
            assert len((await client.list_tools()).tools) == 3
        if mode == "legacy":
            assert upstream.requests_for("tools/list")[-1].headers["mcp-session-id"]


# Per-token catalogs and authorization


async def test_each_token_lists_its_own_catalog(url: str, mode: str) -> None:
    assert set(await all_tool_names(url, X, mode)) == X_TOOLS
    assert set(await all_tool_names(url, Y, mode)) == Y_TOOLS


async def test_listing_is_paginated_with_next_cursor(url: str, upstream: DemoUpstream, mode: str) -> None:
    names = await all_tool_names(url, X, mode)
    pages = -(-len(X_TOOLS) // 10)
    assert len(names) == len(X_TOOLS) and pages > 1
    assert upstream.list_calls[X] == pages
    assert upstream.list_calls[Y] == 0


def test_an_unknown_cursor_is_invalid_params(url: str) -> None:
    message, headers = modern_request("tools/list", {"cursor": "bogus"})
    answer = post_jsonrpc(url, message, {**headers, "authorization": X}).json()
    assert answer["error"]["code"] == mcp_types.INVALID_PARAMS


def test_request_without_authorization_gets_401_with_resource_metadata(url: str) -> None:
    refused = post_jsonrpc(url, INITIALIZE)
    assert refused.status_code == 401
    metadata_url = url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
    assert refused.headers["www-authenticate"] == f'Bearer resource_metadata="{metadata_url}"'
    metadata = httpx.get(metadata_url).json()
    assert metadata["resource"] == url
    issuer = metadata["authorization_servers"][0]
    assert httpx.get(f"{issuer}/.well-known/oauth-authorization-server").json()["issuer"] == issuer


@pytest.mark.parametrize("status", [401, 403])
def test_unknown_token_is_refused_with_the_configured_status(status: int) -> None:
    visibility = bearer_visibility({"token-x": X_TOOLS})
    with serve_upstream(TOOLS, visibility=visibility, rejected_token_status=status) as (url, _):
        refused = post_jsonrpc(url, INITIALIZE, {"authorization": "Bearer stolen"})
        assert refused.status_code == status
        error = "invalid_token" if status == 401 else "insufficient_scope"
        assert refused.headers["www-authenticate"].startswith(f'Bearer error="{error}", resource_metadata=')


async def test_sdk_client_without_token_cannot_connect(url: str, mode: str) -> None:
    with pytest.RaisesGroup(MCPError, flatten_subgroups=True):
        async with mcp_client(url, mode=mode):
            pass


async def test_every_request_is_recorded_with_its_headers(
    url: str, upstream: DemoUpstream, mode: str
) -> None:
    async with mcp_client(url, authorization=X, headers=TRACE, mode=mode) as client:
        await client.call_tool("time_get_current_time", {"timezone": "UTC"})
    methods = [request.rpc_method for request in upstream.requests]
    opening = ["server/discover"] if mode == "auto" else ["initialize", "notifications/initialized"]
    # After a call the SDK client lists tools itself, to check structured content against output schemas.
    assert methods[: len(opening) + 1] == [*opening, "tools/call"]
    for request in upstream.requests:
        assert request.method == "POST" and request.path == "/mcp"
        assert request.headers["authorization"] == X
        assert {name: request.headers[name] for name in TRACE} == TRACE


# Calls


async def test_canned_call_echoes_its_arguments_and_says_no_service_was_contacted(
    url: str, upstream: DemoUpstream, mode: str
) -> None:
    async with mcp_client(url, authorization=X, mode=mode) as client:
        result = await client.call_tool(
            "github_get_issue", {"owner": "octo", "repo": "demo", "issue_number": 7}
        )
    text = result.content[0].text
    assert not result.is_error
    assert text.startswith(f"{CANNED_LABEL} canned result: github_get_issue was called with")
    assert '{"issue_number":7,"owner":"octo","repo":"demo"}' in text and "no real service" in text
    assert [(call.name, call.authorization) for call in upstream.calls] == [("github_get_issue", X)]


async def test_canned_result_of_a_tool_with_output_schema_conforms_to_it(url: str, mode: str) -> None:
    (tool,) = [tool for tool in TOOLS if tool["name"] == "time_get_current_time"]
    async with mcp_client(url, authorization=Y, mode=mode) as client:
        await client.list_tools()  # the SDK client checks structured content against listed schemas
        result = await client.call_tool(tool["name"], {"timezone": "Europe/Vilnius"})
    jsonschema.validate(result.structured_content, tool["outputSchema"])


async def test_calling_a_tool_outside_the_callers_catalog_is_invalid_params(
    url: str, upstream: DemoUpstream, mode: str
) -> None:
    async with mcp_client(url, authorization=Y, mode=mode) as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool("github_get_issue", {})
    assert refused.value.code == mcp_types.INVALID_PARAMS
    assert [(call.name, call.authorization) for call in upstream.calls] == [("github_get_issue", Y)]


async def test_on_call_hook_result_is_returned_as_given(mode: str) -> None:
    failure = {"content": [{"type": "text", "text": "rate limited"}], "isError": True}
    with serve_upstream(TOOLS, on_call=lambda name, arguments: failure) as (url, _):
        async with mcp_client(url, mode=mode) as client:
            result = await client.call_tool("slack_slack_list_channels", {})
    assert result.is_error and result.content[0].text == "rate limited"


async def test_on_call_hook_error_reaches_the_client_as_a_jsonrpc_error(mode: str) -> None:
    async def reject(name: str, arguments: dict[str, Any]) -> None:
        raise MCPError(code=mcp_types.INVALID_PARAMS, message=f"{name}: 'channel' is required")

    with serve_upstream(TOOLS, on_call=reject) as (url, _):
        async with mcp_client(url, mode=mode) as client:
            with pytest.raises(MCPError) as refused:
                await client.call_tool("slack_slack_post_message", {})
    assert refused.value.code == mcp_types.INVALID_PARAMS
    assert refused.value.message == "slack_slack_post_message: 'channel' is required"


def test_on_call_hook_returning_none_gets_the_canned_result() -> None:
    with serve_upstream(TOOLS, on_call=lambda name, arguments: None) as (url, _):
        message, headers = modern_request("tools/call", {"name": "time_get_current_time", "arguments": {}})
        result = post_jsonrpc(url, message, headers).json()["result"]
    assert result["content"][0]["text"].startswith(CANNED_LABEL)


# The wire


@pytest.mark.parametrize("era", ["2026-07-28", "2025-11-25"])
def test_recorded_definitions_are_served_verbatim(era: str) -> None:
    # Extra fields, annotation extras and schemas without `type` that the SDK's models would drop or refuse.
    odd = [
        tool
        for tool in recorded_tools()
        if "id" in tool
        or "type" not in tool["inputSchema"]
        or set(tool.get("annotations") or {}) - {"readOnlyHint", "destructiveHint", "openWorldHint"}
    ][:40]
    with serve_upstream(odd) as (url, _):
        if era == "2026-07-28":
            listed = response_message(post_jsonrpc(url, *modern_request("tools/list")))
        else:
            listed = response_message(post_jsonrpc(url, {**INITIALIZE, "method": "tools/list", "params": {}}))
    assert listed["result"]["tools"] == odd


@pytest.mark.parametrize(
    ("json_response", "content_type"), [(False, "text/event-stream"), (True, "application/json")]
)
def test_handshake_era_answers_with_sse_or_json_as_configured(json_response: bool, content_type: str) -> None:
    with serve_upstream(TOOLS[:2], json_response=json_response) as (url, _):
        answer = post_jsonrpc(url, INITIALIZE)
    assert answer.headers["content-type"].startswith(content_type)
    assert response_message(answer)["result"]["protocolVersion"] == "2025-11-25"


def test_recorded_tools_are_named_server_underscore_tool_in_the_order_asked() -> None:
    tools = recorded_tools(["time", "airbnb"])
    assert [tool["name"] for tool in tools] == [
        "time_get_current_time",
        "time_convert_time",
        "airbnb_airbnb_search",
        "airbnb_airbnb_listing_details",
    ]
    assert len(recorded_tools(limit=7)) == 7
    with pytest.raises(ValueError, match="no recorded server named nope"):
        recorded_tools(["nope"])


# Serving


def test_serve_app_stops_its_thread_and_frees_its_port() -> None:
    upstream = DemoUpstream(TOOLS[:1])
    threads = threading.active_count()
    with serve_app(upstream.app()) as base:
        assert post_jsonrpc(f"{base}/mcp", INITIALIZE).status_code == 200
    assert threading.active_count() == threads
    with pytest.raises(httpx.ConnectError):
        httpx.get(base)


def test_serve_process_waits_until_healthy_and_terminates_the_process() -> None:
    port = free_port()
    with serve_upstream(TOOLS[:2]) as (upstream_url, _):
        command = [sys.executable, "-m", "toolsearch", "serve", "--upstream", upstream_url]
        command += ["--port", str(port)]
        with serve_process(command, url=base_url("127.0.0.1", port)) as served:
            assert httpx.get(f"{served.url}/readyz").status_code == 200
    assert served.process.returncode is not None
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{served.url}/healthz")
