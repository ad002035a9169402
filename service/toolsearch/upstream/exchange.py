"""One JSON-RPC request to the upstream over streamable HTTP, and its answer: a JSON body, or an SSE
stream on which the upstream may also send progress, log messages, other notifications and requests
of its own before the response. Each request is a client span that the upstream's own spans continue.

What a request carries of the caller is `CallerHeaders`' only; which era's headers and params it
carries is the caller's of this module (`upstream`) to say.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import httpx
import orjson
from opentelemetry.trace import SpanKind

from toolsearch.mcp.caller import CallerHeaders, CallRelay
from toolsearch.mcp.errors import InputNotRelayed, UpstreamAuthError, UpstreamError, UpstreamRpcError
from toolsearch.mcp.protocol import (
    REFUSAL_GRACE,
    SESSION_HEADER,
    TOOLS_CHANGED,
    VERSION_HEADER,
    answer_to_server_request,
    unrelayed_request,
)
from toolsearch.mcp.sse import sse_data
from toolsearch.telemetry import ERROR_TYPE, METHOD, TOOL, Telemetry, elapsed

ToolsChanged = Callable[[CallerHeaders], Awaitable[None]]


class NotJsonRpc(UpstreamError):
    """An HTTP error without a JSON-RPC body: for era detection, the mark of a legacy server."""


class SessionExpired(UpstreamError):
    """The upstream does not know the session a request carried: HTTP 404, or a 400 that says so."""


class Exchange:
    """Requests to one upstream URL through a shared HTTP client, bounded in time and size."""

    def __init__(
        self,
        url: str,
        http: httpx.AsyncClient,
        *,
        timeout: float,
        max_response_bytes: int,
        telemetry: Telemetry,
    ) -> None:
        self.url = url
        self._http = http
        self._timeout = timeout
        self._max_response_bytes = max_response_bytes
        self._telemetry = telemetry
        self._ids = itertools.count(1)
        self.on_tools_changed: ToolsChanged | None = None
        """Called when the upstream says, on a response stream, that a caller's tools changed."""

    async def request(
        self,
        caller: CallerHeaders,
        method: str,
        params: dict[str, Any],
        headers: Mapping[str, str],
        *,
        capture: dict[str, str] | None = None,
        relay: CallRelay | None = None,
    ) -> dict[str, Any]:
        """The result of one request (its `Mcp-Session-Id` answer put in `capture`, when given); what
        the upstream says meanwhile for the caller goes to `relay`."""
        name = params.get("name") if method == "tools/call" else None
        attributes = {METHOD: method, TOOL: name} if isinstance(name, str) else {METHOD: method}
        started = time.perf_counter()
        error_type = ""
        with self._telemetry.span(method, kind=SpanKind.CLIENT, attributes=attributes) as span:
            try:
                return await self._exchange(caller, method, params, headers, capture, relay)
            except (UpstreamError, UpstreamAuthError) as exc:
                error_type = exc.error_type
                raise
            finally:
                metric = {METHOD: method, ERROR_TYPE: error_type} if error_type else {METHOD: method}
                self._telemetry.client_duration.record(elapsed(started), metric)
                if error_type:
                    Telemetry.fail(span, error_type)
                    self._telemetry.upstream_errors.add(1, metric)

    async def notify(self, caller: CallerHeaders, method: str, headers: Mapping[str, str]) -> None:
        body = orjson.dumps({"jsonrpc": "2.0", "method": method})
        try:
            response = await self._http.post(self.url, content=body, headers=self._headers(caller, headers))
        except httpx.HTTPError as exc:
            raise UpstreamError(f"upstream unreachable: {describe(exc)}") from None
        await response.aclose()

    async def _exchange(
        self,
        caller: CallerHeaders,
        method: str,
        params: dict[str, Any],
        headers: Mapping[str, str],
        capture: dict[str, str] | None,
        relay: CallRelay | None,
    ) -> dict[str, Any]:
        request_id = next(self._ids)
        body = orjson.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        refused: list[str] = []
        tools_changed = False
        # The timeout bounds the whole exchange: a trickle of bytes (SSE keep-alives) does not extend it.
        deadline = asyncio.timeout(self._timeout)

        async def answer(request: dict[str, Any]) -> None:
            """Answer a request the upstream sent on this exchange's stream, on the same session; note
            a notification that the caller's tools changed. A refused request leaves the upstream
            `REFUSAL_GRACE` to end the call."""
            nonlocal tools_changed
            if "id" not in request:
                tools_changed = tools_changed or request.get("method") == TOOLS_CHANGED
                return
            if request.get("method") != "ping":
                refused.append(str(request.get("method"))[:100])
                grace = asyncio.get_running_loop().time() + REFUSAL_GRACE
                deadline.reschedule(min(deadline.when() or grace, grace))
            reply = orjson.dumps(answer_to_server_request(request))
            sent = {name: headers[name] for name in (VERSION_HEADER, SESSION_HEADER) if name in headers}
            with contextlib.suppress(httpx.HTTPError):  # the call then fails or times out, and says so
                await self._http.post(self.url, content=reply, headers=self._headers(caller, sent))

        try:
            async with (
                deadline,
                self._http.stream(
                    "POST", self.url, content=body, headers=self._headers(caller, headers)
                ) as response,
            ):
                if capture is not None and SESSION_HEADER in response.headers:
                    capture[SESSION_HEADER] = response.headers[SESSION_HEADER]
                message = await self._read_response(
                    response, request_id, session=SESSION_HEADER in headers, answer=answer, relay=relay
                )
            if tools_changed and self.on_tools_changed is not None:
                await self.on_tools_changed(caller)
        except (httpx.TimeoutException, TimeoutError):
            if refused:
                raise InputNotRelayed(unrelayed_request(refused)) from None
            raise UpstreamError(f"upstream did not answer {method} in time") from None
        except httpx.HTTPError as exc:
            raise UpstreamError(f"upstream unreachable: {describe(exc)}") from None
        return _result(message, method)

    def _headers(self, caller: CallerHeaders, headers: Mapping[str, str]) -> dict[str, str]:
        sent = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **headers,
            **caller.as_headers(),
        }
        # The current span continues the caller's trace (or, untraced, is the caller's own context).
        Telemetry.inject(sent)
        return sent

    async def _read_response(
        self,
        response: httpx.Response,
        request_id: int,
        *,
        session: bool,
        answer: Callable[[dict[str, Any]], Awaitable[None]],
        relay: CallRelay | None,
    ) -> dict[str, Any]:
        if response.status_code in (401, 403):
            body = await self._read_capped(response)
            raise UpstreamAuthError(response.status_code, response.headers, body)
        if response.status_code == 404 and session:
            raise SessionExpired
        content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type == "text/event-stream" and response.status_code == 200:
            return await self._read_stream(response, request_id, answer, relay)
        body = await self._read_capped(response)
        try:
            message = orjson.loads(body) if body else None
        except orjson.JSONDecodeError:
            message = None
        if session and response.status_code == 400 and _names_the_session(message):
            raise SessionExpired  # how the TypeScript SDK says it does not know the session
        if not isinstance(message, dict) or ("result" not in message and "error" not in message):
            if 400 <= response.status_code < 500:  # a 5xx says the server is down, not which era it speaks
                raise NotJsonRpc(f"upstream answered HTTP {response.status_code}")
            raise UpstreamError(f"upstream answered HTTP {response.status_code} with no JSON-RPC response")
        return message

    async def _read_capped(self, response: httpx.Response) -> bytes:
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > self._max_response_bytes:
                raise self._too_large()
            chunks.append(chunk)
        return b"".join(chunks)

    async def _read_stream(
        self,
        response: httpx.Response,
        request_id: int,
        answer: Callable[[dict[str, Any]], Awaitable[None]],
        relay: CallRelay | None,
    ) -> dict[str, Any]:
        """Read SSE events until the response to our request; its progress and log messages go to
        `relay`, other notifications are skipped, requests the upstream sends meanwhile are answered
        at once."""
        async for data in sse_data(self._capped_text(response)):
            try:
                message = orjson.loads(data)
            except orjson.JSONDecodeError:
                continue
            if not isinstance(message, dict):
                continue
            if message.get("id") == request_id and ("result" in message or "error" in message):
                return message
            if not isinstance(message.get("method"), str):
                continue
            if relay is None or not relay.offer(message):
                await answer(message)
        raise UpstreamError("upstream SSE stream ended before the response")

    async def _capped_text(self, response: httpx.Response) -> AsyncIterator[str]:
        async for text in response.aiter_text():
            if response.num_bytes_downloaded > self._max_response_bytes:
                raise self._too_large()
            yield text

    def _too_large(self) -> UpstreamError:
        return UpstreamError(f"upstream response is larger than {self._max_response_bytes} bytes")


def describe(exc: httpx.HTTPError) -> str:
    """An HTTP failure as an error message says it: its kind, and httpx's words when it has any."""
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _names_the_session(message: Any) -> bool:
    """Whether an error answer is about the session ("No valid session ID provided"), not the request."""
    error = message.get("error") if isinstance(message, dict) else None
    text = error.get("message") if isinstance(error, dict) else None
    return isinstance(text, str) and "session" in text.lower()


def _result(message: Mapping[str, Any], method: str) -> dict[str, Any]:
    """The result of the upstream's answer to `method`; its JSON-RPC error raised as `UpstreamRpcError`."""
    error = message.get("error")
    if isinstance(error, dict):
        raise UpstreamRpcError(
            int(error.get("code", -32603)) if isinstance(error.get("code"), int) else -32603,
            str(error.get("message", "")),
            error.get("data"),
        )
    result = message.get("result")
    if not isinstance(result, dict):
        raise UpstreamError(f"upstream answered {method} without a result object")
    return result
