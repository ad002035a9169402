"""A real upstream MCP server for the demo and the tests, built with the `mcp` SDK's server.

It serves recorded tool definitions over streamable HTTP exactly as they were recorded, and answers
calls with a clearly labelled canned result (no real service is ever contacted). Everything a proxy
in front of it must cope with is a switch: per-token catalogs, OAuth-style 401/403 with
`WWW-Authenticate`, pagination, stateless or stateful (`Mcp-Session-Id`) sessions, JSON or SSE
responses, a legacy-only era, and a hook for failing or slow calls. It records every HTTP request
it receives and counts listings and calls, so tests can check what reached it.

Eras, as the SDK (2.3.0) serves them: a POST whose `MCP-Protocol-Version` header names 2026-07-28
goes to the SDK's stateless single-exchange path (`server/discover`, per-request `_meta`), whether
or not `stateless` is set; anything else is the handshake era (`initialize`, with `Mcp-Session-Id`
sessions unless `stateless`). `legacy_only=True` refuses the modern header the way a pre-2026 server
does (HTTP 400, JSON-RPC -32600 "Unsupported protocol version"), so clients fall back to `initialize`.

Raw definitions: the SDK validates every spec result against the negotiated version's schema and
drops fields that schema does not know (tool `id`s, annotation extras, ...) or rejects tools whose
`inputSchema` lacks `type: object`. Recorded catalogs contain both, so `tools/list` and `tools/call`
results are produced by the SDK (init gate, params validation, `resultType`, `serverInfo` stamp)
and the tools or the call result are then put back verbatim by a server middleware.
"""

from __future__ import annotations

import inspect
import threading
from collections import Counter
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal

import mcp_types
from mcp.server import Server
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import BaseModel
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from toolsearch import __version__
from toolsearch.testing.canned import canned_result
from toolsearch.testing.http_gate import (
    authorization_server_metadata,
    bearer_challenge,
    json_body,
    legacy_version_refusal,
    protected_resource_metadata,
    read_body,
    replay,
    request_headers,
)

Visibility = Callable[[str | None], Collection[str] | None]
"""Caller's `Authorization` header value (or None) -> names of the tools it sees; None refuses it."""

CallOutcome = mcp_types.CallToolResult | Mapping[str, Any] | None
"""What an `on_call` hook returns: a result (model or wire dict, passed on verbatim) or None for the
canned result. To answer with a JSON-RPC error, raise `mcp.shared.exceptions.MCPError`."""

CallHook = Callable[[str, dict[str, Any]], Awaitable[CallOutcome] | CallOutcome]

RequestHook = Callable[
    [ServerRequestContext[Any, Any], mcp_types.CallToolRequestParams], Awaitable[CallOutcome]
]
"""An `on_call_request` hook: as `CallHook`, given the SDK's request context and the call's params
(to send the client requests mid-call, or read a 2026-07-28 retry's `inputResponses`)."""

