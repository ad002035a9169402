"""The HTTP surface: stateless streamable HTTP in both eras, and clear errors for bad requests."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.conftest import TOKEN_X, running_proxy

AUTH = {"Authorization": f"Bearer {TOKEN_X}"}
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def _modern(method: str, params: dict[str, Any] | None = None, **headers: str) -> tuple[dict, dict]:
    body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": {**(params or {}), "_meta": MODERN_META}}
    sent = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method, **AUTH}
    sent.update(headers)
    return body, sent


def _post(
    url: str, body: Any = None, headers: dict | None = None, content: bytes | None = None
) -> httpx.Response:
    return httpx.post(url, json=body, content=content, headers={**AUTH, **(headers or {})})


def test_legacy_initialize_needs_no_session(proxy_url: str) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    response = _post(proxy_url, body)
    assert response.status_code == 200
    assert response.json()["result"]["protocolVersion"] == "2025-06-18"
    assert "mcp-session-id" not in response.headers
    listed = _post(
        proxy_url, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, {"MCP-Protocol-Version": "2025-06-18"}
    )
    assert len(listed.json()["result"]["tools"]) == 5


def test_initialize_with_an_unknown_version_answers_the_newest_legacy_one(proxy_url: str) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "1999-01-01"}}
    assert _post(proxy_url, body).json()["result"]["protocolVersion"] == "2025-11-25"


@pytest.mark.parametrize("kind", ["notification", "response"])
def test_notifications_and_responses_are_accepted_with_202(proxy_url: str, kind: str) -> None:
    message = (
        {"jsonrpc": "2.0", "method": "notifications/initialized"}
        if kind == "notification"
        else {"jsonrpc": "2.0", "id": 3, "result": {}}
    )
    response = _post(proxy_url, message)
    assert response.status_code == 202
    assert response.content == b""


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_other_http_methods_get_405(proxy_url: str, method: str) -> None:
    response = httpx.request(method, proxy_url, headers=AUTH)
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"


def test_server_discover_lists_supported_versions(proxy_url: str) -> None:
    body, headers = _modern("server/discover")
    result = _post(proxy_url, body, headers).json()["result"]
    assert result["resultType"] == "complete"
    assert result["supportedVersions"][0] == "2026-07-28"
    assert {"2025-11-25", "2025-06-18"} <= set(result["supportedVersions"])
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "toolsearch"


def test_modern_results_carry_result_type(proxy_url: str) -> None:
    body, headers = _modern("tools/list")
    result = _post(proxy_url, body, headers).json()["result"]
    assert result["resultType"] == "complete"
    assert result["cacheScope"] == "private"
    assert isinstance(result["ttlMs"], int)


@pytest.mark.parametrize(
    ("header", "value", "words"),
    [
        ("MCP-Protocol-Version", "2025-11-25", "MCP-Protocol-Version header value"),
        ("Mcp-Method", "tools/call", "Mcp-Method header value"),
    ],
)
def test_modern_header_mismatch_is_rejected_with_32020(
    proxy_url: str, header: str, value: str, words: str
) -> None:
    body, headers = _modern("tools/list", **{header: value})
    response = _post(proxy_url, body, headers)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32020
    assert words in response.json()["error"]["message"]


def test_modern_request_without_mcp_method_header_is_rejected(proxy_url: str) -> None:
    body, headers = _modern("tools/list")
    del headers["Mcp-Method"]
    response = _post(proxy_url, body, headers)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32020


def test_modern_tools_call_needs_a_matching_mcp_name(proxy_url: str) -> None:
    body, headers = _modern(
        "tools/call", {"name": "search_tools", "arguments": {"query": "x"}}, **{"Mcp-Name": "other"}
    )
    response = _post(proxy_url, body, headers)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32020
    body, headers = _modern(
        "tools/call", {"name": "search_tools", "arguments": {"query": "x"}}, **{"Mcp-Name": "search_tools"}
    )
    assert _post(proxy_url, body, headers).status_code == 200


def test_base64_encoded_mcp_name_is_decoded_before_comparing(proxy_url: str) -> None:
    body, headers = _modern(
        "tools/call",
        {"name": "search_tools", "arguments": {"query": "x"}},
        **{"Mcp-Name": "=?base64?c2VhcmNoX3Rvb2xz?="},
    )
    assert _post(proxy_url, body, headers).status_code == 200


def test_unsupported_modern_version_lists_the_supported_ones(proxy_url: str) -> None:
    body, headers = _modern("tools/list")
    body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = "2030-01-01"
    headers["MCP-Protocol-Version"] = "2030-01-01"
    response = _post(proxy_url, body, headers)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == -32022
    assert error["data"]["requested"] == "2030-01-01"
    assert "2026-07-28" in error["data"]["supported"]


def test_unsupported_legacy_version_header_is_rejected(proxy_url: str) -> None:
    response = _post(
        proxy_url, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, {"MCP-Protocol-Version": "1.0"}
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32022


def test_malformed_json_gets_parse_error_with_a_null_id(proxy_url: str) -> None:
    response = _post(
        proxy_url,
        content=b'{"jsonrpc": "2.0", "id": 1, "method": ',
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32700
    assert "id" in response.json() and response.json()["id"] is None


def test_batches_are_rejected(proxy_url: str) -> None:
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    response = _post(proxy_url, batch)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32600
    assert "batches are not supported" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "1.0", "id": 1, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": None, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 1, "method": 5},
        "just a string",
    ],
)
def test_invalid_requests_get_32600(proxy_url: str, message: Any) -> None:
    response = _post(proxy_url, message)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32600
    assert response.json()["id"] == (message.get("id") if isinstance(message, dict) else None)


def test_unknown_method_gets_32601(proxy_url: str) -> None:
    response = _post(proxy_url, {"jsonrpc": "2.0", "id": 1, "method": "unknown/method"})
    assert response.json() == {
        "jsonrpc": "2.0",
        "id": 1,
        "error": {
            "code": -32601,
            "message": "Method not found: 'unknown/method'. toolsearch serves initialize, ping, tools/list "
            "and tools/call in protocol versions before 2026-07-28.",
        },
    }


def test_tools_call_without_a_name_gets_32602(proxy_url: str) -> None:
    response = _post(
        proxy_url, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"arguments": {}}}
    )
    assert response.json()["error"]["code"] == -32602


def test_oversized_body_gets_413_naming_the_limit(upstream) -> None:
    with running_proxy(upstream[0], max_request_bytes=2048) as url:
        big = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"pad": "x" * 4096}}
        response = _post(url, big)
    assert response.status_code == 413
    assert "the limit is 2048 bytes" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    ("origin", "status"),
    [("https://evil.example", 403), ("http://localhost:3000", 200)],
    ids=["foreign-origin-rejected", "local-origin-served"],
)
def test_a_browser_request_is_served_only_from_an_allowed_origin(
    proxy_url: str, origin: str, status: int
) -> None:
    response = _post(proxy_url, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, {"Origin": origin})
    assert response.status_code == status


def test_foreign_origin_is_rejected_before_any_method_of_the_mcp_path(proxy_url: str) -> None:
    response = httpx.get(proxy_url, headers={"Origin": "https://evil.example"})
    assert response.status_code == 403
    assert "Origin is not allowed" in response.json()["error"]["message"]


def test_health_endpoints(proxy_url: str) -> None:
    origin = proxy_url.removesuffix("/mcp")
    assert httpx.get(f"{origin}/healthz").json() == {"status": "ok"}
    assert httpx.get(f"{origin}/readyz").status_code == 200


def test_readyz_reports_an_unreachable_upstream() -> None:
    with running_proxy("http://127.0.0.1:9/mcp") as url:
        response = httpx.get(url.removesuffix("/mcp") + "/readyz")
    assert response.status_code == 503
    assert response.json()["upstream"] == "unreachable"
