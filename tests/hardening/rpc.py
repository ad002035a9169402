"""Raw JSON-RPC over HTTP to the proxy, for tests that look at the wire rather than through an SDK.

Requests speak the legacy era without a handshake (the proxy is stateless), or the 2026-07-28 era
with its `_meta` envelope and mirrored headers (`modern=True`).
"""

from __future__ import annotations

import re
from typing import Any

import httpx
import orjson

from toolsearch.mcp.headers import encode_header_value

MODERN_VERSION = "2026-07-28"
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
    "io.modelcontextprotocol/clientCapabilities": {},
}
LEAK_MARKERS = re.compile(
    r"Traceback \(most recent call last\)|File \"[^\"]+\", line \d+|Internal error in toolsearch"
    r"|\b(?:KeyError|TypeError|ValueError|AttributeError|IndexError|RecursionError|AssertionError)\b"
)
"""What a response body must never hold: a traceback, Python exception names, or our catch-all
error (which means an exception escaped a handler)."""


def request(method: str, params: dict[str, Any] | None = None, *, modern: bool = False, request_id: Any = 1):
    """A JSON-RPC request and its HTTP headers, in either era."""
    params = dict(params or {})
    headers: dict[str, str] = {}
    if modern:
        params["_meta"] = MODERN_META
        headers = {"MCP-Protocol-Version": MODERN_VERSION, "Mcp-Method": method}
        if method == "tools/call":
            headers["Mcp-Name"] = encode_header_value(str(params.get("name", "")))
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}, headers


def post(
    url: str,
    message: Any,
    headers: dict[str, str] | None = None,
    *,
    token: str | None = "t",
    client: httpx.Client | None = None,
    timeout: float = 60.0,
) -> httpx.Response:
    """POST `message` (any JSON) with `Authorization: Bearer <token>` when a token is given."""
    sent = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    sent.update(headers or {})
    if client is not None:
        return client.post(url, content=orjson.dumps(message), headers=sent)
    return httpx.post(url, content=orjson.dumps(message), headers=sent, timeout=timeout)


def call_tool(
    url: str, name: str, arguments: Any = None, *, token: str | None = "t", modern: bool = False
) -> dict[str, Any]:
    """`tools/call` of `name`; the result object, after checking the response is a clean 200."""
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    message, headers = request("tools/call", params, modern=modern)
    response = post(url, message, headers, token=token)
    assert response.status_code == 200, response.text
    assert not LEAK_MARKERS.search(response.text), response.text
    body = response.json()
    assert "result" in body, body
    return body["result"]


def text_of(result: dict[str, Any]) -> str:
    return "\n".join(item.get("text", "") for item in result["content"])


def call_json(url: str, name: str, arguments: Any = None, *, token: str | None = "t") -> dict[str, Any]:
    """Call a meta-tool that answers JSON text, check it succeeded, and decode its answer."""
    result = call_tool(url, name, arguments, token=token)
    assert not result.get("isError"), text_of(result)
    return orjson.loads(text_of(result))


def call_error(url: str, name: str, arguments: Any = None, *, token: str | None = "t") -> str:
    """Call a tool that must fail as a tool (`isError`); its error text."""
    result = call_tool(url, name, arguments, token=token)
    assert result.get("isError") is True, result
    return text_of(result)
