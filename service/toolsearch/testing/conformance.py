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
import base64
import hashlib
import hmac
import secrets
import struct
import warnings
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import mcp_types
import orjson
from mcp.server import Server
from mcp.server.caching import CacheHint
from mcp.server.context import ServerRequestContext
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from toolsearch import __version__
from toolsearch.protocol import CLIENT_CAPABILITIES_META, LOG_LEVELS, SESSION_HEADER, VERSION_HEADER
from toolsearch.testing.upstream import legacy_version_refusal

# The suite still calls the logging fixtures that 2026-07-28 deprecates; serving them is the point.
warnings.filterwarnings("ignore", category=MCPDeprecationWarning, module=__name__)

Context = ServerRequestContext[Any, Any]
Result = dict[str, Any]

PNG: Final = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d49484452000000010000000108020000009077"
        "53de0000000c4944415408d763f8cfc000000301010018dd8db00000000049454e44ae426082"
    )
).decode()
"""A 1x1 red pixel."""
WAV: Final = base64.b64encode(
    b"RIFF"
    + struct.pack("<I", 36 + 8)
    + b"WAVEfmt "
    + struct.pack("<IHHIIHH", 16, 1, 1, 8000, 16000, 2, 16)
    + b"data"
    + struct.pack("<I", 8)
    + bytes(8)
).decode()
"""Four silent samples of 16-bit mono PCM at 8 kHz."""

_CACHED: Final = (
    "tools/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "prompts/list",
)
_NAME_SCHEMA: Final = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
_NO_ARGUMENTS: Final = {"type": "object", "properties": {}}


def _text(text: str) -> Result:
    return {"content": [{"type": "text", "text": text}]}


def _elicit(message: str, schema: Mapping[str, Any]) -> Result:
    return {"method": "elicitation/create", "params": {"message": message, "requestedSchema": dict(schema)}}


def _sample(prompt: str, max_tokens: int) -> Result:
    message = {"role": "user", "content": {"type": "text", "text": prompt}}
    return {"method": "sampling/createMessage", "params": {"messages": [message], "maxTokens": max_tokens}}