_MCP_PROTOCOL_VERSION = "mcp-protocol-version"
_PROTECTED_RESOURCE = "/.well-known/oauth-protected-resource"
_raw_slot: ContextVar[dict[str, Any]] = ContextVar("toolsearch_demo_raw_result")


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One HTTP request as the upstream received it."""

    method: str
    path: str
    headers: Mapping[str, str]
    """Header names lower-case; repeated headers joined with ", "."""
    message: Any
    """The decoded JSON body (a JSON-RPC message), or None without a JSON body."""

    @property
    def rpc_method(self) -> str | None:
        return self.message.get("method") if isinstance(self.message, dict) else None


@dataclass(frozen=True, slots=True)
class RecordedCall:
    """One `tools/call` as the upstream received it (also the refused ones, for unknown tools)."""

    name: str
    arguments: dict[str, Any]
    authorization: str | None


def bearer_visibility(
    catalogs: Mapping[str, Collection[str]], *, anonymous: Collection[str] | None = None
) -> Visibility:
    """Per-token catalogs: `Authorization: Bearer <token>` sees `catalogs[token]`.

    Unknown tokens are refused; callers without `Authorization` see `anonymous` (refused if None).
    """

    def visible(authorization: str | None) -> Collection[str] | None:
        if authorization is None:
            return anonymous
        scheme, _, token = authorization.partition(" ")
        return catalogs.get(token.strip()) if scheme.lower() == "bearer" else None

    return visible


class DemoUpstream:
    """An MCP server over streamable HTTP serving `tools` (definitions as recorded); see the module doc.

    `app()` builds a fresh ASGI app (serve it with `toolsearch.testing.serve_app`); the records
    (`requests`, `list_calls`, `calls`) accumulate across apps until `reset_records()`.
    """

    def __init__(
        self,
        tools: Iterable[Mapping[str, Any]],
        *,
        visibility: Visibility | None = None,
        require_auth: bool = False,
        rejected_token_status: Literal[401, 403] = 401,
        instructions: str | None = None,
        page_size: int | None = None,
        stateless: bool = True,
        json_response: bool = False,
        legacy_only: bool = False,
        on_call: CallHook | None = None,
        on_call_request: RequestHook | None = None,
        path: str = "/mcp",
        name: str = "toolsearch-demo-upstream",
    ) -> None:
        if page_size is not None and page_size < 1:
            raise ValueError("page_size must be at least 1")
        self.set_tools(tools)
        self.visibility = visibility
        self.require_auth = require_auth
        self.rejected_token_status = rejected_token_status
        self.instructions = instructions
        self.page_size = page_size
        self.stateless = stateless
        self.json_response = json_response
        self.legacy_only = legacy_only
        self.on_call = on_call
        self.on_call_request = on_call_request
        self.path = path
        self.name = name
        self._lock = threading.Lock()
        self.requests: list[RecordedRequest] = []
        self.list_calls: Counter[str | None] = Counter()
        """`tools/list` requests (one per page) by the caller's `Authorization` header value."""
        self.calls: list[RecordedCall] = []

    def set_tools(self, tools: Iterable[Mapping[str, Any]]) -> None:
        """Replace the served catalog (e.g. to test a proxy's catalog refresh)."""
        by_name: dict[str, dict[str, Any]] = {}
        for tool in tools:
            name = tool.get("name")
            if not isinstance(name, str) or name in by_name:
                raise ValueError(f"every tool needs a distinct string name; got {name!r} twice or invalid")
            by_name[name] = dict(tool)
        self._tools = by_name

    @property
    def tools(self) -> list[dict[str, Any]]:
        return list(self._tools.values())

    def visible_tools(self, authorization: str | None) -> list[dict[str, Any]]:
        """The catalog of the caller with this `Authorization` header value, in catalog order."""
        if self.visibility is None:
            return self.tools
        names = set(self.visibility(authorization) or ())
        return [tool for name, tool in self._tools.items() if name in names]

    def _sees(self, authorization: str | None, name: str) -> bool:
        return self.visibility is None or name in (self.visibility(authorization) or ())

    def requests_for(self, rpc_method: str) -> list[RecordedRequest]:
        """Recorded requests carrying this JSON-RPC method."""
        return [request for request in self.requests if request.rpc_method == rpc_method]

    def reset_records(self) -> None:
        with self._lock:
            self.requests.clear()
            self.list_calls.clear()
            self.calls.clear()

    def app(self) -> ASGIApp:
        """A new ASGI app serving this upstream: the MCP endpoint at `path` plus OAuth metadata."""
        server = Server(
            self.name,
            version=__version__,
            instructions=self.instructions,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            get_tool_input_schema=self._input_schema,
        )
        server.middleware.append(_verbatim_results)
        starlette = server.streamable_http_app(
            streamable_http_path=self.path,
            json_response=self.json_response,
            stateless_http=self.stateless,
            # Reached by whatever name the test or cluster uses; DNS rebinding is the proxy's concern.
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        return _Gate(self, starlette)

    # MCP handlers

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: mcp_types.PaginatedRequestParams | None
    ) -> mcp_types.ListToolsResult:
        authorization = _authorization(ctx)
        with self._lock:
            self.list_calls[authorization] += 1
        tools = self.visible_tools(authorization)
        start = _page_start(params.cursor if params else None)
        end = len(tools) if self.page_size is None else start + self.page_size
        _raw_slot.get()["tools"] = tools[start:end]
        next_cursor = f"page-{end}" if end < len(tools) else None
        return mcp_types.ListToolsResult(tools=[], next_cursor=next_cursor)

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: mcp_types.CallToolRequestParams
    ) -> mcp_types.CallToolResult:
        authorization = _authorization(ctx)
        arguments = dict(params.arguments or {})
        with self._lock:
            self.calls.append(RecordedCall(params.name, arguments, authorization))
        tool = self._tools.get(params.name)
        if tool is None or not self._sees(authorization, params.name):
            raise MCPError(code=mcp_types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        outcome: Any = None
        if self.on_call_request is not None:
            outcome = self.on_call_request(ctx, params)
        elif self.on_call is not None:
            outcome = self.on_call(params.name, arguments)
        if inspect.isawaitable(outcome):
            outcome = await outcome
        if outcome is None:
            outcome = canned_result(tool, arguments)
        elif isinstance(outcome, BaseModel):
            outcome = outcome.model_dump(by_alias=True, mode="json", exclude_none=True)
        _raw_slot.get()["result"] = dict(outcome)
        return mcp_types.CallToolResult(content=[])

    def _input_schema(self, name: str) -> Mapping[str, Any] | None:
        # The SDK asks this (instead of running tools/list) to check Mcp-Param-* headers on 2026 calls.
        tool = self._tools.get(name)
        schema = tool.get("inputSchema") if tool else None
        return schema if isinstance(schema, Mapping) else None

    # HTTP gate

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _refusal(self, scope: Scope, headers: Mapping[str, str], message: Any) -> Response | None:
        """The answer for requests that never reach the MCP server, or None to let it through."""
        base = f"{scope.get('scheme', 'http')}://{headers.get('host', 'localhost')}"
        path = scope["path"]
        if path in (f"{_PROTECTED_RESOURCE}{self.path}", _PROTECTED_RESOURCE):
            return JSONResponse(protected_resource_metadata(base, self.path))
        if path == "/.well-known/oauth-authorization-server":
            return JSONResponse(authorization_server_metadata(base))
        if path.rstrip("/") != self.path:
            return None
        metadata_url = f"{base}{_PROTECTED_RESOURCE}{self.path}"
        authorization = headers.get("authorization")
        if authorization is None and self.require_auth:
            challenge = f'Bearer resource_metadata="{metadata_url}"'
            return bearer_challenge(401, challenge, "authorization required")
        if self.visibility is not None and self.visibility(authorization) is None:
            if self.rejected_token_status == 403:
                challenge = f'Bearer error="insufficient_scope", resource_metadata="{metadata_url}"'
                return bearer_challenge(403, challenge, "this token may not use the tools")
            challenge = f'Bearer error="invalid_token", resource_metadata="{metadata_url}"'
            return bearer_challenge(401, challenge, "the access token is not accepted")
        version = headers.get(_MCP_PROTOCOL_VERSION)
        if self.legacy_only and version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            return legacy_version_refusal(version, message)
        return None


async def _verbatim_results(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Server middleware: put the recorded tools / the call result back verbatim into the SDK's result."""
    if ctx.method not in ("tools/list", "tools/call"):
        return await call_next(ctx)
    slot: dict[str, Any] = {}
    token = _raw_slot.set(slot)
    try:
        wire = await call_next(ctx)
    finally:
        _raw_slot.reset(token)
    assert isinstance(wire, dict)
    if "tools" in slot:
        return {**wire, "tools": slot["tools"]}
    result = dict(slot["result"])
    if "resultType" in wire:
        result.setdefault("resultType", wire["resultType"])
    if isinstance(wire.get("_meta"), dict):
        result["_meta"] = {**wire["_meta"], **(result.get("_meta") or {})}
    return result


class _Gate:
    """ASGI wrapper: records each request, answers OAuth metadata and refusals, then hands over to the SDK."""

    def __init__(self, upstream: DemoUpstream, inner: Starlette) -> None:
        self._upstream = upstream
        self._inner = inner

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._inner(scope, receive, send)
            return
        body = await read_body(receive) if scope["method"] == "POST" else b""
        headers = request_headers(scope)
        message = json_body(body)
        self._upstream._record(RecordedRequest(scope["method"], scope["path"], headers, message))
        refusal = self._upstream._refusal(scope, headers, message)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        await self._inner(scope, replay(body, receive), send)


def _authorization(ctx: ServerRequestContext[Any, Any]) -> str | None:
    request = ctx.request
    return request.headers.get("authorization") if isinstance(request, Request) else None


def _page_start(cursor: str | None) -> int:
    if cursor is None:
        return 0
    prefix, _, offset = cursor.partition("-")
    if prefix != "page" or not offset.isdigit():
        raise MCPError(code=mcp_types.INVALID_PARAMS, message=f"Invalid cursor: {cursor!r}")
    return int(offset)
