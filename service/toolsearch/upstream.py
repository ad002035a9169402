"""The client toward the upstream MCP server (the gateway). It lists tools and calls them for a caller.

It speaks both protocol eras (it tries 2026-07-28 `server/discover` once, and falls back to the
`initialize` handshake for legacy servers), honours an upstream `Mcp-Session-Id`, reads JSON and SSE
responses, and follows `nextCursor` a bounded number of pages. It forwards only what `CallerHeaders`
holds of the caller's request. It knows nothing of catalogs or search.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import re
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Final

import httpx
import orjson
from opentelemetry.trace import SpanKind

from toolsearch import __version__
from toolsearch.jsonrpc import UNSUPPORTED_PROTOCOL_VERSION
from toolsearch.oauth import PROTECTED_RESOURCE_PATH
from toolsearch.protocol import (
    CLIENT_CAPABILITIES_META,
    CLIENT_INFO_META,
    LEGACY_VERSIONS,
    METHOD_HEADER,
    MODERN_VERSION,
    NAME_BEARING_PARAMS,
    NAME_HEADER,
    PROGRESS_NOTIFICATION,
    PROTOCOL_VERSION_META,
    SESSION_HEADER,
    TOOLS_CHANGED,
    VERSION_HEADER,
    Era,
    answer_to_server_request,
    encode_header_value,
)
from toolsearch.telemetry import ERROR_TYPE, METHOD, TOOL, Telemetry, elapsed
from toolsearch.untrusted import MAX_DEFINITION_DEPTH, MAX_NAME_CHARS, unservable

logger = logging.getLogger(__name__)

CLIENT_INFO: Final = {"name": "toolsearch", "version": __version__}
_MAX_LEGACY_SESSIONS: Final = 4096
_TOKEN_CHARS = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_MAX_SAFE_INTEGER: Final = 2**53 - 1
_SSE_LINE_END = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True, slots=True)
class CallerHeaders:
    """What of a caller's request goes upstream: its credentials and its W3C trace context, nothing else."""

    authorization: str | None = None
    traceparent: str | None = None
    tracestate: str | None = None

    @classmethod
    def from_headers(cls, headers: Mapping[str, str]) -> CallerHeaders:
        return cls(
            authorization=headers.get("authorization"),
            traceparent=headers.get("traceparent"),
            tracestate=headers.get("tracestate"),
        )

    def as_headers(self) -> dict[str, str]:
        forwarded = {
            "Authorization": self.authorization,
            "traceparent": self.traceparent,
            "tracestate": self.tracestate,
        }
        return {name: value for name, value in forwarded.items() if value is not None}


@dataclass(frozen=True, slots=True)
class CallerInput:
    """What of a 2026-07-28 caller's `tools/call` goes upstream besides the tool's arguments: the
    capabilities it declared (so the upstream asks only for input it can give) and, on a retry after
    an `input_required` result, its answers and the upstream's opaque `requestState`, echoed."""

    capabilities: Mapping[str, Any] | None = None
    input_responses: Mapping[str, Any] | None = None
    request_state: str | None = None

    def params(self) -> dict[str, Any]:
        """The retry fields of the upstream `tools/call`."""
        params: dict[str, Any] = {}
        if self.input_responses is not None:
            params["inputResponses"] = dict(self.input_responses)
        if self.request_state is not None:
            params["requestState"] = self.request_state
        return params


class ProgressRelay:
    """A caller's `progressToken` while its `tools/call` runs: the first upstream call made within
    `active()` carries it, and the upstream's `notifications/progress` for it land in `queue`, for
    the transport to stream to the caller. (One upstream call only: progress must only increase.)"""

    _current: ContextVar[ProgressRelay | None] = ContextVar("toolsearch_progress_relay", default=None)
    MAX_QUEUED: Final = 1000

    def __init__(self, token: str | int) -> None:
        self.token = token
        self.queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(self.MAX_QUEUED)
        self._claimed = False

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        """Make this the relay of tasks created inside the block (they copy the context)."""
        reset = ProgressRelay._current.set(self)
        try:
            yield
        finally:
            ProgressRelay._current.reset(reset)

    @classmethod
    def claim(cls) -> ProgressRelay | None:
        relay = cls._current.get()
        if relay is None or relay._claimed:
            return None
        relay._claimed = True
        return relay

    @classmethod
    def carried_by(cls, params: Mapping[str, Any]) -> ProgressRelay | None:
        """The active relay, if these upstream request params carry its token."""
        relay = cls._current.get()
        meta = params.get("_meta")
        return relay if relay is not None and isinstance(meta, Mapping) and "progressToken" in meta else None

    def offer(self, message: Mapping[str, Any]) -> bool:
        """Queue an upstream notification if it is progress of this token; whether it was."""
        params = message.get("params")
        if message.get("method") != PROGRESS_NOTIFICATION or not isinstance(params, Mapping):
            return False
        if params.get("progressToken") != self.token:
            return False
        with contextlib.suppress(asyncio.QueueFull):  # a flood of progress is not worth memory
            self.queue.put_nowait({"jsonrpc": "2.0", "method": PROGRESS_NOTIFICATION, "params": dict(params)})
        return True


