"""What a client would get from the upstream it gets through the proxy: the spec's errors with their
codes and HTTP statuses, the upstream's own errors on direct calls, and results without the
upstream's protocol envelope. Real parts: the MCP SDK server as the upstream, the MCP SDK client
(both eras) or raw HTTP where the wire itself is the point."""

from __future__ import annotations

import http.client
from typing import Any
from urllib.parse import urlsplit

import httpx
import orjson
import pytest
from mcp.shared.exceptions import MCPError

from tests.conftest import TOKEN_X, connect, running_proxy, running_upstream
from tests.support.node import everything_server, requires_node
from tests.support.upstream import modern_request, recorded_tools, response_message
from toolsearch.testing import free_port

AUTH = {"Authorization": f"Bearer {TOKEN_X}"}
TIME_ARGS = {"timezone": "Europe/Vilnius"}
SERVER_INFO_META = "io.modelcontextprotocol/serverInfo"
CAPABILITIES_META = "io.modelcontextprotocol/clientCapabilities"


def _post(url: str, message: Any, headers: dict[str, str] | None = None) -> httpx.Response:
    sent = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    return httpx.post(url, content=orjson.dumps(message), headers={**sent, **AUTH, **(headers or {})})


def _legacy(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 3, "method": method, "params": params or {}}


@pytest.fixture(scope="module")
def failing_upstream_proxy() -> Any:
    """A proxy in front of an upstream whose tool calls fail with the JSON-RPC error the arguments name."""

    async def on_call(name: str, arguments: dict[str, Any]) -> None:
        error = arguments.get("timezone", "")
        if error == "needs-sampling":
            raise MCPError(-32021, "this tool needs sampling", {"requiredCapabilities": {"sampling": {}}})
        raise MCPError(-32001, "quota exceeded", {"retryAfter": 30})

    with running_upstream(recorded_tools(["time"]), on_call=on_call) as (url, _), running_proxy(url) as proxy:
        yield proxy


# Defect 3: the 2026-07-28 envelope


def test_a_modern_request_without_client_capabilities_is_refused_with_400(proxy_url: str) -> None:
    message, headers = modern_request("server/discover")
    del message["params"]["_meta"][CAPABILITIES_META]
    response = _post(proxy_url, message, headers)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32602
    assert CAPABILITIES_META in response.json()["error"]["message"]


# Defect 4: methods the modern era does not have


@pytest.mark.parametrize("method", ["ping", "initialize", "logging/setLevel", "resources/subscribe"])
def test_a_method_2026_07_28_removed_is_not_found_with_404(proxy_url: str, method: str) -> None:
    message, headers = modern_request(method)
    response = _post(proxy_url, message, headers)
    assert response.status_code == 404
    assert response.json() == {"jsonrpc": "2.0", "id": 1, "error": response.json()["error"]}
    assert response.json()["error"]["code"] == -32601


def test_an_unknown_modern_method_is_not_found_with_404(proxy_url: str) -> None:
    message, headers = modern_request("unknown/method")
    response = _post(proxy_url, message, headers)
    assert (response.status_code, response.json()["error"]["code"]) == (404, -32601)


def test_an_unknown_legacy_method_is_not_found_with_200_and_ping_still_answers(proxy_url: str) -> None:
    unknown = _post(proxy_url, _legacy("unknown/method"))
    assert (unknown.status_code, unknown.json()["error"]["code"]) == (200, -32601)
    assert _post(proxy_url, _legacy("ping")).json()["result"] == {}


# Defect 5: optional whitespace in header values


def test_header_values_are_read_without_surrounding_whitespace(proxy_url: str) -> None:
    message, headers = modern_request("tools/call", {"name": "search_tools", "arguments": {"query": "time"}})
    padded = {name: f"{value}   " for name, value in headers.items()}
    # http.client, as httpx refuses to send what some clients do send: values with trailing spaces.
    url = urlsplit(proxy_url)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    try:
        connection.request(
            "POST",
            url.path,
            orjson.dumps(message),
            {"Content-Type": "application/json", "Accept": "application/json", **AUTH, **padded},
        )
        response = connection.getresponse()
        status, body = response.status, orjson.loads(response.read())
    finally:
        connection.close()
    assert status == 200, body
    assert "result" in body


# Defect 6: an upstream that restarted


@requires_node
async def test_an_upstream_that_forgot_the_session_with_400_gets_a_new_one() -> None:
    """server-everything (TypeScript SDK) answers an unknown session with 400, not 404."""
    port = free_port()
    with running_proxy(f"http://127.0.0.1:{port}/mcp") as proxy:
        for restart in ("before", "after"):
            with everything_server(port):
                async with connect(proxy) as client:
                    result = await client.call_tool("echo", {"message": restart})
            assert not result.is_error, result.content[0].text
            assert restart in result.content[0].text


