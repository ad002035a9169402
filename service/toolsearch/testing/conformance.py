"""An MCP server (the `mcp` SDK's) serving the fixtures the MCP conformance suite calls, so that the
suite, run through toolsearch in front of it, judges what toolsearch passes through: content of every
kind, tool errors, progress and log messages, resources and templates, prompts, completion, and the
2026-07-28 `input_required` rounds (sampling, elicitation and roots asked by result, `requestState`
sealed against tampering, several rounds, asked only of declared capabilities).

Written from the suite's scenario descriptions (`@modelcontextprotocol/conformance`, released and
2026-07-28). It speaks both eras; `legacy_only=True` refuses 2026-07-28 the way a pre-2026 server
does, so a proxy in front of it speaks `initialize` to it. In the handshake era a tool that needs the
client's input asks it mid-call (`sampling/createMessage`, `elicitation/create`); in 2026-07-28 it
answers with an `input_required` result and finishes on the retry.

    with serve_app(ConformanceUpstream().app()) as base:      # MCP endpoint: base + "/mcp"
        ...
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import mcp_types
from mcp.server import Server
from mcp.server.caching import CacheHint
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.types import ASGIApp, Receive, Scope, Send

from toolsearch import __version__
from toolsearch.mcp.protocol import LOG_LEVELS, VERSION_HEADER
from toolsearch.testing.conformance_content import (
    PNG,
    USER_NAME,
    WAV,
    Context,
    Result,
    elicit,
    json_text,
    progress_token,
    sample,
    session_id,
    text_result,
)
from toolsearch.testing.conformance_prompts import (
    complete,
    get_prompt,
    list_prompts,
    list_resource_templates,
    list_resources,
    read_resource,
)
from toolsearch.testing.conformance_rounds import (
    InputRounds,
    answered_name,
    declared_capabilities,
    input_responses,
)
from toolsearch.testing.http_gate import legacy_version_refusal

# The suite still calls the logging fixtures that 2026-07-28 deprecates; serving them is the point.
warnings.filterwarnings("ignore", category=MCPDeprecationWarning, module=__name__)

_CACHED: Final = (
    "tools/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "prompts/list",
)
_NO_ARGUMENTS: Final = {"type": "object", "properties": {}}


class _Interim(Exception):
    """What a tool answers instead of finishing: an `input_required` result, or why it cannot ask."""

    def __init__(self, result: Result) -> None:
        super().__init__()
        self.result = result


class ConformanceUpstream:
    """The suite's fixtures over streamable HTTP (stateful sessions in the handshake era)."""

    def __init__(self, *, legacy_only: bool = False, path: str = "/mcp") -> None:
        self.legacy_only = legacy_only
        self.path = path
        self._rounds = InputRounds()
        self._log_levels: dict[str | None, str] = {}
        """The least level to log at, by `Mcp-Session-Id` (handshake era; 2026-07-28 asks per request)."""
        self._tools: dict[str, tuple[Mapping[str, Any], Callable[[Context, Result], Awaitable[Result]]]] = {
            "test_simple_text": (_NO_ARGUMENTS, self._simple_text),
            "test_image_content": (_NO_ARGUMENTS, self._image),
            "test_audio_content": (_NO_ARGUMENTS, self._audio),
            "test_embedded_resource": (_NO_ARGUMENTS, self._embedded_resource),
            "test_multiple_content_types": (_NO_ARGUMENTS, self._mixed_content),
            "test_error_handling": (_NO_ARGUMENTS, self._error),
            "test_tool_with_progress": (_NO_ARGUMENTS, self._progress),
            "test_tool_with_logging": (_NO_ARGUMENTS, self._logging),
            "test_logging_tool": (_NO_ARGUMENTS, self._logging),
            "test_sampling": (_string_arguments("prompt"), self._sampling),
            "test_elicitation": (_string_arguments("message"), self._elicitation),
            "test_elicitation_sep1034_defaults": (_NO_ARGUMENTS, self._elicitation_defaults),
            "test_elicitation_sep1330_enums": (_NO_ARGUMENTS, self._elicitation_enums),
            "json_schema_2020_12_tool": (_JSON_SCHEMA_2020_12, self._simple_text),
            "test_missing_capability": (_NO_ARGUMENTS, self._missing_capability),
            "test_streaming_elicitation": (_NO_ARGUMENTS, self._streaming_elicitation),
            "test_input_required_result_elicitation": (_NO_ARGUMENTS, self._rounds.elicitation),
            "test_input_required_result_sampling": (_NO_ARGUMENTS, self._rounds.sampling),
            "test_input_required_result_list_roots": (_NO_ARGUMENTS, self._rounds.roots),
            "test_input_required_result_request_state": (_NO_ARGUMENTS, self._rounds.request_state),
            "test_input_required_result_multiple_inputs": (_NO_ARGUMENTS, self._rounds.multiple),
            "test_input_required_result_multi_round": (_NO_ARGUMENTS, self._rounds.multi_round),
            "test_input_required_result_tampered_state": (_NO_ARGUMENTS, self._rounds.tampered_state),
            "test_input_required_result_capabilities": (_NO_ARGUMENTS, self._rounds.capabilities),
        }

    def app(self) -> ASGIApp:
        """A new ASGI app serving the fixtures at `path`."""
        server: Server[Any] = Server(
            "toolsearch-conformance-upstream",
            version=__version__,
            cache_hints=dict.fromkeys(_CACHED, CacheHint(ttl_ms=60_000, scope="public")),
            on_list_tools=_typed(self._list_tools),
            on_call_tool=_typed(self._call_tool),
            on_list_resources=_typed(list_resources),
            on_list_resource_templates=_typed(list_resource_templates),
            on_read_resource=_typed(read_resource),
            on_list_prompts=_typed(list_prompts),
            on_get_prompt=_typed(get_prompt),
            on_completion=_typed(complete),
            on_set_logging_level=self._set_logging_level,
        )
        starlette = server.streamable_http_app(
            streamable_http_path=self.path,
            stateless_http=False,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        return _LegacyGate(starlette) if self.legacy_only else starlette

    # -- tools ---------------------------------------------------------------------------------

    async def _list_tools(self, ctx: Context, params: mcp_types.PaginatedRequestParams | None) -> Result:
        tools = [
            {
                "name": name,
                "description": f"Conformance fixture {name}.",
                "inputSchema": dict(schema),
                "annotations": {"readOnlyHint": True},
            }
            for name, (schema, _) in self._tools.items()
        ]
        return {"tools": tools}

    async def _call_tool(self, ctx: Context, params: mcp_types.CallToolRequestParams) -> Result:
        entry = self._tools.get(params.name)
        if entry is None:
            raise MCPError(code=mcp_types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        try:
            return await entry[1](ctx, dict(ctx.params or {}))
        except _Interim as interim:
            return interim.result

    async def _simple_text(self, ctx: Context, raw: Result) -> Result:
        return text_result("This is a simple text response for testing.")

    async def _image(self, ctx: Context, raw: Result) -> Result:
        return {"content": [{"type": "image", "data": PNG, "mimeType": "image/png"}]}

    async def _audio(self, ctx: Context, raw: Result) -> Result:
        return {"content": [{"type": "audio", "data": WAV, "mimeType": "audio/wav"}]}

    async def _embedded_resource(self, ctx: Context, raw: Result) -> Result:
        resource = {
            "uri": "test://embedded-resource",
            "mimeType": "text/plain",
            "text": "This is an embedded resource content.",
        }
        return {"content": [{"type": "resource", "resource": resource}]}

    async def _mixed_content(self, ctx: Context, raw: Result) -> Result:
        resource = {
            "uri": "test://mixed-content-resource",
            "mimeType": "application/json",
            "text": '{"test":"data","value":123}',
        }
        return {
            "content": [
                {"type": "text", "text": "Multiple content types test:"},
                {"type": "image", "data": PNG, "mimeType": "image/png"},
                {"type": "resource", "resource": resource},
            ]
        }

    async def _error(self, ctx: Context, raw: Result) -> Result:
        return {**text_result("This tool intentionally returns an error for testing"), "isError": True}

    async def _progress(self, ctx: Context, raw: Result) -> Result:
        token = progress_token(raw)
        for step, progress in enumerate((0, 50, 100)):
            if step:
                await asyncio.sleep(0.05)
            if token is not None:
                await ctx.session.send_progress_notification(token, progress, 100, None, str(ctx.request_id))
        return text_result(
            f"Progress test completed ({'with' if token is not None else 'without'} a progress token)"
        )

    async def _logging(self, ctx: Context, raw: Result) -> Result:
        least = self._log_levels.get(session_id(ctx), LOG_LEVELS[0])
        for step, message in enumerate(
            ("Tool execution started", "Tool processing data", "Tool execution completed")
        ):
            if step:
                await asyncio.sleep(0.05)
            if LOG_LEVELS.index("info") >= LOG_LEVELS.index(least):
                await ctx.session.send_log_message("info", message, "conformance", ctx.request_id)
        return text_result("Logging test completed: 3 log messages sent at level info")

    async def _sampling(self, ctx: Context, raw: Result) -> Result:
        prompt = str((raw.get("arguments") or {}).get("prompt", ""))
        answer = await self._ask(ctx, raw, "sampling", sample(prompt, 100))
        content = answer.get("content")
        text = content.get("text") if isinstance(content, dict) else None
        return text_result(f"LLM response: {text}")

    async def _elicitation(self, ctx: Context, raw: Result) -> Result:
        message = str((raw.get("arguments") or {}).get("message", ""))
        schema = {
            "type": "object",
            "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"},
            },
            "required": ["username", "email"],
        }
        answer = await self._ask(ctx, raw, "elicitation", elicit(message, schema))
        return text_result(f"User response: {json_text(answer)}")

    async def _elicitation_defaults(self, ctx: Context, raw: Result) -> Result:
        schema = {
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "score": {"type": "number", "default": 95.5},
                "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
                "verified": {"type": "boolean", "default": True},
            },
        }
        return await self._elicitation_completed(
            ctx, raw, elicit("Please review and update the form fields", schema)
        )

    async def _elicitation_enums(self, ctx: Context, raw: Result) -> Result:
        options = ["option1", "option2", "option3"]
        titled = [
            {"const": f"value{n}", "title": title} for n, title in ((1, "First Option"), (2, "Second Option"))
        ]
        choices = [
            {"const": f"value{n}", "title": title} for n, title in ((1, "First Choice"), (2, "Second Choice"))
        ]
        schema = {
            "type": "object",
            "properties": {
                "untitledSingle": {"type": "string", "enum": options},
                "titledSingle": {"type": "string", "oneOf": titled},
                "legacyEnum": {
                    "type": "string",
                    "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"],
                },
                "untitledMulti": {"type": "array", "items": {"type": "string", "enum": options}},
                "titledMulti": {"type": "array", "items": {"anyOf": choices}},
            },
        }
        return await self._elicitation_completed(ctx, raw, elicit("Please select options", schema))

    async def _elicitation_completed(self, ctx: Context, raw: Result, request: Result) -> Result:
        answer = await self._ask(ctx, raw, "elicitation", request)
        content = json_text(answer.get("content"))
        return text_result(f"Elicitation completed: action={answer.get('action')}, content={content}")

    async def _ask(self, ctx: Context, raw: Result, capability: str, request: Result) -> Result:
        """The client's answer to `request`: asked mid-call in the handshake era, by an
        `input_required` result in 2026-07-28 (until the retry brings the answer); `_Interim` with a
        tool error when the client cannot be asked."""
        if ctx.protocol_version not in HANDSHAKE_PROTOCOL_VERSIONS:
            answer = input_responses(raw).get("answer")
            if isinstance(answer, dict):
                return answer
            if capability not in declared_capabilities(raw):
                refusal = text_result(f"The client did not declare the {capability} capability")
                raise _Interim({**refusal, "isError": True})
            raise _Interim({"resultType": "input_required", "inputRequests": {"answer": request}})
        kind = (
            mcp_types.CreateMessageRequest
            if request["method"] == "sampling/createMessage"
            else mcp_types.ElicitRequest
        )
        result = (
            mcp_types.CreateMessageResult
            if kind is mcp_types.CreateMessageRequest
            else mcp_types.ElicitResult
        )
        try:
            answered = await ctx.session.send_request(
                kind.model_validate(request),
                result,
                metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
            )
        except MCPError as refused:
            raise _Interim(
                {**text_result(f"The client could not be asked: {refused.error.message}"), "isError": True}
            ) from None
        return answered.model_dump(by_alias=True, mode="json", exclude_none=True)

    async def _missing_capability(self, ctx: Context, raw: Result) -> Result:
        if "sampling" not in declared_capabilities(raw):
            raise MCPError(
                code=mcp_types.MISSING_REQUIRED_CLIENT_CAPABILITY,
                message="test_missing_capability needs the sampling capability",
                data={"requiredCapabilities": {"sampling": {}}},
            )
        return await self._sampling(ctx, {**raw, "arguments": {"prompt": "Say hello"}})

    async def _streaming_elicitation(self, ctx: Context, raw: Result) -> Result:
        token = progress_token(raw)
        if token is not None:
            await ctx.session.send_progress_notification(token, 0, 1, "asking", str(ctx.request_id))
        answer = input_responses(raw).get("user_name")
        if isinstance(answer, dict):
            return text_result(f"Hello, {answered_name(answer)}!")
        return {"resultType": "input_required", "inputRequests": {"user_name": USER_NAME}}

    # -- input_required rounds (2026-07-28) --------------------------------------------------------
    async def _set_logging_level(self, ctx: Context, params: mcp_types.SetLevelRequestParams) -> Any:
        self._log_levels[session_id(ctx)] = params.level
        return {}


_JSON_SCHEMA_2020_12: Final = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}


def _typed(handler: Callable[[Context, Any], Awaitable[Result]]) -> Any:
    """A handler whose results carry the `resultType` 2026-07-28 requires (`complete` unless they ask
    for input); handshake-era results go as they are."""

    async def typed(ctx: Context, params: Any) -> Result:
        result = await handler(ctx, params)
        if ctx.protocol_version not in HANDSHAKE_PROTOCOL_VERSIONS:
            result.setdefault("resultType", "complete")
        return result

    return typed


def _string_arguments(name: str) -> Result:
    return {"type": "object", "properties": {name: {"type": "string"}}, "required": [name]}


class _LegacyGate:
    """ASGI wrapper refusing 2026-07-28 as a pre-2026 server does, so that clients fall back to
    `initialize`."""

    def __init__(self, inner: ASGIApp) -> None:
        self._inner = inner

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {key.decode().lower(): value.decode() for key, value in scope.get("headers", [])}
        version = headers.get(VERSION_HEADER)
        if scope["type"] == "http" and version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            await legacy_version_refusal(version, None)(scope, receive, send)
            return
        await self._inner(scope, receive, send)
