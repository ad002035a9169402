"""Streamable HTTP transport: `POST /mcp` (stateless, both protocol eras), OAuth discovery pass-through,
and health endpoints."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from fnmatch import fnmatchcase
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.responses import Response, StreamingResponse
from prometheus_client import CONTENT_TYPE_LATEST

from toolsearch.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    JsonRpcError,
    Message,
    error_response,
    parse_message,
    result_response,
)
from toolsearch.oauth import (
    PROTECTED_RESOURCE_PATH,
    challenge_for,
    protected_resource_document,
    public_resource,
)
from toolsearch.proxy import Proxy
from toolsearch.server import RequestContext
from toolsearch.settings import Settings
from toolsearch.telemetry import Telemetry
from toolsearch.upstream import CallerHeaders, ProgressRelay, UpstreamAuthError, UpstreamError

logger = logging.getLogger(__name__)

_READY_CACHE_SECONDS = 2.0
_PASSED_AUTH_HEADERS = ("www-authenticate", "content-type")
_ACCEPTS_JSON = {"application/json", "application/*", "*/*"}


def _json(value: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(value), status_code=status, media_type="application/json")


def _rpc_error(error: JsonRpcError, request_id: Any = None) -> Response:
    return _json(error_response(request_id, error), error.http_status)


class _BodyTooLarge(Exception):
    pass


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _BodyTooLarge
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _BodyTooLarge
        chunks.append(chunk)
    return b"".join(chunks)


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


def _progress_token(message: Message, request: Request) -> str | int | None:
    """The caller's `progressToken` of a `tools/call`, when it can take an SSE answer."""
    meta = message.params.get("_meta")
    token = meta.get("progressToken") if isinstance(meta, dict) and message.method == "tools/call" else None
    if isinstance(token, bool) or not isinstance(token, str | int):
        return None
    accept = request.headers.get("accept", "")
    return token if "text/event-stream" in accept or "*/*" in accept else None


def _event(message: bytes) -> bytes:
    return b"event: message\ndata: " + message + b"\n\n"