# Defect 7: the upstream's envelope


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_results_carry_the_proxys_envelope_not_the_upstreams(
    proxy_url: str, upstream: Any, mode: str
) -> None:
    async with connect(proxy_url, TOKEN_X, mode) as client:
        direct = await client.call_tool("time_get_current_time", TIME_ARGS)
        meta = await client.call_tool(
            "call_read_tool", {"name": "time_get_current_time", "arguments": TIME_ARGS}
        )
    for result in (direct, meta):
        server_info = (result.meta or {}).get(SERVER_INFO_META)
        assert server_info is None if mode == "legacy" else server_info["name"] == "toolsearch"


def test_a_legacy_caller_gets_no_protocol_meta_from_a_modern_upstream(proxy_url: str) -> None:
    call = _legacy("tools/call", {"name": "time_get_current_time", "arguments": TIME_ARGS})
    result = _post(proxy_url, call, {"mcp-protocol-version": "2025-11-25"}).json()["result"]
    assert not any(key.startswith("io.modelcontextprotocol/") for key in result.get("_meta", {}))


# Defect 8: protocol errors on direct calls stay protocol errors


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_direct_call_of_an_unknown_tool_is_invalid_params(proxy_url: str, mode: str) -> None:
    async with connect(proxy_url, TOKEN_X, mode) as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool("time_get_curent_time", TIME_ARGS)
    assert raised.value.error.code == -32602
    assert "Did you mean 'time_get_current_time'?" in raised.value.error.message


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_direct_call_relays_the_upstreams_error_with_its_code_and_data(
    failing_upstream_proxy: str, mode: str
) -> None:
    async with connect(failing_upstream_proxy, mode=mode) as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool("time_get_current_time", TIME_ARGS)
    error = raised.value.error
    assert (error.code, error.message, error.data) == (-32001, "quota exceeded", {"retryAfter": 30})


def test_a_modern_upstreams_missing_capability_error_is_relayed_with_400(failing_upstream_proxy: str) -> None:
    arguments = {"timezone": "needs-sampling"}
    message, headers = modern_request("tools/call", {"name": "time_get_current_time", "arguments": arguments})
    response = _post(failing_upstream_proxy, message, headers)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32021
    assert response.json()["error"]["data"] == {"requiredCapabilities": {"sampling": {}}}


async def test_a_meta_tool_call_shows_the_upstreams_error_code_and_data_to_the_model(
    failing_upstream_proxy: str,
) -> None:
    async with connect(failing_upstream_proxy) as client:
        result = await client.call_tool(
            "call_read_tool", {"name": "time_get_current_time", "arguments": TIME_ARGS}
        )
    assert result.is_error
    assert "error -32001: quota exceeded" in result.content[0].text
    assert result.structured_content == {
        "error": {"code": -32001, "message": "quota exceeded", "data": {"retryAfter": 30}}
    }


# Defect 9: the smaller rules


def test_a_tools_list_cursor_the_proxy_never_gave_is_invalid_params(proxy_url: str) -> None:
    response = _post(proxy_url, _legacy("tools/list", {"cursor": "bogus"}))
    assert response.json()["error"]["code"] == -32602
    message, headers = modern_request("tools/list", {"cursor": "bogus"})
    modern = _post(proxy_url, message, headers)
    assert (modern.status_code, modern.json()["error"]["code"]) == (400, -32602)


def test_initialize_without_a_protocol_version_is_invalid_params(proxy_url: str) -> None:
    response = _post(proxy_url, _legacy("initialize", {"capabilities": {}, "clientInfo": {"name": "t"}}))
    assert response.json()["error"]["code"] == -32602


def test_a_client_that_does_not_accept_json_gets_406(proxy_url: str) -> None:
    response = _post(proxy_url, _legacy("tools/list"), {"accept": "text/html"})
    assert response.status_code == 406


def test_a_body_that_is_not_json_by_its_content_type_gets_415(proxy_url: str) -> None:
    response = _post(proxy_url, _legacy("tools/list"), {"content-type": "text/plain"})
    assert response.status_code == 415


def test_wildcard_accept_and_a_charset_parameter_are_served(proxy_url: str) -> None:
    headers = {"accept": "*/*", "content-type": "application/json; charset=utf-8"}
    assert "result" in response_message(_post(proxy_url, _legacy("tools/list"), headers))


async def test_a_search_with_no_hit_says_so(proxy_url: str) -> None:
    async with connect(proxy_url, TOKEN_X) as client:
        result = await client.call_tool("search_tools", {"query": "zqxwv"})
    answer = orjson.loads(result.content[0].text)["results"][0]
    assert answer["tools"] == []
    assert answer["matched"] is False
    assert "No tool matches this request" in answer["note"]
