"""Misbehaving upstreams for the hardening tests: a scripted MCP server, and a socket that hangs up.

`ScriptedUpstream` is a minimal stateless streamable-HTTP MCP server written for these tests (the
SDK server validates what it serves, so it cannot send hostile catalogs): it lists whatever tool
definitions it is given, answers calls, and for any JSON-RPC method can be told to answer with a
fault instead (`faults[method] = http_error(500)`). Faults can be set and cleared while it runs.

    upstream = ScriptedUpstream([{"name": "a_b", "inputSchema": {"type": "object"}}])
    with serve_app(upstream) as base:
        upstream.faults["tools/call"] = sse_cut()
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.types import ASGIApp, Receive, Scope, Send

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
CallAnswer = Callable[[str, dict[str, Any]], dict[str, Any]]
"""(tool name, arguments) -> `{"result": ...}` or `{"error": ...}` of the JSON-RPC answer."""


def tool(name: str, description: str = "", **schema: Any) -> dict[str, Any]:
    """A small valid tool definition; `schema` adds to an object input schema."""
    return {
        "name": name,
        "description": description or f"The {name.replace('_', ' ')} tool.",
        "inputSchema": {"type": "object", **schema},
        "annotations": {"readOnlyHint": True},
    }


class ScriptedUpstream:
    """An MCP server (both eras, stateless) serving `tools` verbatim, with scriptable faults.

    `modern_only` refuses `initialize` the way a 2026-only server does. `sse` answers every request
    as a one-event SSE stream instead of JSON, its lines ended by `sse_line_end` and its bytes sent
    in chunks of `sse_chunk`. `page_size` paginates `tools/list`; `endless_cursor`
    hands out a new `nextCursor` on every page forever. `on_call` answers `tools/call` (default: a
    text naming the tool). `instructions` go with `server/discover` and `initialize` results.
    """

    def __init__(
        self,
        tools: Sequence[Mapping[str, Any]] = (),
        *,
        modern_only: bool = False,
        sse: bool = False,
        sse_line_end: str = "\n",
        sse_chunk: int = 64 * 1024,
        page_size: int | None = None,
        endless_cursor: bool = False,
        on_call: CallAnswer | None = None,
        instructions: str | None = None,
    ) -> None:
        self.tools = list(tools)
        self.modern_only = modern_only
        self.sse = sse
        self.sse_line_end = sse_line_end
        self.sse_chunk = sse_chunk
        self.page_size = page_size
        self.endless_cursor = endless_cursor
        self.on_call = on_call
        self.instructions = instructions
        self.faults: dict[str, ASGIApp] = {}
        self.received: Counter[str] = Counter()
        """JSON-RPC requests received, by method (faulted ones included)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        request = Request(scope, receive)
        try:
            message = orjson.loads(await request.body())
        except orjson.JSONDecodeError:
            message = None
        if not isinstance(message, dict) or "id" not in message:
            await Response(status_code=202)(scope, receive, send)
            return
        method = str(message.get("method"))
        self.received[method] += 1
        fault = self.faults.get(method)
        if fault is not None:
            await fault(scope, receive, send)
            return
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        answer = {"jsonrpc": "2.0", "id": message["id"], **self._answer(method, params)}
        body = _dumps(answer)
        if self.sse:
            end = self.sse_line_end.encode()
            event = b": a comment" + end + b"event: message" + end + b"data: " + body + end + end
            response: Response = StreamingResponse(
                _pieces(event, self.sse_chunk), media_type="text/event-stream"
            )
        else:
            response = Response(body, 200, media_type="application/json")
        await response(scope, receive, send)

    def _answer(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        described = {"capabilities": {"tools": {}}, "instructions": self.instructions}
        if method == "server/discover":
            versions = [MODERN] if self.modern_only else [MODERN, LEGACY]
            return {"result": {"supportedVersions": versions, **described}}
        if method == "initialize":
            if self.modern_only:
                error = {
                    "code": -32022,
                    "message": "Unsupported protocol version",
                    "data": {"supported": [MODERN]},
                }
                return {"error": error}
            return {"result": {"protocolVersion": LEGACY, "serverInfo": {}, **described}}
        if method == "tools/list":
            return {"result": self._page(params.get("cursor"))}
        if method == "tools/call":
            name = str(params.get("name"))
            arguments = params.get("arguments") if isinstance(params.get("arguments"), dict) else {}
            if self.on_call is not None:
                return self.on_call(name, arguments)
            return {"result": {"content": [{"type": "text", "text": f"called {name}"}]}}
        if method == "ping":
            return {"result": {}}
        return {"error": {"code": -32601, "message": f"Method not found: {method}"}}

    def _page(self, cursor: object) -> dict[str, Any]:
        start = int(cursor) if isinstance(cursor, str) and cursor.isdigit() else 0
        if self.page_size is None:
            return {"tools": self.tools}
        end = start + self.page_size
        page: dict[str, Any] = {"tools": self.tools[start:end]}
        if self.endless_cursor or end < len(self.tools):
            page["nextCursor"] = str(end)
        return page


async def _pieces(data: bytes, size: int) -> AsyncIterator[bytes]:
    """`data` in chunks of `size` bytes, each sent on its own."""
    for start in range(0, len(data), size):
        yield data[start : start + size]
        await asyncio.sleep(0)


def _dumps(value: Any) -> bytes:
    """JSON bytes (non-ASCII kept raw, as most servers send it), however deep: orjson stops at 255 levels."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(value, ensure_ascii=False).encode()


# Faults: ASGI apps that answer one request badly.


def http_error(status: int, body: bytes = b"upstream failure", content_type: str = "text/plain") -> ASGIApp:
    return Response(body, status, media_type=content_type)


def malformed_json() -> ASGIApp:
    """HTTP 200, `application/json`, and a body that is not JSON."""
    return Response(b'{"jsonrpc": "2.0", "id": 1, "result": {"tools": [', 200, media_type="application/json")


class _StreamCut(Exception):
    """Raised inside a streaming response: the server then drops the connection mid-body."""


def _event_stream(events: Callable[[], AsyncIterator[bytes]]) -> ASGIApp:
    """An ASGI app answering each request with a new `text/event-stream` of `events()`."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await StreamingResponse(events(), media_type="text/event-stream")(scope, receive, send)

    return app


def sse_cut() -> ASGIApp:
    """An SSE response that starts an event and then loses its connection in the middle of it."""

    async def events() -> AsyncIterator[bytes]:
        yield b'event: message\ndata: {"jsonrpc": "2.0", "id": 1, "res'
        await asyncio.sleep(0.05)
        raise _StreamCut

    return _event_stream(events)


def sse_drip(interval: float = 0.1) -> ASGIApp:
    """An SSE response that sends a keep-alive comment every `interval` seconds and never answers."""

    async def events() -> AsyncIterator[bytes]:
        while True:
            yield b": keep-alive\n\n"
            await asyncio.sleep(interval)

    return _event_stream(events)


def sse_endless_line(chunk: int = 64 * 1024) -> ASGIApp:
    """An SSE response whose one `data:` line never ends: bytes keep coming without a line break."""

    async def events() -> AsyncIterator[bytes]:
        yield b"event: message\ndata: "
        while True:
            yield b"x" * chunk
            await asyncio.sleep(0)

    return _event_stream(events)


@contextmanager
def hanging_up_socket() -> Iterator[str]:
    """An MCP URL on loopback whose server accepts each connection and closes it without answering."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    listener.settimeout(0.1)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            with connection:
                connection.settimeout(1.0)
                with suppress(OSError):
                    connection.recv(65536)

    thread = threading.Thread(target=serve, name="hanging-up socket", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
    finally:
        stop.set()
        thread.join(5)
        listener.close()
