"""How the benchmarks talk to the servers: the MCP SDK client, and raw JSON-RPC over HTTP.

Quality is measured through the official MCP SDK client (`mcp.Client`, protocol negotiated
automatically), as an agent would call. Latency, overhead and cold start are measured with raw
`tools/call` POSTs of the 2026-07-28 era (the stateless one: one request, one answer, no session),
so the client's own work hardly counts; wrk sends the very same requests.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import httpx2
import orjson
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

MODERN_VERSION = "2026-07-28"
_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
    "io.modelcontextprotocol/clientInfo": {"name": "toolsearch-bench", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
READ_TOOL = "arxiv_get_abstract"
READ_ARGUMENTS = {"paper_id": "2305.13245"}
"""The read-only upstream tool that the call benchmarks call (in the first 100 recorded tools)."""
CLIENT_TIMEOUT = 120.0
"""Seconds a request may take: the peer needs about a second per search over the whole catalog."""


@dataclass(frozen=True)
class Dialect:
    """How one tool-search server is asked to search and to call, and how its search answers read."""

    name: str
    search_tool: str
    call_tool: str
    search_takes_limit: bool
    """toolsearch takes `limit` per search; the peer's is fixed when it starts (`max_results`)."""

    def search_arguments(self, query: str, limit: int, **extra: Any) -> dict[str, Any]:
        arguments: dict[str, Any] = {"query": query, **extra}
        if self.search_takes_limit:
            arguments["limit"] = limit
        return arguments

    def call_arguments(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return {"name": tool, "arguments": arguments}

    def ranked_names(self, answer_text: str) -> list[str]:
        """Tool names of a search answer's text, best first (the peer answers no match with no text)."""
        answer = json.loads(answer_text) if answer_text.strip() else []
        if self.name == "toolsearch":
            return [tool["name"] for result in answer["results"] for tool in result["tools"]]
        return [tool["name"] for tool in answer]


TOOLSEARCH = Dialect("toolsearch", "search_tools", "call_read_tool", search_takes_limit=True)
PEER = Dialect("peer", "search_tools", "call_tool", search_takes_limit=False)


@asynccontextmanager
async def sdk_client(url: str, token: str | None = None) -> AsyncIterator[Client]:
    """The MCP SDK client on `url` (protocol negotiated automatically), with a bearer token if given."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=CLIENT_TIMEOUT) as http,
        Client(streamable_http_client(url, http_client=http), mode="auto") as client,
    ):
        yield client


def result_text(result: Any) -> str:
    """The text of a `CallToolResult`'s content, as the model reads it."""
    return "\n".join(getattr(item, "text", "") for item in result.content)


# -- raw JSON-RPC ------------------------------------------------------------------------------------


def tools_call_request(tool: str, arguments: dict[str, Any], token: str | None = None) -> tuple[dict, bytes]:
    """Headers and body of one stateless `tools/call` (2026-07-28 era)."""
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN_VERSION,
        "Mcp-Method": "tools/call",
        "Mcp-Name": tool,
    }
    if token:
        headers["Authorization"] = f"Bearer {token}"
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments, "_meta": _META},
    }
    return headers, orjson.dumps(body)


def list_request(method: str = "tools/list") -> tuple[dict, bytes]:
    """Headers and body of one stateless `tools/list`."""
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN_VERSION,
        "Mcp-Method": method,
    }
    return headers, orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": {"_meta": _META}})


class RawClient:
    """One keep-alive HTTP connection that times raw JSON-RPC requests; failures raise."""

    def __init__(self, url: str, timeout: float = CLIENT_TIMEOUT) -> None:
        self.url = url
        self._http = httpx.Client(timeout=timeout)

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *_: object) -> None:
        self._http.close()

    def post(self, headers: dict, body: bytes) -> tuple[float, dict[str, Any]]:
        """Milliseconds from sending to the whole answer read, and the JSON-RPC result."""
        started = time.perf_counter()
        response = self._http.post(self.url, content=body, headers=headers)
        elapsed = (time.perf_counter() - started) * 1000
        if response.status_code != 200:
            raise RuntimeError(f"{self.url} answered HTTP {response.status_code}: {response.text[:300]}")
        message = orjson.loads(response.content)
        if "result" not in message:
            raise RuntimeError(f"{self.url} answered an error: {response.text[:300]}")
        result = message["result"]
        if result.get("isError"):
            raise RuntimeError(f"{self.url} answered a failed tool call: {response.text[:300]}")
        return elapsed, result

    def call(self, tool: str, arguments: dict[str, Any], token: str | None = None) -> tuple[float, dict]:
        return self.post(*tools_call_request(tool, arguments, token))
