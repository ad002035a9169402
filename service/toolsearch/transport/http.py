"""Streamable HTTP transport: `POST /mcp` (stateless, both protocol eras), OAuth discovery pass-through,
and health endpoints.

The endpoints are plain functions of the request; the proxy's parts are the application's state,
created when it is and closed when it stops. What guards the MCP endpoint before a request is read
(the Origin check, the body limit) is ASGI middleware.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any, Final

import orjson
from cachetools import TTLCache
from fastapi import FastAPI, Request
from fastapi.responses import Response, StreamingResponse
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from toolsearch.mcp.caller import CallerHeaders, CallRelay
from toolsearch.mcp.errors import UpstreamAuthError, UpstreamError
from toolsearch.mcp.jsonrpc import INVALID_REQUEST, JsonRpcError, error_response, parse_message
from toolsearch.mcp.jsonrpc import Message as JsonRpcMessage
from toolsearch.mcp.oauth import (
    PROTECTED_RESOURCE_PATH,
    challenge_for,
    protected_resource_document,
    public_resource,
)
from toolsearch.mcp.protocol import call_log_level, request_era
from toolsearch.proxy import Proxy, check_settings, settings_profile
from toolsearch.server import RequestContext
from toolsearch.settings import Settings
from toolsearch.telemetry import Telemetry

if TYPE_CHECKING:
    from toolsearch.search.profile import Profile

_READY_CACHE_SECONDS: Final = 2.0
"""How long a readiness probe's look at the upstream is reused: probes must not load the upstream."""
_PASSED_AUTH_HEADERS: Final = ("www-authenticate", "content-type")
_ACCEPTS_JSON: Final = {"application/json", "application/*", "*/*"}


def create_app(settings: Settings, telemetry: Telemetry | None = None) -> FastAPI:
    """The HTTP application. Settings it cannot start with are refused here (ValueError), and its
    search profile loaded; the proxy is wired when the app starts, on its event loop, and closed
    when it stops (`_lifespan`)."""
    check_settings(settings)
    profile = settings_profile(settings)
    app = FastAPI(
        title="toolsearch",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        lifespan=functools.partial(_lifespan, settings=settings, profile=profile, telemetry=telemetry),
    )
    app.state.upstream_reachable = TTLCache[str, bool](1, _READY_CACHE_SECONDS, timer=time.monotonic)
    app.add_api_route(settings.path, mcp_post, methods=["POST"])
    app.add_api_route(settings.path, mcp_other, methods=["GET", "DELETE", "PUT", "PATCH"])
    app.add_api_route(PROTECTED_RESOURCE_PATH + "{rest:path}", protected_resource, methods=["GET"])
    app.add_api_route("/.well-known/oauth-authorization-server{rest:path}", oauth_discovery, methods=["GET"])
    app.add_api_route("/metrics", metrics, methods=["GET"])
    if settings.stats:
        app.add_api_route("/stats", stats, methods=["GET"])
    app.add_api_route("/healthz", healthz, methods=["GET"])
    app.add_api_route("/readyz", readyz, methods=["GET"])
    # The last added runs first: a forbidden Origin is refused before its body is read.
    app.add_middleware(BodyLimit, path=settings.path, limit=settings.max_request_bytes)
    app.add_middleware(OriginCheck, path=settings.path, allowed=settings.allowed_origins)
    return app


@asynccontextmanager
async def _lifespan(
    app: FastAPI, *, settings: Settings, profile: Profile | None, telemetry: Telemetry | None
) -> AsyncIterator[None]:
    proxy = app.state.proxy = Proxy.wired(settings, profile, telemetry)
    try:
        yield
    finally:
        await proxy.aclose()


def _proxy_of(app: Any) -> Proxy:
    proxy: Proxy = app.state.proxy
    return proxy


# -- middleware ------------------------------------------------------------------------------------


class OriginCheck:
    """Refuses requests to the MCP endpoint whose `Origin` matches none of the allowed patterns
    (DNS rebinding); requests without one (non-browser clients) pass."""

    def __init__(self, app: ASGIApp, *, path: str, allowed: Sequence[str]) -> None:
        self._app = app
        self._path = path
        self._allowed = tuple(allowed)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == self._path:
            origin = Headers(scope=scope).get("origin")
            if origin is not None and not any(fnmatchcase(origin, pattern) for pattern in self._allowed):
                refused = JsonRpcError(
                    INVALID_REQUEST, "Forbidden: this Origin is not allowed", http_status=403
                )
                await _rpc_error(refused)(scope, receive, send)
                return
        await self._app(scope, receive, send)


