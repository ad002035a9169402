"""The MCP methods toolsearch answers, whatever the transport: one request in, one result out."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from opentelemetry.context import Context
from opentelemetry.trace import SpanKind

from toolsearch.catalog.service import Catalog, CatalogService
from toolsearch.mcp.caller import CallerHeaders, CallerInput
from toolsearch.mcp.errors import UpstreamAuthError, UpstreamError, UpstreamRpcError
from toolsearch.mcp.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    JsonRpcError,
    Message,
    RequestId,
    error_response,
    result_response,
)
from toolsearch.mcp.protocol import (
    CACHED_RESULTS,
    CLIENT_CAPABILITIES_META,
    FORWARDED_METHODS,
    SERVER_INFO,
    SUPPORTED_VERSIONS,
    Era,
    check_legacy_version_header,
    check_modern_request,
    complete_result,
    forwarded_result,
    method_not_found,
    modern_status,
    negotiate_legacy_version,
    offered_capabilities,
    request_era,
)
from toolsearch.metatools.service import MetaTools
from toolsearch.telemetry import METHOD, OUTCOME, REQUEST_ID, TOOL, Telemetry, elapsed
from toolsearch.untrusted import clean_text
from toolsearch.upstream.client import UpstreamClient

logger = logging.getLogger(__name__)

GUIDANCE: Final = (
    "This server gives access to a large catalog of tools through a few meta-tools. To act: call "
    "search_tools with the task in plain words (several phrasings in `queries` help), pick the best match, "
    "then call it by its exact name with call_read_tool (read-only tools), call_read_tools (several "
    "read-only calls at once) or call_write_tool (anything that changes something), passing arguments "
    "that match the input schema shown. Use describe_tool for a tool's full definition. If a call "
    "returns an error, read it: it says how to fix the call."
)


@dataclass(frozen=True, slots=True)
class RequestContext:
    caller: CallerHeaders
    headers: Mapping[str, str] | None
    """HTTP request headers (lower-case names); None on stdio, where there are none to check."""
    trace_context: Context | None = None
    """The caller's trace, continued by this request's span."""


@dataclass(frozen=True, slots=True)
class Reply:
    """What one request comes to, for a transport to encode: its result, or a JSON-RPC error, which
    for the upstream's refusal of the caller's credentials comes with that `refusal`, for HTTP to pass
    on to the caller as it came (so that OAuth clients see the challenge)."""

    request_id: RequestId | None
    result: dict[str, Any] = field(default_factory=dict)
    error: JsonRpcError | None = None
    refusal: UpstreamAuthError | None = None

    @classmethod
    def refused(cls, request_id: RequestId | None, refusal: UpstreamAuthError) -> Reply:
        error = JsonRpcError(
            INTERNAL_ERROR,
            f"The upstream refused the request (HTTP {refusal.status}): it wants credentials, and there "
            "are none to pass on",
        )
        return cls(request_id, error=error, refusal=refusal)

    @property
    def http_status(self) -> int:
        return self.error.http_status if self.error is not None else 200

    def message(self) -> dict[str, Any]:
        """The JSON-RPC response."""
        if self.error is not None:
            return error_response(self.request_id, self.error)
        return result_response(self.request_id, self.result)


class McpServer:
    def __init__(
        self,
        metatools: MetaTools,
        catalogs: CatalogService,
        upstream: UpstreamClient,
        *,
        max_instructions: int,
        catalog_ttl: float,
        telemetry: Telemetry,
    ) -> None:
        self._telemetry = telemetry
        self._metatools = metatools
        self._catalogs = catalogs
        self._upstream = upstream
        self._max_instructions = max_instructions
        self._ttl_ms = int(catalog_ttl * 1000)

    async def handle(self, message: Message, context: RequestContext) -> Reply:
        """What one request comes to; it never raises (a failure inside toolsearch is an internal error)."""
        method = message.method or ""
        tool = message.params.get("name") if method == "tools/call" else None
        attributes = {METHOD: method, REQUEST_ID: str(message.id)}
        if isinstance(tool, str):
            attributes[TOOL] = tool
        # Metrics name meta-tools only: upstream tool names would make their cardinality unbounded.
        metric_tool = tool if self._metatools.is_meta_tool(tool) else "(upstream)" if tool else ""
        started = time.perf_counter()
        span_name = f"{method} {tool}" if isinstance(tool, str) else method
        with self._telemetry.span(
            span_name, kind=SpanKind.SERVER, context=context.trace_context, attributes=attributes
        ) as span:
            reply, outcome, failure = await self._reply(message, context)
            if failure:
                Telemetry.fail(span, failure)
            self._telemetry.server_duration.record(
                elapsed(started), {METHOD: method, TOOL: metric_tool, OUTCOME: outcome}
            )
        logger.debug("request", extra={"method": method, "duration_ms": round(elapsed(started) * 1000, 1)})
        return reply

    async def _reply(self, message: Message, context: RequestContext) -> tuple[Reply, str, str]:
        """The reply, its outcome for metrics, and what failed for the span ("" when nothing did)."""
        try:
            result = await self._answer(message.method or "", message.params, context)
        except JsonRpcError as error:
            return Reply(message.id, error=error), "rpc_error", str(error.code)
        except UpstreamAuthError as refused:
            return Reply.refused(message.id, refused), "unauthorized", str(refused.status)
        except Exception as exc:
            logger.exception("request failed inside toolsearch", extra={"method": message.method})
            failed = JsonRpcError(
                INTERNAL_ERROR, "Internal error in toolsearch; the request was not completed"
            )
            return Reply(message.id, error=failed), "internal_error", type(exc).__name__
        if result.get("isError"):
            return Reply(message.id, result=result), "tool_error", "tool_error"
        return Reply(message.id, result=result), "ok", ""

    async def _answer(self, method: str, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        era: Era = request_era(method, params, context.headers)
        try:
            if era == "modern":
                check_modern_request(method, params, context.headers)
            elif method != "initialize":
                check_legacy_version_header(context.headers)
            return complete_result(await self._dispatch(method, params, era, context), era)
        except JsonRpcError as error:
            if era == "modern":
                error.http_status = modern_status(error.code, error.http_status)
            raise

    async def _dispatch(
        self, method: str, params: dict[str, Any], era: Era, context: RequestContext
    ) -> dict[str, Any]:
        if method == "initialize":
            return await self._initialize(params, context)
        if method == "server/discover":
            return await self._discover(context)
        if method == "tools/list":
            if params.get("cursor") is not None:
                # One page holds every tool shown, so no cursor is one this server gave out.
                raise JsonRpcError(INVALID_PARAMS, "Invalid params: unknown cursor; tools/list has one page")
            return await self._tools_list(era, context)
        if method == "tools/call":
            return await self._tools_call(params, era, context)
        if method == "ping":
            return {}
        if method in FORWARDED_METHODS:
            return await self._forwarded(method, params, era, context)
        raise method_not_found(method, era)

    async def _initialize(self, params: Mapping[str, Any], context: RequestContext) -> dict[str, Any]:
        if not isinstance(params.get("protocolVersion"), str):
            raise JsonRpcError(INVALID_PARAMS, 'Invalid params: initialize needs "protocolVersion", a string')
        return {
            "protocolVersion": negotiate_legacy_version(params.get("protocolVersion")),
            "capabilities": await self._capabilities(context, "legacy"),
            "serverInfo": SERVER_INFO,
            "instructions": await self._instructions(context),
        }

    async def _discover(self, context: RequestContext) -> dict[str, Any]:
        return {
            "supportedVersions": list(SUPPORTED_VERSIONS),
            "capabilities": await self._capabilities(context, "modern"),
            "instructions": await self._instructions(context),
            "ttlMs": self._ttl_ms,
            "cacheScope": "private",
        }

    async def _tools_list(self, era: Era, context: RequestContext) -> dict[str, Any]:
        catalog = await self._catalog_or_none(context)
        result: dict[str, Any] = {"tools": self._metatools.listed_tools(catalog)}
        if era == "modern":
            result.update(ttlMs=self._ttl_ms, cacheScope="private")
        return result

    async def _tools_call(
        self, params: Mapping[str, Any], era: Era, context: RequestContext
    ) -> dict[str, Any]:
        name = params.get("name")
        if not isinstance(name, str) or not name:
            raise JsonRpcError(INVALID_PARAMS, 'Invalid params: tools/call needs "name", a non-empty string')
        caller_input = _caller_input(params) if era == "modern" else None
        return await self._metatools.call(name, params.get("arguments"), context.caller, caller_input)

    async def _forwarded(
        self, method: str, params: Mapping[str, Any], era: Era, context: RequestContext
    ) -> dict[str, Any]:
        """Resources, prompts, completion and the log level: the upstream's, as it answers them for
        this caller, when toolsearch offers them."""
        if FORWARDED_METHODS[method] not in await self._capabilities(context, era):
            raise method_not_found(method, era)
        capabilities = _caller_input(params).capabilities if era == "modern" else None
        try:
            result = await self._upstream.forward(context.caller, method, params, capabilities)
        except UpstreamRpcError as exc:
            raise JsonRpcError(exc.code, exc.message, exc.data) from None
        except UpstreamError as exc:
            raise JsonRpcError(INTERNAL_ERROR, f"The upstream could not answer {method}: {exc}") from None
        result = forwarded_result(method, result, era)
        if era == "modern" and method in CACHED_RESULTS:
            result.setdefault("ttlMs", self._ttl_ms)
            result.setdefault("cacheScope", "private")
        return result

    async def _capabilities(self, context: RequestContext, era: Era) -> dict[str, Any]:
        """What toolsearch offers a caller of `era`; an unreachable upstream adds nothing to its tools."""
        try:
            upstream = await self._upstream.server_capabilities(context.caller)
            upstream_era = await self._upstream.era(context.caller)
        except UpstreamError as exc:
            logger.warning("upstream capabilities unavailable: %s", type(exc).__name__)
            return offered_capabilities({}, era, "legacy")
        return offered_capabilities(upstream, era, upstream_era)

    async def _instructions(self, context: RequestContext) -> str:
        catalog = await self._catalog_or_none(context)
        upstream = catalog.instructions if catalog is not None else None
        if upstream:
            upstream = clean_text(upstream[: self._max_instructions])
        text = GUIDANCE + (f"\n\nInstructions of the upstream server:\n{upstream}" if upstream else "")
        if len(text) <= self._max_instructions:
            return text
        note = f"\n[Instructions cut at {self._max_instructions} characters.]"
        return (
            text[: max(0, self._max_instructions - len(note))] + note
            if self._max_instructions > len(note)
            else ""
        )

    async def _catalog_or_none(self, context: RequestContext) -> Catalog | None:
        """The caller's catalog; an unreachable upstream degrades the answer, a refused token does not."""
        try:
            return await self._catalogs.get(context.caller)
        except UpstreamError as exc:
            logger.warning("catalog unavailable: %s", type(exc).__name__)
            return None


def _caller_input(params: Mapping[str, Any]) -> CallerInput:
    """What of a 2026-07-28 `tools/call` goes upstream besides the arguments (see `CallerInput`)."""
    capabilities = params["_meta"][CLIENT_CAPABILITIES_META]
    responses = params.get("inputResponses")
    state = params.get("requestState")
    if responses is not None and not isinstance(responses, dict):
        raise JsonRpcError(INVALID_PARAMS, 'Invalid params: "inputResponses" must be an object')
    if state is not None and not isinstance(state, str):
        raise JsonRpcError(INVALID_PARAMS, 'Invalid params: "requestState" must be a string')
    return CallerInput(
        capabilities=capabilities if isinstance(capabilities, dict) else None,
        input_responses=responses,
        request_state=state,
    )
