"""Test support: the demo upstream MCP server on loopback, and clients that talk MCP to a URL.

Plain functions and context managers (no fixtures), for conftest.py and the tests:

    visibility = bearer_visibility({"token-x": {"github_get_issue"}, "token-y": {"time_convert_time"}})
    with serve_upstream(recorded_tools(["github", "time"]), visibility=visibility) as (url, upstream):
        async with mcp_client(url, authorization="Bearer token-x", mode="legacy") as client:
            await client.list_tools()
        upstream.requests[-1].headers["authorization"]    # what reached the upstream
        upstream.list_calls["Bearer token-x"]             # tools/list requests (pages) of that caller

How the MCP SDK client (mcp 2.3.0) sends headers: `Client(url)` builds its own httpx2 client and sends
no Authorization. To send one (or traceparent, or anything), give the transport an `httpx2.AsyncClient`
with default headers: `Client(streamable_http_client(url, http_client=httpx2.AsyncClient(headers=...)),
mode=...)`; every POST (and the GET/DELETE of stateful sessions) then carries them. `mcp_client` does
that. `mode="auto"` sends `server/discover` (header `MCP-Protocol-Version: 2026-07-28`) and falls back
to `initialize` on any error; `mode="legacy"` goes straight to `initialize` (2025-11-25). An HTTP 401/403
reaches SDK callers only as `MCPError(-32603, "Server returned an error response")` inside an
ExceptionGroup, without the `WWW-Authenticate` header: test OAuth pass-through with `post_jsonrpc`.
The SDK client also rejects a `tools/list` whose tools lack `inputSchema.type == "object"` (11 recorded
tools, e.g. gitlab_* and obsidian-vault_*), so list those with `post_jsonrpc` too.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
import httpx
import httpx2
import orjson
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types.version import LATEST_HANDSHAKE_VERSION, LATEST_MODERN_VERSION

from toolsearch.testing import (
    DEMO_SERVERS,
    DemoUpstream,
    RecordedCall,
    RecordedRequest,
    bearer_visibility,
    recorded_tools,
    serve_app,
)

__all__ = [
    "DEMO_SERVERS",
    "DemoUpstream",
    "RecordedCall",
    "RecordedRequest",
    "bearer_visibility",
    "legacy_headers",
    "mcp_client",
    "modern_request",
    "post_jsonrpc",
    "recorded_tools",
    "response_message",
    "serve_upstream",
]

_ACCEPT = "application/json, text/event-stream"


@contextmanager
def serve_upstream(
    tools: list[dict[str, Any]] | None = None, **options: Any
) -> Iterator[tuple[str, DemoUpstream]]:
    """Run a `DemoUpstream` (options as its constructor's) on a free loopback port; yield (MCP URL, it).

    Default tools: the demo's 268 recorded tools of 15 servers (`DEMO_SERVERS`).
    """
    upstream = DemoUpstream(recorded_tools(DEMO_SERVERS) if tools is None else tools, **options)
    with serve_app(upstream.app()) as base:
        yield base + upstream.path, upstream


@asynccontextmanager
async def mcp_client(
    url: str,
    *,
    authorization: str | None = None,
    headers: Mapping[str, str] | None = None,
    mode: str = "auto",
) -> AsyncIterator[Client]:
    """An MCP SDK `Client` on `url` sending `authorization` and `headers` with every request.

    The client's response cache is off, so every call reaches the server.
    """
    sent = dict(headers or {})
    if authorization is not None:
        sent["Authorization"] = authorization
    timeout = httpx2.Timeout(30.0, read=300.0)
    async with (
        httpx2.AsyncClient(headers=sent, timeout=timeout) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode, cache=None) as client,
    ):
        yield client


def post_jsonrpc(url: str, message: Any, headers: Mapping[str, str] | None = None) -> httpx.Response:
    """POST one raw JSON-RPC message (any JSON) with the Accept header MCP requires; no MCP client logic."""
    sent = {"accept": _ACCEPT, "content-type": "application/json", **(headers or {})}
    return httpx.post(url, content=orjson.dumps(message), headers=sent, timeout=30.0)


def response_message(response: httpx.Response) -> Any:
    """The JSON-RPC message of a response: its JSON body, or the last `data:` event of an SSE body."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        events = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
        return orjson.loads(next(event for event in reversed(events) if event))
    return response.json()


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
"""A legacy (2025-11-25) `initialize` request, as a client opens a handshake-era session."""


def modern_request(
    method: str, params: Mapping[str, Any] | None = None, *, request_id: int = 1
) -> tuple[dict[str, Any], dict[str, str]]:
    """A 2026-07-28 request (per-request `_meta` envelope) and the HTTP headers that go with it."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": LATEST_MODERN_VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    message = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": method,
        "params": {**(params or {}), "_meta": meta},
    }
    headers = {"mcp-protocol-version": LATEST_MODERN_VERSION, "mcp-method": method}
    name_key = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}.get(method)
    if name_key is not None and params is not None:
        headers["mcp-name"] = str(params.get(name_key, ""))
    return message, headers


def legacy_headers(session_id: str | None = None) -> dict[str, str]:
    """Headers of a 2025-11-25 request after `initialize` (with the session, for stateful servers)."""
    headers = {"mcp-protocol-version": LATEST_HANDSHAKE_VERSION}
    if session_id is not None:
        headers["mcp-session-id"] = session_id
    return headers


class SlowApp:
    """An ASGI app that delays every HTTP request by `seconds` before `app` answers it: makes
    concurrent first requests surely overlap one upstream listing."""

    def __init__(self, app: Any, seconds: float) -> None:
        self.app = app
        self.seconds = seconds

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            await anyio.sleep(self.seconds)
        await self.app(scope, receive, send)