class _BodyTooLarge(Exception):
    pass


class BodyLimit:
    """Answers 413 for a request to the MCP endpoint whose body passes `limit` bytes, declared or as
    it arrives: the endpoint reads the body when it needs it, and never past the limit."""

    def __init__(self, app: ASGIApp, *, path: str, limit: int) -> None:
        self._app = app
        self._path = path
        self._limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != self._path:
            await self._app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length")
        received = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal received
            if declared is not None and declared.isdigit() and int(declared) > self._limit:
                raise _BodyTooLarge
            message = await receive()
            received += len(message.get("body", b""))
            if received > self._limit:
                raise _BodyTooLarge
            return message

        async def watched_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self._app(scope, limited_receive, watched_send)
        except _BodyTooLarge:
            if started:
                raise
            too_large = JsonRpcError(
                INVALID_REQUEST,
                f"Request body too large: the limit is {self._limit} bytes (--max-request-bytes)",
                http_status=413,
            )
            await _rpc_error(too_large)(scope, receive, send)


# -- the MCP endpoint ------------------------------------------------------------------------------


async def mcp_post(request: Request) -> Response:
    refused = _media_refusal(request)
    if refused is not None:
        return _rpc_error(refused)
    try:
        message = parse_message(await request.body())
    except JsonRpcError as error:
        return _rpc_error(error, error.request_id)
    if message.is_response or message.is_notification:
        return Response(status_code=202)
    relay = _call_relay(message, request)
    if relay is None:
        return await _answer(message, request)
    with relay.active():
        answering = asyncio.ensure_future(_answer(message, request))
    return await _streamed_with_notifications(answering, relay)


async def mcp_other(request: Request) -> Response:
    error = JsonRpcError(
        INVALID_REQUEST, "Method Not Allowed: send JSON-RPC messages with POST", http_status=405
    )
    response = _rpc_error(error)
    response.headers["Allow"] = "POST"
    return response


async def _answer(message: JsonRpcMessage, request: Request) -> Response:
    context = RequestContext(
        caller=CallerHeaders.from_headers(request.headers),
        headers=request.headers,
        trace_context=Telemetry.extract(request.headers),
    )
    reply = await _proxy_of(request.app).server.handle(message, context)
    if reply.refusal is not None:
        return _passed_refusal(reply.refusal, request)
    return _json(reply.message(), reply.http_status)


def _passed_refusal(refused: UpstreamAuthError, request: Request) -> Response:
    """The upstream's 401/403 as it came, its challenge naming the proxy as the resource."""
    resource = _resource_of(request)
    headers = {
        name: challenge_for(value, resource) if name.lower() == "www-authenticate" else value
        for name, value in refused.headers.items()
        if name.lower() in _PASSED_AUTH_HEADERS
    }
    return Response(refused.body, status_code=refused.status, headers=headers)


def _media_refusal(request: Request) -> JsonRpcError | None:
    """406 when the caller's `Accept` rules out JSON (the only thing answered), 415 for a body that
    says it is not JSON. A request without either header is taken as JSON, as HTTP allows."""
    accept = request.headers.get("accept")
    if accept is not None and not _ACCEPTS_JSON & {
        part.split(";")[0].strip().lower() for part in accept.split(",")
    }:
        return JsonRpcError(
            INVALID_REQUEST, "Not Acceptable: the client must accept application/json", http_status=406
        )
    content_type = request.headers.get("content-type")
    if content_type is not None and content_type.split(";")[0].strip().lower() != "application/json":
        return JsonRpcError(
            INVALID_REQUEST, "Unsupported Media Type: Content-Type must be application/json", http_status=415
        )
    return None


