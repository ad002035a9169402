"""The client toward the upstream MCP server (the gateway): it lists and calls tools for a caller.

It speaks both protocol eras (it tries 2026-07-28 `server/discover` once, and falls back to the
`initialize` handshake for legacy servers, keeping one session per caller token in `sessions`),
and follows `nextCursor` a bounded number of pages. The requests themselves are `exchange`'s; what
each era sends is `protocol`'s. It forwards only what `CallerHeaders` holds of the caller's request,
and knows nothing of catalogs or search: which of the listed tools a caller sees is `catalog`'s.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Mapping
from typing import Any

import httpx
import orjson

from toolsearch import __version__
from toolsearch.mcp.caller import CallerHeaders, CallerInput, CallRelay
from toolsearch.mcp.errors import UpstreamError, UpstreamRpcError
from toolsearch.mcp.headers import param_headers
from toolsearch.mcp.jsonrpc import UNSUPPORTED_PROTOCOL_VERSION
from toolsearch.mcp.oauth import PROTECTED_RESOURCE_PATH
from toolsearch.mcp.protocol import (
    CLIENT_INFO,
    LEGACY_VERSIONS,
    MODERN_VERSION,
    SESSION_HEADER,
    Era,
    modern_headers,
    modern_params,
    relayed_meta,
    speaks_only_modern,
)
from toolsearch.runtime import Supervisor
from toolsearch.telemetry import Telemetry
from toolsearch.upstream.exchange import Exchange, NotJsonRpc, SessionExpired, ToolsChanged, describe
from toolsearch.upstream.sessions import LegacySession, LegacySessions

logger = logging.getLogger(__name__)


class UpstreamClient:
    """Streamable-HTTP MCP client for one upstream URL, shared by every caller of this process."""

    def __init__(
        self,
        url: str,
        *,
        supervisor: Supervisor,
        timeout: float = 60.0,
        connect_timeout: float = 5.0,
        max_pages: int = 100,
        max_response_bytes: int = 64 * 1024 * 1024,
        telemetry: Telemetry | None = None,
    ) -> None:
        self.url = url
        self._max_pages = max_pages
        self._http = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout, connect=connect_timeout),
            # An idle connection is dropped before the common 5 s server idle timeout (uvicorn's,
            # Node's): reusing one the server is closing at that moment fails the request.
            limits=httpx.Limits(max_connections=200, max_keepalive_connections=50, keepalive_expiry=4.0),
            follow_redirects=False,
            headers={"User-Agent": f"toolsearch/{__version__}"},
        )
        self._exchange = Exchange(
            url,
            self._http,
            timeout=timeout,
            max_response_bytes=max_response_bytes,
            telemetry=telemetry or Telemetry(use_environment=False),
        )
        self._era: Era | None = None
        self._sessions = LegacySessions(supervisor)

    @property
    def on_tools_changed(self) -> ToolsChanged | None:
        """Called when the upstream says, on a response stream, that a caller's tools changed."""
        return self._exchange.on_tools_changed

    @on_tools_changed.setter
    def on_tools_changed(self, callback: ToolsChanged | None) -> None:
        self._exchange.on_tools_changed = callback

    async def aclose(self) -> None:
        await self._http.aclose()

    # -- public operations -------------------------------------------------------------------------

    async def era(self, caller: CallerHeaders) -> Era:
        """The era the upstream speaks: probed once with `server/discover`, with this caller's
        credentials (the era is a property of the server, not of a caller)."""
        if self._era is not None:
            return self._era
        try:
            result = await self._exchange.request(
                caller, "server/discover", modern_params({}), modern_headers("server/discover", {})
            )
        except UpstreamRpcError as exc:
            if exc.code == UNSUPPORTED_PROTOCOL_VERSION and speaks_only_modern(exc.data):
                raise UpstreamError(
                    f"the upstream speaks only protocol versions {exc.data.get('supported')}, "
                    "which toolsearch does not support"
                ) from None
            self._era = "legacy"
        except NotJsonRpc:
            self._era = "legacy"
        else:
            versions = result.get("supportedVersions")
            self._era = "modern" if isinstance(versions, list) and MODERN_VERSION in versions else "legacy"
        logger.info("upstream speaks the %s protocol era", self._era)
        return self._era

    async def instructions(self, caller: CallerHeaders) -> str | None:
        """The upstream's own instructions for this caller."""
        era = await self.era(caller)
        if era == "modern":
            result = await self._request(era, caller, "server/discover", {})
        else:
            result = {"instructions": (await self._legacy_session(caller)).instructions}
        instructions = result.get("instructions")
        return instructions if isinstance(instructions, str) and instructions else None

    async def tool_pages(self, caller: CallerHeaders) -> AsyncGenerator[list[Any]]:
        """The pages of `tools/list` for this caller, following `nextCursor` until it ends, repeats
        itself or passes `max_pages`; what the pages hold is the caller's of this client to judge."""
        era = await self.era(caller)
        cursor: str | None = None
        seen_cursors: set[str] = set()
        for _ in range(self._max_pages):
            params = {"cursor": cursor} if cursor is not None else {}
            result = await self._request(era, caller, "tools/list", params)
            page = result.get("tools")
            if not isinstance(page, list):
                raise UpstreamError("upstream tools/list result has no 'tools' list")
            yield page
            cursor = result.get("nextCursor")
            if not isinstance(cursor, str) or not cursor or cursor in seen_cursors:
                return
            seen_cursors.add(cursor)
        logger.warning("upstream tools/list had more than %d pages; using the first ones", self._max_pages)

    async def call_tool(
        self,
        caller: CallerHeaders,
        name: str,
        arguments: Mapping[str, Any],
        input_schema: Mapping[str, Any] | None = None,
        caller_input: CallerInput | None = None,
    ) -> dict[str, Any]:
        """Call one tool by its real name; the upstream's result is returned unchanged."""
        era = await self.era(caller)
        params: dict[str, Any] = {"name": name, "arguments": dict(arguments)}
        if era == "modern" and caller_input is not None:
            params.update(caller_input.params())
        relay = CallRelay.claim()
        if relay is not None:
            meta = relayed_meta(relay.token, relay.log_level if caller_input is not None else None, era)
            if meta:
                params["_meta"] = meta
        extra = param_headers(input_schema, arguments) if era == "modern" and input_schema else {}
        capabilities = caller_input.capabilities if caller_input is not None else None
        return await self._request(era, caller, "tools/call", params, extra, capabilities, relay)

    async def forward(
        self,
        caller: CallerHeaders,
        method: str,
        params: Mapping[str, Any],
        capabilities: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Send one request of the caller's (resources, prompts, completion, log level) upstream as it
        came, with the caller's credentials and, to a 2026-07-28 upstream, the capabilities it
        declared; the upstream's result, or its `UpstreamRpcError`."""
        era = await self.era(caller)
        sent = {key: value for key, value in params.items() if key != "_meta"}
        return await self._request(era, caller, method, sent, capabilities=capabilities)

    async def server_capabilities(self, caller: CallerHeaders) -> dict[str, Any]:
        """What the upstream says it offers this caller (`initialize` or `server/discover`)."""
        era = await self.era(caller)
        if era == "modern":
            result = await self._request(era, caller, "server/discover", {})
            capabilities = result.get("capabilities")
        else:
            capabilities = (await self._legacy_session(caller)).capabilities
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
            raise UpstreamError(f"upstream unreachable: {describe(exc)}") from None

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

    async def _legacy_session(self, caller: CallerHeaders) -> LegacySession:
        return await self._sessions.session(caller.token_key, lambda: self._initialize(caller))

    async def _initialize(self, caller: CallerHeaders) -> LegacySession:
        params = {"protocolVersion": LEGACY_VERSIONS[0], "capabilities": {}, "clientInfo": CLIENT_INFO}
        headers: dict[str, str] = {}
        result = await self._exchange.request(caller, "initialize", params, headers, capture=headers)
        version = result.get("protocolVersion")
        instructions = result.get("instructions")
        capabilities = result.get("capabilities")
        if version not in LEGACY_VERSIONS:
            raise UpstreamError(
                f"upstream negotiated protocol version {version!r}, which toolsearch does not speak"
            )
        session = LegacySession(
            version=str(version),
            session_id=headers.get(SESSION_HEADER),
            instructions=instructions if isinstance(instructions, str) else None,
            capabilities=capabilities if isinstance(capabilities, dict) else {},
        )
        await self._exchange.notify(caller, "notifications/initialized", session.headers())
        return session

    async def _request(
        self,
        era: Era,
        caller: CallerHeaders,
        method: str,
        params: dict[str, Any],
        extra_headers: Mapping[str, str] | None = None,
        capabilities: Mapping[str, Any] | None = None,
        relay: CallRelay | None = None,
    ) -> dict[str, Any]:
        if era == "modern":
            headers = {**modern_headers(method, params), **(extra_headers or {})}
            sent = modern_params(params, capabilities)
            return await self._exchange.request(caller, method, sent, headers, relay=relay)
        session = await self._legacy_session(caller)
        try:
            return await self._exchange.request(caller, method, params, session.headers(), relay=relay)
        except SessionExpired:
            # The upstream forgot the session (restart, idle expiry): start a new one, once.
            self._sessions.forget(caller.token_key)
            session = await self._legacy_session(caller)
            return await self._exchange.request(caller, method, params, session.headers(), relay=relay)