async def _streamed_with_progress(answering: asyncio.Future[Response], relay: ProgressRelay) -> Response:
    """The answer as JSON if it comes before any progress (keeping its HTTP status); else an SSE
    stream of the upstream's progress notifications, then the answer."""
    waiting = asyncio.ensure_future(relay.queue.get())
    await asyncio.wait({answering, waiting}, return_when=asyncio.FIRST_COMPLETED)
    if not waiting.done():
        waiting.cancel()
        return answering.result()

    async def events() -> AsyncIterator[bytes]:
        nonlocal waiting
        while waiting.done():
            yield _event(orjson.dumps(waiting.result()))
            waiting = asyncio.ensure_future(relay.queue.get())
            await asyncio.wait({answering, waiting}, return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()
        while not relay.queue.empty():
            yield _event(orjson.dumps(relay.queue.get_nowait()))
        yield _event(bytes((await answering).body))

    return StreamingResponse(events(), media_type="text/event-stream")


def create_app(settings: Settings, telemetry: Telemetry | None = None) -> FastAPI:
    """The HTTP application; the proxy's parts are created when it starts and closed when it stops."""
    proxy = Proxy.from_settings(settings, telemetry)
    ready = {"at": 0.0, "ok": False}

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        await proxy.aclose()

    app = FastAPI(title="toolsearch", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan)
    app.state.proxy = proxy

    def origin_allowed(request: Request) -> bool:
        origin = request.headers.get("origin")
        return origin is None or any(fnmatchcase(origin, pattern) for pattern in settings.allowed_origins)

    @app.post(settings.path)
    async def mcp_post(request: Request) -> Response:
        if not origin_allowed(request):
            return _rpc_error(
                JsonRpcError(INVALID_REQUEST, "Forbidden: this Origin is not allowed", http_status=403)
            )
        refused = _media_refusal(request)
        if refused is not None:
            return _rpc_error(refused)
        try:
            body = await _read_body(request, settings.max_request_bytes)
        except _BodyTooLarge:
            return _rpc_error(
                JsonRpcError(
                    INVALID_REQUEST,
                    f"Request body too large: the limit is {settings.max_request_bytes} bytes "
                    "(--max-request-bytes)",
                    http_status=413,
                )
            )
        try:
            message = parse_message(body)
        except JsonRpcError as error:
            return _rpc_error(error, error.request_id)
        if message.is_response or message.is_notification:
            return Response(status_code=202)
        token = _progress_token(message, request)
        if token is None:
            return await answer(message, request)
        relay = ProgressRelay(token)
        with relay.active():
            answering = asyncio.ensure_future(answer(message, request))
        return await _streamed_with_progress(answering, relay)

    async def answer(message: Message, request: Request) -> Response:
        started = time.perf_counter()
        context = RequestContext(
            caller=CallerHeaders.from_headers(request.headers),
            headers=request.headers,
            trace_context=Telemetry.extract(request.headers),
        )
        try:
            result = await proxy.server.handle(message, context)
        except JsonRpcError as error:
            return _rpc_error(error, message.id)
        except UpstreamAuthError as refused:
            headers = {k: v for k, v in refused.headers.items() if k.lower() in _PASSED_AUTH_HEADERS}
            resource = resource_of(request)
            headers = {
                name: challenge_for(value, resource) if name.lower() == "www-authenticate" else value
                for name, value in headers.items()
            }
            return Response(refused.body, status_code=refused.status, headers=headers)
        except Exception:
            logger.exception("request failed inside toolsearch", extra={"method": message.method})
            error = JsonRpcError(
                INTERNAL_ERROR, "Internal error in toolsearch; the request was not completed"
            )
            return _rpc_error(error, message.id)
        logger.debug(
            "request",
            extra={"method": message.method, "duration_ms": round((time.perf_counter() - started) * 1000, 1)},
        )
        return _json(result_response(message.id, result))

    @app.api_route(settings.path, methods=["GET", "DELETE", "PUT", "PATCH"])
    async def mcp_other(request: Request) -> Response:
        error = JsonRpcError(
            INVALID_REQUEST, "Method Not Allowed: send JSON-RPC messages with POST", http_status=405
        )
        response = _rpc_error(error)
        response.headers["Allow"] = "POST"
        return response

    def resource_of(request: Request) -> str:
        return public_resource(
            settings.public_url,
            settings.path,
            request.url.scheme,
            request.headers,
            trust_forwarded=settings.trust_forwarded_headers,
        )

    @app.get(PROTECTED_RESOURCE_PATH + "{rest:path}")
    async def protected_resource(request: Request) -> Response:
        """The upstream's protected resource metadata, naming the proxy as the resource."""
        try:
            document = await proxy.upstream.protected_resource_metadata()
        except UpstreamError as exc:
            return _json({"error": "upstream_unavailable", "error_description": str(exc)}, 502)
        if document is None:
            return _json(
                {"error": "not_found", "error_description": "the upstream is not OAuth-protected"}, 404
            )
        return _json(protected_resource_document(document, resource_of(request)))

    @app.get("/.well-known/oauth-authorization-server{rest:path}")
    async def oauth_discovery(request: Request) -> Response:
        try:
            upstream = await proxy.upstream.get_well_known(request.url.path)
        except UpstreamError as exc:
            return _json({"error": "upstream_unavailable", "error_description": str(exc)}, 502)
        headers = {"content-type": upstream.headers.get("content-type", "application/json")}
        return Response(upstream.content, status_code=upstream.status_code, headers=headers)

    @app.get("/metrics")
    async def metrics() -> Response:
        return Response(proxy.telemetry.prometheus_text(), media_type=CONTENT_TYPE_LATEST)

    if settings.stats:

        @app.get("/stats")
        async def stats() -> Response:
            return _json(proxy.outcomes.report())

    @app.get("/healthz")
    async def healthz() -> Response:
        return _json({"status": "ok"})

    @app.get("/readyz")
    async def readyz() -> Response:
        now = time.monotonic()
        if now - ready["at"] > _READY_CACHE_SECONDS:
            ready["ok"] = await proxy.upstream.reachable()
            ready["at"] = now
        # A Redis outage degrades sharing, not serving: it shows here but does not fail readiness.
        store = await proxy.catalogs.health()
        if ready["ok"]:
            return _json({"status": "ready", "upstream": "reachable", "catalog_store": store})
        return _json({"status": "not ready", "upstream": "unreachable", "catalog_store": store}, 503)

    return app