def _call_relay(message: JsonRpcMessage, request: Request) -> CallRelay | None:
    """What a `tools/call` streams back, when its caller can take an SSE answer and asked for
    something to stream: progress (a `progressToken`) or log messages."""
    accept = request.headers.get("accept", "")
    if message.method != "tools/call" or not ("text/event-stream" in accept or "*/*" in accept):
        return None
    meta = message.params.get("_meta")
    token = meta.get("progressToken") if isinstance(meta, dict) else None
    if isinstance(token, bool) or not isinstance(token, str | int):
        token = None
    log_level = call_log_level(request_era(message.method, message.params, request.headers), message.params)
    return CallRelay(token, log_level) if token is not None or log_level is not None else None


def _event(message: bytes) -> bytes:
    return b"event: message\ndata: " + message + b"\n\n"


async def _streamed_with_notifications(answering: asyncio.Future[Response], relay: CallRelay) -> Response:
    """The answer as JSON if it comes before any notification (keeping its HTTP status); else an SSE
    stream of the upstream's notifications for the caller (progress, log messages), then the answer."""
    waiting = asyncio.ensure_future(relay.queue.get())
    await _first_done(answering, waiting)
    if not waiting.done():
        waiting.cancel()
        return answering.result()

    async def events() -> AsyncIterator[bytes]:
        nonlocal waiting
        while waiting.done():
            yield _event(orjson.dumps(waiting.result()))
            waiting = asyncio.ensure_future(relay.queue.get())
            await _first_done(answering, waiting)
        waiting.cancel()
        while not relay.queue.empty():
            yield _event(orjson.dumps(relay.queue.get_nowait()))
        yield _event(bytes((await answering).body))

    return StreamingResponse(events(), media_type="text/event-stream")


async def _first_done(*futures: asyncio.Future[Any]) -> None:
    await asyncio.wait(futures, return_when=asyncio.FIRST_COMPLETED)


# -- OAuth discovery, metrics, health --------------------------------------------------------------


async def protected_resource(request: Request) -> Response:
    """The upstream's protected resource metadata, naming the proxy as the resource."""
    try:
        document = await _proxy_of(request.app).upstream.protected_resource_metadata()
    except UpstreamError as exc:
        return _json({"error": "upstream_unavailable", "error_description": str(exc)}, 502)
    if document is None:
        return _json({"error": "not_found", "error_description": "the upstream is not OAuth-protected"}, 404)
    return _json(protected_resource_document(document, _resource_of(request)))


async def oauth_discovery(request: Request) -> Response:
    """The upstream's authorization server metadata, as it answers it."""
    try:
        upstream = await _proxy_of(request.app).upstream.get_well_known(request.url.path)
    except UpstreamError as exc:
        return _json({"error": "upstream_unavailable", "error_description": str(exc)}, 502)
    headers = {"content-type": upstream.headers.get("content-type", "application/json")}
    return Response(upstream.content, status_code=upstream.status_code, headers=headers)


async def metrics(request: Request) -> Response:
    return Response(_proxy_of(request.app).telemetry.prometheus_text(), media_type=CONTENT_TYPE_LATEST)


async def stats(request: Request) -> Response:
    proxy = _proxy_of(request.app)
    summary = proxy.outcomes.report()
    if proxy.learning is not None:
        summary["counts"]["learning"] = proxy.learning.counts()
    return _json(summary)


async def healthz() -> Response:
    return _json({"status": "ok"})


async def readyz(request: Request) -> Response:
    """Ready while the upstream answers HTTP. A Redis outage degrades sharing, not serving: it shows
    here but does not fail readiness."""
    proxy = _proxy_of(request.app)
    cache: TTLCache[str, bool] = request.app.state.upstream_reachable
    reachable = cache.get("upstream")
    if reachable is None:
        reachable = cache["upstream"] = await proxy.upstream.reachable()
    store = {**await proxy.backend.health(), **proxy.catalogs.health()}
    if reachable:
        return _json({"status": "ready", "upstream": "reachable", "catalog_store": store})
    return _json({"status": "not ready", "upstream": "unreachable", "catalog_store": store}, 503)


def _resource_of(request: Request) -> str:
    settings = _proxy_of(request.app).settings
    return public_resource(
        settings.public_url,
        settings.path,
        request.url.scheme,
        request.headers,
        trust_forwarded=settings.trust_forwarded_headers,
    )


def _json(value: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(value), status_code=status, media_type="application/json")


def _rpc_error(error: JsonRpcError, request_id: Any = None) -> Response:
    return _json(error_response(request_id, error), error.http_status)