@dataclass(frozen=True, slots=True)
class Listing:
    """One caller's tools as the upstream lists them, and the upstream's own instructions."""

    tools: list[dict[str, Any]]
    instructions: str | None


class UpstreamError(Exception):
    """The upstream could not be reached or answered something unusable."""


class UpstreamAuthError(UpstreamError):
    """The upstream refused the caller's credentials (401/403); passed to the caller as is."""

    def __init__(self, status: int, headers: Mapping[str, str], body: bytes) -> None:
        super().__init__(f"upstream answered HTTP {status}")
        self.status = status
        self.headers = dict(headers)
        self.body = body


class UpstreamRpcError(UpstreamError):
    """The upstream answered with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"upstream error {code}: {message}")
        self.code = code
        self.message = message
        self.data = data


@dataclass(slots=True)
class _LegacySession:
    version: str
    session_id: str | None
    instructions: str | None
    capabilities: Mapping[str, Any]


@dataclass(slots=True)
class _Sessions:
    """Legacy sessions per caller (bounded LRU), and one handshake at a time per caller."""

    sessions: OrderedDict[str, _LegacySession] = field(default_factory=OrderedDict)
    locks: dict[str, asyncio.Lock] = field(default_factory=dict)

    def get(self, key: str) -> _LegacySession | None:
        session = self.sessions.get(key)
        if session is not None:
            self.sessions.move_to_end(key)
        return session

    def put(self, key: str, session: _LegacySession) -> None:
        self.sessions[key] = session
        self.sessions.move_to_end(key)
        while len(self.sessions) > _MAX_LEGACY_SESSIONS:
            evicted, _ = self.sessions.popitem(last=False)
            self.locks.pop(evicted, None)

    def lock(self, key: str) -> asyncio.Lock:
        return self.locks.setdefault(key, asyncio.Lock())


class UpstreamClient:
    """Streamable-HTTP MCP client for one upstream URL, shared by every caller of this process."""

    def __init__(
        self,
        url: str,
        *,
        timeout: float = 60.0,
        connect_timeout: float = 5.0,
        max_pages: int = 100,
        max_response_bytes: int = 64 * 1024 * 1024,
        max_tools: int = 10_000,
        telemetry: Telemetry | None = None,
    ) -> None:
        self._telemetry = telemetry or Telemetry(use_environment=False)
        self.url = url
        self._timeout = timeout
        self._max_pages = max_pages
        self._max_response_bytes = max_response_bytes
        self._max_tools = max_tools
        self._http = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout, connect=connect_timeout),
            limits=httpx.Limits(max_connections=200, max_keepalive_connections=50),
            follow_redirects=False,
            headers={"User-Agent": f"toolsearch/{__version__}"},
        )
        self._ids = itertools.count(1)
        self._era: Era | None = None
        self._sessions = _Sessions()
        self.on_tools_changed: Callable[[CallerHeaders], Awaitable[None]] | None = None
        """Called when the upstream says, on a response stream, that a caller's tools changed."""

    async def aclose(self) -> None:
        await self._http.aclose()

    # -- public operations -------------------------------------------------------------------------

    async def list_tools(self, caller: CallerHeaders, caller_key: str) -> Listing:
        """Every tool the upstream lists for this caller (following `nextCursor`), and its instructions."""
        era = await self._ensure_era(caller)
        instructions = await self._instructions(era, caller, caller_key)
        tools: list[dict[str, Any]] = []
        left_out = 0
        cursor: str | None = None
        seen_cursors: set[str] = set()
        for _ in range(self._max_pages):
            params = {"cursor": cursor} if cursor is not None else {}
            result = await self._request(era, caller, caller_key, "tools/list", params)
            page = result.get("tools")
            if not isinstance(page, list):
                raise UpstreamError("upstream tools/list result has no 'tools' list")
            servable = [tool for tool in page if isinstance(tool, dict) and unservable(tool) is None]
            left_out += len(page) - len(servable)
            tools.extend(servable)
            if len(tools) > self._max_tools:
                logger.warning(
                    "upstream listed more than %d tools; using the first ones (--max-catalog-tools)",
                    self._max_tools,
                )
                del tools[self._max_tools :]
                break
            cursor = result.get("nextCursor")
            if not isinstance(cursor, str) or not cursor or cursor in seen_cursors:
                break
            seen_cursors.add(cursor)
        else:
            logger.warning(
                "upstream tools/list had more than %d pages; using the first ones", self._max_pages
            )
        if left_out:
            logger.warning(
                "left out %d upstream tools: a name that is not 1 to %d characters without control "
                "characters, or a definition nested more than %d levels deep",
                left_out,
                MAX_NAME_CHARS,
                MAX_DEFINITION_DEPTH,
            )
        if era == "modern":
            tools = [tool for tool in tools if _has_valid_param_headers(tool)]
        return Listing(tools=tools, instructions=instructions)

    async def call_tool(
        self,
        caller: CallerHeaders,
        caller_key: str,
        name: str,
        arguments: Mapping[str, Any],
        input_schema: Mapping[str, Any] | None = None,
        caller_input: CallerInput | None = None,
    ) -> dict[str, Any]:
        """Call one tool by its real name; the upstream's result is returned unchanged."""
        era = await self._ensure_era(caller)
        params: dict[str, Any] = {"name": name, "arguments": dict(arguments)}
        if era == "modern" and caller_input is not None:
            params.update(caller_input.params())
        relay = ProgressRelay.claim()
        if relay is not None:
            params["_meta"] = {"progressToken": relay.token}
        extra = _param_headers(input_schema, arguments) if era == "modern" and input_schema else {}
        capabilities = caller_input.capabilities if caller_input is not None else None
        return await self._request(era, caller, caller_key, "tools/call", params, extra, capabilities)

    async def forward(
        self, caller: CallerHeaders, caller_key: str, method: str, params: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Send one request of the caller's (resources, prompts, completion) upstream as it came, with
        the caller's credentials; the upstream's result, or its `UpstreamRpcError`."""
        era = await self._ensure_era(caller)
        sent = {key: value for key, value in params.items() if key != "_meta"}
        return await self._request(era, caller, caller_key, method, sent)

    async def server_capabilities(self, caller: CallerHeaders, caller_key: str) -> dict[str, Any]:
        """What the upstream says it offers this caller (`initialize` or `server/discover`)."""
        era = await self._ensure_era(caller)
        if era == "modern":
            result = await self._request(era, caller, caller_key, "server/discover", {})
            capabilities = result.get("capabilities")
        else:
            capabilities = (await self._legacy_session(caller, caller_key)).capabilities
        return dict(capabilities) if isinstance(capabilities, Mapping) else {}

    async def reachable(self) -> bool:
        """Whether the upstream answers HTTP at all (any status counts: it is there)."""
        try:
            response = await self._http.post(
                self.url,
                content=b'{"jsonrpc":"2.0","id":0,"method":"ping"}',
                headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
                timeout=5.0,
            )
        except httpx.HTTPError:
            return False
        await response.aclose()
        return True

    async def get_well_known(self, path: str) -> httpx.Response:
        """GET an OAuth discovery document from the upstream's origin, for pass-through."""
        url = httpx.URL(self.url).copy_with(path=path, query=None, fragment=None)
        try:
            return await self._http.get(url)
        except httpx.HTTPError as exc:
            raise UpstreamError(f"upstream unreachable: {_describe(exc)}") from None

    async def protected_resource_metadata(self) -> dict[str, Any] | None:
        """The upstream's OAuth protected resource metadata (RFC 9728): at the well-known path for
        its MCP endpoint, else at the origin's root; None when it has none."""
        path = httpx.URL(self.url).path.rstrip("/")
        for candidate in dict.fromkeys((f"{PROTECTED_RESOURCE_PATH}{path}", PROTECTED_RESOURCE_PATH)):
            response = await self.get_well_known(candidate)
            if response.status_code == 404:
                continue
            try:
                document = orjson.loads(response.content)
            except orjson.JSONDecodeError:
                document = None
            if response.status_code != 200 or not isinstance(document, dict):
                raise UpstreamError(f"upstream answered {candidate} with HTTP {response.status_code}")
            return document
        return None

    # -- eras and sessions -------------------------------------------------------------------------

    async def _ensure_era(self, caller: CallerHeaders) -> Era:
        """Probe once with `server/discover`; the era is a property of the server, not of a caller."""
        if self._era is not None:
            return self._era
        try:
            result = await self._send(
                caller, "server/discover", _modern_params({}), _modern_headers("server/discover", {})
            )
        except UpstreamRpcError as exc:
            if exc.code == UNSUPPORTED_PROTOCOL_VERSION and _only_modern(exc.data):
                raise UpstreamError(
                    f"the upstream speaks only protocol versions {exc.data.get('supported')}, "
                    "which toolsearch does not support"
                ) from None
            self._era = "legacy"
        except UpstreamAuthError:
            raise
        except _NotJsonRpc:
            self._era = "legacy"
        else:
            versions = result.get("supportedVersions")
            self._era = "modern" if isinstance(versions, list) and MODERN_VERSION in versions else "legacy"
        logger.info("upstream speaks the %s protocol era", self._era)
        return self._era

    async def _instructions(self, era: Era, caller: CallerHeaders, caller_key: str) -> str | None:
        if era == "modern":
            result = await self._request(era, caller, caller_key, "server/discover", {})
        else:
            result = {"instructions": (await self._legacy_session(caller, caller_key)).instructions}
        instructions = result.get("instructions")
        return instructions if isinstance(instructions, str) and instructions else None

    async def _legacy_session(self, caller: CallerHeaders, caller_key: str) -> _LegacySession:
        session = self._sessions.get(caller_key)
        if session is not None:
            return session
        async with self._sessions.lock(caller_key):
            session = self._sessions.get(caller_key)
            if session is None:
                session = await self._initialize(caller)
                self._sessions.put(caller_key, session)
            return session

    async def _initialize(self, caller: CallerHeaders) -> _LegacySession:
        params = {"protocolVersion": LEGACY_VERSIONS[0], "capabilities": {}, "clientInfo": CLIENT_INFO}
        headers: dict[str, str] = {}
        result = await self._send(caller, "initialize", params, headers, capture=headers)
        version = result.get("protocolVersion")
        if version not in LEGACY_VERSIONS:
            raise UpstreamError(
                f"upstream negotiated protocol version {version!r}, which toolsearch does not speak"
            )
        session = _LegacySession(
            version=str(version),
            session_id=headers.get(SESSION_HEADER),
            instructions=result.get("instructions") if isinstance(result.get("instructions"), str) else None,
            capabilities=result.get("capabilities") if isinstance(result.get("capabilities"), dict) else {},
        )
        await self._notify(caller, "notifications/initialized", _legacy_headers(session))
        return session

    async def _request(
        self,
        era: Era,
        caller: CallerHeaders,
        caller_key: str,
        method: str,
        params: dict[str, Any],
        extra_headers: Mapping[str, str] | None = None,
        capabilities: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        if era == "modern":
            headers = {**_modern_headers(method, params), **(extra_headers or {})}
            return await self._send(caller, method, _modern_params(params, capabilities), headers)
        session = await self._legacy_session(caller, caller_key)
        try:
            return await self._send(caller, method, params, _legacy_headers(session))
        except _SessionExpired:
            # The upstream forgot the session (restart, idle expiry): start a new one, once.
            self._sessions.sessions.pop(caller_key, None)
            session = await self._legacy_session(caller, caller_key)
            return await self._send(caller, method, params, _legacy_headers(session))

    # -- HTTP --------------------------------------------------------------------------------------

    async def _notify(self, caller: CallerHeaders, method: str, headers: Mapping[str, str]) -> None:
        body = orjson.dumps({"jsonrpc": "2.0", "method": method})
        try:
            response = await self._http.post(self.url, content=body, headers=self._headers(caller, headers))
        except httpx.HTTPError as exc:
            raise UpstreamError(f"upstream unreachable: {_describe(exc)}") from None
        await response.aclose()

    async def _send(
        self,
        caller: CallerHeaders,
        method: str,
        params: dict[str, Any],
        headers: Mapping[str, str],
        *,
        capture: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """One JSON-RPC request, inside a client span that the upstream's own spans continue."""
        name = params.get("name") if method == "tools/call" else None
        attributes = {METHOD: method, TOOL: name} if isinstance(name, str) else {METHOD: method}
        started = time.perf_counter()
        error_type = ""
        with self._telemetry.span(method, kind=SpanKind.CLIENT, attributes=attributes) as span:
            try:
                return await self._exchange(caller, method, params, headers, capture)
            except UpstreamRpcError as exc:
                error_type = str(exc.code)
                raise
            except UpstreamAuthError as exc:
                error_type = str(exc.status)
                raise
            except UpstreamError as exc:
                error_type = type(exc).__name__
                raise
            finally:
                metric = {METHOD: method, ERROR_TYPE: error_type} if error_type else {METHOD: method}
                self._telemetry.client_duration.record(elapsed(started), metric)
                if error_type:
                    Telemetry.fail(span, error_type)
                    self._telemetry.upstream_errors.add(1, metric)

    async def _exchange(
        self,
        caller: CallerHeaders,
        method: str,
        params: dict[str, Any],
        headers: Mapping[str, str],
        capture: dict[str, str] | None,
    ) -> dict[str, Any]:
        request_id = next(self._ids)
        body = orjson.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        refused: list[str] = []
        relay = ProgressRelay.carried_by(params)
        tools_changed = False

        async def answer(request: dict[str, Any]) -> None:
            """Answer a request the upstream sent on this exchange's stream, on the same session; note
            a notification that the caller's tools changed."""
            nonlocal tools_changed
            if "id" not in request:
                tools_changed = tools_changed or request.get("method") == TOOLS_CHANGED
                return
            if request.get("method") != "ping":
                refused.append(str(request.get("method"))[:100])
            reply = orjson.dumps(answer_to_server_request(request))
            sent = {name: headers[name] for name in (VERSION_HEADER, SESSION_HEADER) if name in headers}
            with contextlib.suppress(httpx.HTTPError):  # the call then fails or times out, and says so
                await self._http.post(self.url, content=reply, headers=self._headers(caller, sent))

        try:
            # The timeout bounds the whole exchange: a trickle of bytes (SSE keep-alives) does not extend it.
            async with (
                asyncio.timeout(self._timeout),
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
            asked = f" (it had asked toolsearch for {', '.join(refused)})" if refused else ""
            raise UpstreamError(f"upstream did not answer {method} in time{asked}") from None
        except httpx.HTTPError as exc:
            raise UpstreamError(f"upstream unreachable: {_describe(exc)}") from None
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
        relay: ProgressRelay | None,
    ) -> dict[str, Any]:
        if response.status_code in (401, 403):
            body = await self._read_capped(response)
            raise UpstreamAuthError(response.status_code, response.headers, body)
        if response.status_code == 404 and session:
            raise _SessionExpired
        content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type == "text/event-stream" and response.status_code == 200:
            return await self._read_sse(response, request_id, answer, relay)
        body = await self._read_capped(response)
        try:
            message = orjson.loads(body) if body else None
        except orjson.JSONDecodeError:
            message = None
        if session and response.status_code == 400 and _names_the_session(message):
            raise _SessionExpired  # how the TypeScript SDK says it does not know the session
        if not isinstance(message, dict) or ("result" not in message and "error" not in message):
            if 400 <= response.status_code < 500:  # a 5xx says the server is down, not which era it speaks
                raise _NotJsonRpc(f"upstream answered HTTP {response.status_code}")
            raise UpstreamError(f"upstream answered HTTP {response.status_code} with no JSON-RPC response")
        return message

    async def _read_capped(self, response: httpx.Response) -> bytes:
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > self._max_response_bytes:
                raise UpstreamError(f"upstream response is larger than {self._max_response_bytes} bytes")
            chunks.append(chunk)
        return b"".join(chunks)

    async def _read_sse(
        self,
        response: httpx.Response,
        request_id: int,
        answer: Callable[[dict[str, Any]], Awaitable[None]],
        relay: ProgressRelay | None,
    ) -> dict[str, Any]:
        """Read SSE events until the response to our request; its progress goes to `relay`, other
        notifications are skipped, requests the upstream sends meanwhile are answered at once."""
        data: list[str] = []
        async for line in _sse_lines(response, self._max_response_bytes):
            if line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
            elif line == "" and data:
                try:
                    message = orjson.loads("\n".join(data))
                except orjson.JSONDecodeError:
                    message = None
                data = []
                if not isinstance(message, dict):
                    continue
                if message.get("id") == request_id and ("result" in message or "error" in message):
                    return message
                if not isinstance(message.get("method"), str):
                    continue
                if relay is None or not relay.offer(message):
                    await answer(message)
        raise UpstreamError("upstream SSE stream ended before the response")


class _NotJsonRpc(UpstreamError):
    """An HTTP error without a JSON-RPC body: for era detection, the mark of a legacy server."""


class _SessionExpired(UpstreamError):
    """The upstream does not know the session a request carried: HTTP 404, or a 400 that says so."""


async def _sse_lines(response: httpx.Response, limit: int) -> AsyncIterator[str]:
    """The lines of an SSE body, split only at CR, LF and CRLF (`aiter_lines` also splits at U+2028,
    U+0085 and more, which JSON text holds unescaped), after at most `limit` bytes in all."""
    partial: list[str] = []
    held_cr = False
    async for text in response.aiter_text():
        if response.num_bytes_downloaded > limit:
            raise UpstreamError(f"upstream response is larger than {limit} bytes")
        if held_cr:
            text = "\r" + text
        held_cr = text.endswith("\r")  # perhaps the first half of a CRLF: decide with the next chunk
        pieces = _SSE_LINE_END.split(text[:-1] if held_cr else text)
        if len(pieces) > 1:
            yield "".join(partial) + pieces[0]
            for line in pieces[1:-1]:
                yield line
            partial.clear()
        partial.append(pieces[-1])
    if held_cr:
        yield "".join(partial)


def _names_the_session(message: Any) -> bool:
    """Whether an error answer is about the session ("No valid session ID provided"), not the request."""
    error = message.get("error") if isinstance(message, dict) else None
    text = error.get("message") if isinstance(error, dict) else None
    return isinstance(text, str) and "session" in text.lower()


def _describe(exc: httpx.HTTPError) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _only_modern(data: Any) -> bool:
    supported = data.get("supported") if isinstance(data, dict) else None
    return isinstance(supported, list) and not any(v in LEGACY_VERSIONS for v in supported)


def _modern_params(params: dict[str, Any], capabilities: Mapping[str, Any] | None = None) -> dict[str, Any]:
    meta = {
        **(params.get("_meta") or {}),
        PROTOCOL_VERSION_META: MODERN_VERSION,
        CLIENT_CAPABILITIES_META: dict(capabilities or {}),
        CLIENT_INFO_META: CLIENT_INFO,
    }
    return {**params, "_meta": meta}


def _modern_headers(method: str, params: Mapping[str, Any]) -> dict[str, str]:
    headers = {VERSION_HEADER: MODERN_VERSION, METHOD_HEADER: method}
    name_key = NAME_BEARING_PARAMS.get(method)
    if name_key is not None and name_key in params:
        headers[NAME_HEADER] = encode_header_value(str(params[name_key]))
    return headers


def _legacy_headers(session: _LegacySession) -> dict[str, str]:
    headers = {VERSION_HEADER: session.version}
    if session.session_id is not None:
        headers[SESSION_HEADER] = session.session_id
    return headers


def _header_paths(schema: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any, Any]]:
    """(property path, x-mcp-header value, declared type) of every annotated property reachable via
    `properties` chains only, as the 2026-07-28 transport defines them."""
    found: list[tuple[tuple[str, ...], Any, Any]] = []
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(properties, Mapping) or len(path) > 16:
        return found
    for key, prop in properties.items():
        if not isinstance(prop, Mapping):
            continue
        if "x-mcp-header" in prop:
            found.append(((*path, str(key)), prop["x-mcp-header"], prop.get("type")))
        found.extend(_header_paths(prop, (*path, str(key))))
    return found


def _has_valid_param_headers(tool: Mapping[str, Any]) -> bool:
    """Tools whose `x-mcp-header` annotations break the spec's rules are left out, as clients must."""
    annotated = _header_paths(tool.get("inputSchema"))
    names = [name for _, name, _ in annotated]
    valid = all(
        isinstance(name, str) and _TOKEN_CHARS.match(name) and kind in ("string", "integer", "boolean")
        for _, name, kind in annotated
    ) and len({str(n).lower() for n in names}) == len(names)
    if not valid:
        logger.warning("left out upstream tool %r: invalid x-mcp-header annotation", tool.get("name"))
    return valid


def _param_headers(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> dict[str, str]:
    """`Mcp-Param-{Name}` headers mirroring the arguments at annotated properties."""
    headers: dict[str, str] = {}
    for path, name, _ in _header_paths(schema):
        value: Any = arguments
        for key in path:
            value = value.get(key) if isinstance(value, Mapping) else None
        if value is None:
            continue
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, int) and abs(value) <= _MAX_SAFE_INTEGER:
            text = str(value)
        elif isinstance(value, str):
            text = value
        else:
            continue
        headers[f"Mcp-Param-{name}"] = encode_header_value(text)
    return headers