_ROOTS: Final = {"method": "roots/list", "params": {}}
_USER_NAME: Final = _elicit("What is your name?", _NAME_SCHEMA)
_CAPITAL: Final = _sample("What is the capital of France?", 100)


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
        self._key = secrets.token_bytes(32)
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
            "test_input_required_result_elicitation": (_NO_ARGUMENTS, self._input_elicitation),
            "test_input_required_result_sampling": (_NO_ARGUMENTS, self._input_sampling),
            "test_input_required_result_list_roots": (_NO_ARGUMENTS, self._input_roots),
            "test_input_required_result_request_state": (_NO_ARGUMENTS, self._input_request_state),
            "test_input_required_result_multiple_inputs": (_NO_ARGUMENTS, self._input_multiple),
            "test_input_required_result_multi_round": (_NO_ARGUMENTS, self._input_multi_round),
            "test_input_required_result_tampered_state": (_NO_ARGUMENTS, self._input_tampered_state),
            "test_input_required_result_capabilities": (_NO_ARGUMENTS, self._input_capabilities),
        }

    def app(self) -> ASGIApp:
        """A new ASGI app serving the fixtures at `path`."""
        server: Server[Any] = Server(
            "toolsearch-conformance-upstream",
            version=__version__,
            cache_hints=dict.fromkeys(_CACHED, CacheHint(ttl_ms=60_000, scope="public")),
            on_list_tools=_typed(self._list_tools),
            on_call_tool=_typed(self._call_tool),
            on_list_resources=_typed(_list_resources),
            on_list_resource_templates=_typed(_list_resource_templates),
            on_read_resource=_typed(_read_resource),
            on_list_prompts=_typed(_list_prompts),
            on_get_prompt=_typed(self._get_prompt),
            on_completion=_typed(_complete),
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
        return _text("This is a simple text response for testing.")

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
        return {**_text("This tool intentionally returns an error for testing"), "isError": True}

    async def _progress(self, ctx: Context, raw: Result) -> Result:
        token = _progress_token(raw)
        for step, progress in enumerate((0, 50, 100)):
            if step:
                await asyncio.sleep(0.05)
            if token is not None:
                await ctx.session.send_progress_notification(token, progress, 100, None, str(ctx.request_id))
        return _text(
            f"Progress test completed ({'with' if token is not None else 'without'} a progress token)"
        )

    async def _logging(self, ctx: Context, raw: Result) -> Result:
        least = self._log_levels.get(_session_id(ctx), LOG_LEVELS[0])
        for step, message in enumerate(
            ("Tool execution started", "Tool processing data", "Tool execution completed")
        ):
            if step:
                await asyncio.sleep(0.05)
            if LOG_LEVELS.index("info") >= LOG_LEVELS.index(least):
                await ctx.session.send_log_message("info", message, "conformance", ctx.request_id)
        return _text("Logging test completed: 3 log messages sent at level info")

    async def _sampling(self, ctx: Context, raw: Result) -> Result:
        prompt = str((raw.get("arguments") or {}).get("prompt", ""))
        answer = await self._ask(ctx, raw, "sampling", _sample(prompt, 100))
        content = answer.get("content")
        text = content.get("text") if isinstance(content, dict) else None
        return _text(f"LLM response: {text}")

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
        answer = await self._ask(ctx, raw, "elicitation", _elicit(message, schema))
        return _text(f"User response: {_json(answer)}")

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
            ctx, raw, _elicit("Please review and update the form fields", schema)
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
        return await self._elicitation_completed(ctx, raw, _elicit("Please select options", schema))

    async def _elicitation_completed(self, ctx: Context, raw: Result, request: Result) -> Result:
        answer = await self._ask(ctx, raw, "elicitation", request)
        return _text(
            f"Elicitation completed: action={answer.get('action')}, content={_json(answer.get('content'))}"
        )

    async def _ask(self, ctx: Context, raw: Result, capability: str, request: Result) -> Result:
        """The client's answer to `request`: asked mid-call in the handshake era, by an
        `input_required` result in 2026-07-28 (until the retry brings the answer); `_Interim` with a
        tool error when the client cannot be asked."""
        if ctx.protocol_version not in HANDSHAKE_PROTOCOL_VERSIONS:
            answer = _responses(raw).get("answer")
            if isinstance(answer, dict):
                return answer
            if capability not in _declared(raw):
                raise _Interim(
                    {**_text(f"The client did not declare the {capability} capability"), "isError": True}
                )
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
                {**_text(f"The client could not be asked: {refused.error.message}"), "isError": True}
            ) from None
        return answered.model_dump(by_alias=True, mode="json", exclude_none=True)

    async def _missing_capability(self, ctx: Context, raw: Result) -> Result:
        if "sampling" not in _declared(raw):
            raise MCPError(
                code=mcp_types.MISSING_REQUIRED_CLIENT_CAPABILITY,
                message="test_missing_capability needs the sampling capability",
                data={"requiredCapabilities": {"sampling": {}}},
            )
        return await self._sampling(ctx, {**raw, "arguments": {"prompt": "Say hello"}})

    async def _streaming_elicitation(self, ctx: Context, raw: Result) -> Result:
        token = _progress_token(raw)
        if token is not None:
            await ctx.session.send_progress_notification(token, 0, 1, "asking", str(ctx.request_id))
        answer = _responses(raw).get("user_name")
        if isinstance(answer, dict):
            return _text(f"Hello, {_named(answer)}!")
        return {"resultType": "input_required", "inputRequests": {"user_name": _USER_NAME}}

    # -- input_required rounds (2026-07-28) --------------------------------------------------------

    async def _input_elicitation(self, ctx: Context, raw: Result) -> Result:
        answer = _responses(raw).get("user_name")
        if not isinstance(answer, dict) or not isinstance(answer.get("content"), dict):
            return {"resultType": "input_required", "inputRequests": {"user_name": _USER_NAME}}
        return _text(f"Hello, {_named(answer)}!")

    async def _input_sampling(self, ctx: Context, raw: Result) -> Result:
        answer = _responses(raw).get("capital_question")
        if not isinstance(answer, dict):
            return {"resultType": "input_required", "inputRequests": {"capital_question": _CAPITAL}}
        content = answer.get("content")
        return _text(f"The model answered: {content.get('text') if isinstance(content, dict) else content}")

    async def _input_roots(self, ctx: Context, raw: Result) -> Result:
        answer = _responses(raw).get("client_roots")
        if not isinstance(answer, dict) or not isinstance(answer.get("roots"), list):
            return {"resultType": "input_required", "inputRequests": {"client_roots": _ROOTS}}
        uris = [str(root.get("uri")) for root in answer["roots"] if isinstance(root, dict)]
        return _text(f"The client's roots: {', '.join(uris) or 'none'}")

    async def _input_request_state(self, ctx: Context, raw: Result) -> Result:
        confirm = _elicit(
            "Please confirm",
            {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
        )
        answer = _responses(raw).get("confirm")
        if not isinstance(answer, dict):
            return self._asking({"confirm": confirm}, "confirm")
        self._verified(raw, "confirm")
        return _text("state-ok: the request state came back intact")

    async def _input_multiple(self, ctx: Context, raw: Result) -> Result:
        requests = {
            "user_name": _USER_NAME,
            "greeting": _sample("Generate a greeting", 50),
            "client_roots": _ROOTS,
        }
        responses = _responses(raw)
        if not all(isinstance(responses.get(key), dict) for key in requests):
            return self._asking(requests, "multiple")
        self._verified(raw, "multiple")
        return _text(f"Received all of {', '.join(sorted(requests))}")

    async def _input_multi_round(self, ctx: Context, raw: Result) -> Result:
        responses = _responses(raw)
        if isinstance(responses.get("step2"), dict) and self._verified(raw, "round-2"):
            return _text(
                f"Done: {_named(responses['step1'] if isinstance(responses.get('step1'), dict) else {})}"
            )
        if isinstance(responses.get("step1"), dict) and raw.get("requestState") is not None:
            self._verified(raw, "round-1")
            color = {"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]}
            return self._asking({"step2": _elicit("Step 2: What is your favorite color?", color)}, "round-2")
        return self._asking({"step1": _elicit("Step 1: What is your name?", _NAME_SCHEMA)}, "round-1")

    async def _input_tampered_state(self, ctx: Context, raw: Result) -> Result:
        if raw.get("requestState") is None:
            return self._asking({"user_name": _USER_NAME}, "tamper-proof")
        self._verified(raw, "tamper-proof")
        return _text("The request state came back intact")

    async def _input_capabilities(self, ctx: Context, raw: Result) -> Result:
        responses = _responses(raw)
        if responses:
            return _text(f"Received {', '.join(sorted(responses))}")
        declared = _declared(raw)
        offered = {
            "user_name": ("elicitation", _USER_NAME),
            "capital_question": ("sampling", _CAPITAL),
            "client_roots": ("roots", _ROOTS),
        }
        asked = {key: request for key, (capability, request) in offered.items() if capability in declared}
        if not asked:
            return _text("The client declared none of sampling, elicitation and roots; nothing to ask")
        return {"resultType": "input_required", "inputRequests": asked}

    def _asking(self, requests: Result, stage: str) -> Result:
        return {
            "resultType": "input_required",
            "inputRequests": requests,
            "requestState": self._sealed(stage),
        }

    def _sealed(self, stage: str) -> str:
        payload = base64.urlsafe_b64encode(
            orjson.dumps({"stage": stage, "nonce": secrets.token_hex(8)})
        ).decode()
        return f"{payload}.{hmac.new(self._key, payload.encode(), hashlib.sha256).hexdigest()}"

    def _verified(self, raw: Result, stage: str) -> bool:
        """Whether the echoed `requestState` is one this server sealed for `stage`; -32602 if it was
        tampered with or is missing."""
        state = raw.get("requestState")
        payload, _, mac = state.rpartition(".") if isinstance(state, str) else ("", "", "")
        expected = hmac.new(self._key, payload.encode(), hashlib.sha256).hexdigest()
        if not payload or not hmac.compare_digest(mac, expected):
            raise MCPError(code=mcp_types.INVALID_PARAMS, message="requestState failed its integrity check")
        return bool(orjson.loads(base64.urlsafe_b64decode(payload)).get("stage") == stage)

    # -- prompts and logging -----------------------------------------------------------------------

    async def _get_prompt(self, ctx: Context, params: mcp_types.GetPromptRequestParams) -> Result:
        arguments = params.arguments or {}
        if params.name == "test_simple_prompt":
            return _prompt({"type": "text", "text": "This is a simple prompt for testing."})
        if params.name == "test_prompt_with_arguments":
            text = f"Prompt with arguments: arg1='{arguments.get('arg1')}', arg2='{arguments.get('arg2')}'"
            return _prompt({"type": "text", "text": text})
        if params.name == "test_prompt_with_embedded_resource":
            resource = {
                "uri": arguments.get("resourceUri", "test://example-resource"),
                "mimeType": "text/plain",
                "text": "Embedded resource content for testing.",
            }
            return _prompt(
                {"type": "resource", "resource": resource},
                {"type": "text", "text": "Please process the embedded resource above."},
            )
        if params.name == "test_prompt_with_image":
            return _prompt(
                {"type": "image", "data": PNG, "mimeType": "image/png"},
                {"type": "text", "text": "Please analyze the image above."},
            )
        if params.name == "test_input_required_result_prompt":
            answer = _responses(dict(ctx.params or {})).get("user_context")
            if not isinstance(answer, dict):
                schema = {
                    "type": "object",
                    "properties": {"context": {"type": "string"}},
                    "required": ["context"],
                }
                request = _elicit("What context should the prompt use?", schema)
                return {"resultType": "input_required", "inputRequests": {"user_context": request}}
            context = (
                answer.get("content", {}).get("context") if isinstance(answer.get("content"), dict) else None
            )
            return _prompt({"type": "text", "text": f"A prompt for the context: {context}"})
        raise MCPError(code=mcp_types.INVALID_PARAMS, message=f"Unknown prompt: {params.name}")

    async def _set_logging_level(self, ctx: Context, params: mcp_types.SetLevelRequestParams) -> Any:
        self._log_levels[_session_id(ctx)] = params.level
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

_PROMPTS: Final = [
    {"name": "test_simple_prompt", "description": "A simple prompt without arguments"},
    {
        "name": "test_prompt_with_arguments",
        "description": "A prompt with two required arguments",
        "arguments": [
            {"name": "arg1", "description": "First test argument", "required": True},
            {"name": "arg2", "description": "Second test argument", "required": True},
        ],
    },
    {
        "name": "test_prompt_with_embedded_resource",
        "description": "A prompt embedding a resource",
        "arguments": [
            {"name": "resourceUri", "description": "URI of the resource to embed", "required": True}
        ],
    },
    {"name": "test_prompt_with_image", "description": "A prompt with an image"},
    {"name": "test_input_required_result_prompt", "description": "A prompt that asks the user for context"},
]
_COMPLETIONS: Final = ("paris", "park", "party", "hello", "world")


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


def _session_id(ctx: Context) -> str | None:
    request = ctx.request
    return request.headers.get(SESSION_HEADER) if isinstance(request, Request) else None


def _progress_token(raw: Mapping[str, Any]) -> str | int | None:
    meta = raw.get("_meta")
    token = meta.get("progressToken") if isinstance(meta, dict) else None
    return token if isinstance(token, str | int) and not isinstance(token, bool) else None


def _responses(raw: Mapping[str, Any]) -> Result:
    responses = raw.get("inputResponses")
    return responses if isinstance(responses, dict) else {}


def _declared(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    """The capabilities a 2026-07-28 request declares in its `_meta`."""
    meta = raw.get("_meta")
    declared = meta.get(CLIENT_CAPABILITIES_META) if isinstance(meta, dict) else None
    return declared if isinstance(declared, dict) else {}


def _named(answer: Mapping[str, Any]) -> str:
    content = answer.get("content")
    return str(content.get("name")) if isinstance(content, dict) else "stranger"


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def _prompt(*contents: Result) -> Result:
    return {"messages": [{"role": "user", "content": content} for content in contents]}


async def _list_resources(ctx: Context, params: mcp_types.PaginatedRequestParams | None) -> Result:
    return {
        "resources": [
            {"uri": "test://static-text", "name": "static-text", "mimeType": "text/plain"},
            {"uri": "test://static-binary", "name": "static-binary", "mimeType": "image/png"},
        ]
    }


async def _list_resource_templates(ctx: Context, params: mcp_types.PaginatedRequestParams | None) -> Result:
    template = {
        "uriTemplate": "test://template/{id}/data",
        "name": "template-data",
        "mimeType": "application/json",
    }
    return {"resourceTemplates": [template]}


async def _read_resource(ctx: Context, params: mcp_types.ReadResourceRequestParams) -> Result:
    uri = str(params.uri)
    if uri == "test://static-text":
        text = "This is the content of the static text resource."
        return {"contents": [{"uri": uri, "mimeType": "text/plain", "text": text}]}
    if uri == "test://static-binary":
        return {"contents": [{"uri": uri, "mimeType": "image/png", "blob": PNG}]}
    prefix, suffix = "test://template/", "/data"
    if uri.startswith(prefix) and uri.endswith(suffix) and len(uri) > len(prefix) + len(suffix):
        identifier = uri[len(prefix) : -len(suffix)]
        data = {"id": identifier, "templateTest": True, "data": f"Data for ID: {identifier}"}
        return {"contents": [{"uri": uri, "mimeType": "application/json", "text": _json(data)}]}
    raise MCPError(code=mcp_types.INVALID_PARAMS, message="Resource not found", data={"uri": uri})


async def _complete(ctx: Context, params: mcp_types.CompleteRequestParams) -> Result:
    prefix = params.argument.value
    values = [value for value in _COMPLETIONS if value.startswith(prefix)]
    return {"completion": {"values": values, "total": len(values), "hasMore": False}}


async def _list_prompts(ctx: Context, params: mcp_types.PaginatedRequestParams | None) -> Result:
    return {"prompts": _PROMPTS}


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
