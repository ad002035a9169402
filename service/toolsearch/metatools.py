"""The five meta-tools a model sees instead of the whole catalog, and calls through to upstream tools.

Their names and argument shapes are the public interface (README documents them). Every problem
with a call comes back as an `isError` result that says what is wrong and how to fix it, so the
model can correct itself in the next turn.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any, Final

import orjson

from toolsearch.answer import mark_suspicious, search_answer
from toolsearch.caller import CallerHeaders, CallerInput
from toolsearch.catalog import Catalog, CatalogService
from toolsearch.errors import InputNotRelayed, UpstreamAuthError, UpstreamError, UpstreamRpcError
from toolsearch.jsonrpc import INVALID_PARAMS, JsonRpcError
from toolsearch.naming import intended_name, similar_names
from toolsearch.outcomes import SearchOutcomes
from toolsearch.policy import ToolPolicy
from toolsearch.protocol import INPUT_REQUIRED, asked_input, without_envelope
from toolsearch.skeletons import lookalike_note
from toolsearch.telemetry import Telemetry, elapsed
from toolsearch.tool import tool_digest
from toolsearch.untrusted import abridged, excerpt
from toolsearch.upstream import UpstreamClient
from toolsearch.validation import argument_problems

logger = logging.getLogger(__name__)

SEARCH: Final = "search_tools"
DESCRIBE: Final = "describe_tool"
CALL_READ: Final = "call_read_tool"
CALL_READ_BATCH: Final = "call_read_tools"
CALL_WRITE: Final = "call_write_tool"

MAX_QUERY_CHARS: Final = 1000
_ERROR_CHARS: Final = 2000
"""The most of an upstream's error message passed on to the model."""

_MAX_SERVER_LIST_CHARS: Final = 2000
"""Room for the catalog's servers in search_tools' description: tools/list stays under 1,500 tokens
(6,000 characters) with the 150 servers of the recorded catalog all named."""
_SERVER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]{0,39}")
"""A server name as shown to the model: names are upstream text, so anything else is left out."""

_NAME = {"type": "string", "description": "Exact tool name, as search_tools returns it."}
_ARGUMENTS = {"type": "object", "description": "Arguments matching the tool's input schema."}


def _definitions(max_batch_calls: int) -> list[dict[str, Any]]:
    definitions = [
        {
            "name": SEARCH,
            "title": "Search tools",
            "description": (
                "Find tools for a task. The tools you can call are not listed directly: search first, "
                "then call one by its exact name. Per query: the best tools, the top ones with readOnly "
                "and a compacted input schema, the rest a name and a line (describe_tool gives full "
                "definitions); a tool several servers serve is one entry, its other names (each "
                "callable) in alsoAs. matched:false: no tool fits. `servers`: the servers your words "
                "name; `unmentioned`: your words no tool mentions. Describe the task in any language; "
                "pass several phrasings or sub-tasks in `queries` to search them at once."
            ),
            "inputSchema": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What you want to do."},
                    "queries": {
                        "type": "array",
                        "items": {"type": "string"},
                        "minItems": 1,
                        "maxItems": 5,
                        "description": "Several searches in one call.",
                    },
                    "limit": {"type": "integer", "minimum": 1, "maximum": 25, "default": 8},
                    "schemas": {"type": "boolean", "default": True, "description": "Include input schemas."},
                },
                "additionalProperties": False,
            },
            "annotations": {"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False},
        },
        {
            "name": DESCRIBE,
            "title": "Describe tools",
            "description": "Full definitions (description, schemas, annotations) of tools by exact name.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "names": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 10}
                },
                "required": ["names"],
                "additionalProperties": False,
            },
            "annotations": {"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False},
        },
        {
            "name": CALL_READ,
            "title": "Call a read-only tool",
            "description": (
                "Call a tool that only reads (readOnly: true in search results). "
                "Anything that creates, changes or deletes goes through call_write_tool."
            ),
            "inputSchema": {
                "type": "object",
                "properties": {"name": _NAME, "arguments": _ARGUMENTS},
                "required": ["name"],
                "additionalProperties": False,
            },
            "annotations": {"readOnlyHint": True, "openWorldHint": True},
        },
        {
            "name": CALL_READ_BATCH,
            "title": "Call read-only tools in parallel",
            "description": (
                f"Call up to {max_batch_calls} read-only tools at once. Results come back in order, each "
                "labelled with its index, tool and whether it failed; one failure does not stop the others."
            ),
            "inputSchema": {
                "type": "object",
                "properties": {
                    "calls": {
                        "type": "array",
                        "minItems": 1,
                        "maxItems": max_batch_calls,
                        "items": {
                            "type": "object",
                            "properties": {"name": _NAME, "arguments": _ARGUMENTS},
                            "required": ["name"],
                            "additionalProperties": False,
                        },
                    }
                },
                "required": ["calls"],
                "additionalProperties": False,
            },
            "annotations": {"readOnlyHint": True, "openWorldHint": True},
        },
        {
            "name": CALL_WRITE,
            "title": "Call a tool that writes",
            "description": (
                "Call any tool, including those that create, change or delete things. One call at a "
                "time; be sure the user wants the effect."
            ),
            "inputSchema": {
                "type": "object",
                "properties": {"name": _NAME, "arguments": _ARGUMENTS},
                "required": ["name"],
                "additionalProperties": False,
            },
            "annotations": {"readOnlyHint": False, "destructiveHint": True, "openWorldHint": True},
        },
    ]
    if max_batch_calls == 0:
        definitions = [d for d in definitions if d["name"] != CALL_READ_BATCH]
    return definitions


def servers_note(servers: Sequence[tuple[str, int]], limit: int = _MAX_SERVER_LIST_CHARS) -> str:
    """What search_tools' description says of the catalog: its servers' names, most tools first, cut
    to `limit` characters, so that the model can tell whether a product is there and name it in its
    queries (names without counts: 150 servers fit)."""
    shown = [name for name, _ in servers if _SERVER_NAME.fullmatch(name)]
    if len(shown) < 2:  # one server or none: its name says nothing the tools do not
        return ""
    head = " Tools come from these servers (most tools first): "
    parts: list[str] = []
    used = len(head)
    for index, name in enumerate(shown):
        rest = f", and {len(shown) - index} more."
        if used + len(name) + 2 + len(rest) > limit:
            return head + ", ".join(parts) + rest
        parts.append(name)
        used += len(name) + 2
    return head + ", ".join(parts) + "."


def error_result(message: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": message}], "isError": True}


def _json_result(value: Any) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": orjson.dumps(value).decode()}]}


class MetaTools:
    """The meta-tools, and direct calls of upstream tools by their real names."""

    def __init__(
        self,
        catalogs: CatalogService,
        upstream: UpstreamClient,
        policy: ToolPolicy,
        *,
        max_batch_calls: int = 10,
        search_schemas: int = 3,
        answer_chars: int = 1500,
        telemetry: Telemetry | None = None,
        outcomes: SearchOutcomes | None = None,
    ) -> None:
        self._telemetry = telemetry or Telemetry(use_environment=False)
        self._outcomes = outcomes or SearchOutcomes.in_process(self._telemetry)
        self._catalogs = catalogs
        self._upstream = upstream
        self._policy = policy
        self._search_schemas = search_schemas
        self._answer_chars = answer_chars
        self.definitions: list[dict[str, Any]] = _definitions(max_batch_calls)
        self._schemas = {d["name"]: d["inputSchema"] for d in self.definitions}
        # Validators are cached by schema content; the batch tool's schema depends on the settings.
        self._schema_keys = {name: tool_digest(schema) for name, schema in self._schemas.items()}
        self._handlers = {
            SEARCH: self._search,
            DESCRIBE: self._describe,
            CALL_READ_BATCH: self._call_read_batch,
        }

    def is_meta_tool(self, name: object) -> bool:
        return name in self._schemas

    def listed_tools(self, catalog: Catalog | None) -> list[dict[str, Any]]:
        """What `tools/list` shows: the meta-tools (search_tools naming the caller's servers), then
        the caller's pinned tools as themselves."""
        if catalog is None:
            return list(self.definitions)
        definitions = [
            {**d, "description": d["description"] + servers_note(catalog.servers)}
            if d["name"] == SEARCH
            else d
            for d in self.definitions
        ]
        pinned = [
            dict(t.definition)
            # By name: one list whatever order the upstream lists in, so clients can cache it.
            for t in sorted(catalog.tools, key=lambda tool: tool.name)
            if self._policy.is_pinned(t) and t.name not in self._schemas and not catalog.withheld(t.name)
        ]
        return [*definitions, *pinned]

    async def call(
        self, name: str, arguments: Any, caller: CallerHeaders, caller_input: CallerInput | None = None
    ) -> dict[str, Any]:
        """`tools/call`: a meta-tool, or any tool of the caller's catalog by its real name.

        `caller_input` (2026-07-28 callers only) goes upstream with a single call, so that a tool that
        asks for input gets the caller's answers on the retry; without it such a tool's call fails."""
        arguments = _as_arguments(arguments)
        if name not in self._schemas:
            try:
                catalog = await self._catalogs.get(caller)
            except UpstreamError as exc:
                return _catalog_unavailable(exc)
            return await self._call_upstream(
                catalog,
                name,
                arguments,
                caller,
                require_read_only=False,
                direct=True,
                caller_input=caller_input,
            )
        started = time.perf_counter()
        if not isinstance(arguments, dict):
            return error_result(f"Arguments of {name} must be a JSON object.")
        arguments = _with_parsed_arguments(arguments)
        problems = argument_problems(self._schemas[name], arguments, key=self._schema_keys[name])
        if problems:
            result = _schema_error(name, problems, self._schemas[name])
        else:
            try:
                if name in (CALL_READ, CALL_WRITE):
                    result = await self._call_one(
                        arguments, caller, caller_input, read_only=name == CALL_READ
                    )
                else:
                    result = await self._handlers[name](arguments, caller)
            except UpstreamError as exc:
                result = _catalog_unavailable(exc)
            except UpstreamAuthError:
                _log_call(name, "unauthorized", started)
                raise
        _log_call(name, "error" if result.get("isError") else "ok", started)
        return result

    # -- meta-tools --------------------------------------------------------------------------------

    async def _search(self, arguments: dict[str, Any], caller: CallerHeaders) -> dict[str, Any]:
        queries = [arguments["query"]] if "query" in arguments else []
        queries += arguments.get("queries", [])
        if not queries:
            return error_result('search_tools needs "query" (a string) or "queries" (up to 5 strings).')
        if any(len(q) > MAX_QUERY_CHARS for q in queries):
            return error_result(f"Each query may have at most {MAX_QUERY_CHARS} characters; shorten it.")
        limit = int(arguments.get("limit", 8))  # JSON Schema's integers include 8.0
        catalog = await self._catalogs.get(caller)
        searches = []
        for query in queries:
            with self._telemetry.span("search", attributes={"toolsearch.catalog.tools": len(catalog)}):
                started = time.perf_counter()
                # A model may embed the query: off the event loop, so other callers are not held up.
                # Twins are one entry: twice the hits leave room for the tools they stand beside.
                hits = await asyncio.to_thread(catalog.hits, query, 2 * limit)
                self._telemetry.search_duration.record(elapsed(started))
            searches.append((query, hits))
        answer = search_answer(
            searches,
            catalog,
            read_only=self._policy.is_read_only,
            limit=limit,
            leaders=self._search_schemas,
            chars_per_query=self._answer_chars,
            schemas=arguments.get("schemas", True),
        )
        await self._outcomes.searched(caller, answer["results"])
        return _json_result(answer)

    async def _describe(self, arguments: dict[str, Any], caller: CallerHeaders) -> dict[str, Any]:
        catalog = await self._catalogs.get(caller)
        tools, unknown = [], []
        for name in arguments["names"]:
            tool = catalog.get(name)
            if tool is None or tool.app_only:
                unknown.append({"name": name, "similar": similar_names(name, catalog.names)})
                continue
            entry: dict[str, Any] = {"name": tool.name, "readOnly": self._policy.is_read_only(tool)}
            withheld = catalog.withheld(name)
            if withheld:
                tools.append({"name": tool.name, "withheld": withheld})
                continue
            mark_suspicious(entry, catalog)
            for key, value in tool.definition.items():
                if key != "name":
                    _show(entry, key, value)
            tools.append(entry)
        answer: dict[str, Any] = {"tools": tools}
        if unknown:
            answer["unknown"] = unknown
        return _json_result(answer)

    async def _call_one(
        self,
        arguments: dict[str, Any],
        caller: CallerHeaders,
        caller_input: CallerInput | None,
        *,
        read_only: bool,
    ) -> dict[str, Any]:
        """call_read_tool and call_write_tool."""
        catalog = await self._catalogs.get(caller)
        return await self._call_upstream(
            catalog,
            arguments["name"],
            arguments.get("arguments", {}),
            caller,
            require_read_only=read_only,
            caller_input=caller_input,
        )

    async def _call_read_batch(self, arguments: dict[str, Any], caller: CallerHeaders) -> dict[str, Any]:
        catalog = await self._catalogs.get(caller)
        calls = arguments["calls"]
        outcomes = await asyncio.gather(
            *(
                self._call_upstream(
                    catalog, c["name"], c.get("arguments", {}), caller, require_read_only=True
                )
                for c in calls
            ),
            return_exceptions=True,
        )
        for outcome in outcomes:
            if isinstance(outcome, UpstreamAuthError):
                raise outcome  # refused credentials answer the whole request, not one call of it
        content: list[dict[str, Any]] = []
        summary = []
        for index, (call, outcome) in enumerate(zip(calls, outcomes, strict=True)):
            if isinstance(outcome, BaseException):
                outcome = error_result(f"The call failed inside toolsearch: {type(outcome).__name__}.")
            failed = bool(outcome.get("isError"))
            content.append(
                {"type": "text", "text": f"[{index}] {call['name']}: {'failed' if failed else 'ok'}"}
            )
            content.extend(item for item in outcome.get("content", []) if isinstance(item, dict))
            entry: dict[str, Any] = {"index": index, "name": call["name"], "isError": failed}
            if "structuredContent" in outcome:
                entry["structuredContent"] = outcome["structuredContent"]
            summary.append(entry)
        return {"content": content, "structuredContent": {"results": summary}}

    # -- calling upstream tools --------------------------------------------------------------------

    async def _call_upstream(
        self,
        catalog: Catalog,
        name: str,
        arguments: Any,
        caller: CallerHeaders,
        *,
        require_read_only: bool,
        direct: bool = False,
        caller_input: CallerInput | None = None,
    ) -> dict[str, Any]:
        """Call `name` for the model (problems come back as `isError` results it can read) or, when
        `direct` (a `tools/call` by the tool's real name), as the upstream would: an unknown tool and
        the upstream's JSON-RPC errors are JSON-RPC errors."""
        tool = catalog.get(name)
        if tool is None or (tool.app_only and not direct):  # direct: the app calls its own tools
            if direct:
                raise JsonRpcError(INVALID_PARAMS, self._unknown_tool(catalog, name))
            return error_result(self._unknown_tool(catalog, name))
        await self._outcomes.called(caller, name)
        withheld = catalog.withheld(name)
        if withheld:
            return error_result(withheld)
        if require_read_only and not self._policy.is_read_only(tool):
            return error_result(
                f"{name} is not marked read-only, so call_read_tool(s) refuses it. "
                f"If you intend its effect, call it with call_write_tool."
            )
        if not isinstance(arguments, dict):
            return _schema_error(name, ["at /: the arguments must be a JSON object"], tool.input_schema)
        problems = argument_problems(tool.input_schema, arguments, key=tool.digest)
        if problems:
            return _schema_error(name, problems, tool.input_schema)
        started = time.perf_counter()
        try:
            result = await self._upstream.call_tool(caller, name, arguments, tool.input_schema, caller_input)
        except UpstreamRpcError as exc:
            _log_call(name, "upstream_error", started)
            if direct:
                raise JsonRpcError(exc.code, exc.message, exc.data) from None
            message = excerpt(exc.message, _ERROR_CHARS)
            if exc.code == INVALID_PARAMS:
                result = _schema_error(name, [message], tool.input_schema, upstream=True)
            else:
                result = error_result(f"The upstream answered {name} with error {exc.code}: {message}")
            return {**result, "structuredContent": {"error": _upstream_error(exc, message)}}
        except InputNotRelayed as exc:
            _log_call(name, "input_not_relayed", started)
            return error_result(f"{name} could not finish: {exc}.")
        except UpstreamError as exc:
            _log_call(name, "upstream_unavailable", started)
            return error_result(
                f"{name} could not be called: {excerpt(str(exc), _ERROR_CHARS)}. Try again later."
            )
        _log_call(name, "error" if result.get("isError") else "ok", started)
        return _passed_through(name, result, relay_input=caller_input is not None)

    def _unknown_tool(self, catalog: Catalog, name: str) -> str:
        meant = intended_name(name, catalog.names)
        self._outcomes.unknown_tool(typo=meant is not None)
        if meant is not None:
            return (
                f"There is no tool named {name!r}.{lookalike_note(name, meant)} Did you mean {meant!r}? "
                "Call it by that name."
            )
        similar = similar_names(name, catalog.names)
        hint = f" Similar names: {', '.join(similar)}." if similar else ""
        return f"There is no tool named {name!r}.{hint} Use search_tools to find the right tool."


def _as_arguments(arguments: Any) -> Any:
    """Missing arguments are no arguments; a JSON object sent as a string (models do) is that object."""
    if arguments is None:
        return {}
    if isinstance(arguments, str):
        try:
            parsed = orjson.loads(arguments)
        except orjson.JSONDecodeError:
            return arguments
        return parsed if isinstance(parsed, dict) else arguments
    return arguments


def _with_parsed_arguments(arguments: dict[str, Any]) -> dict[str, Any]:
    """Meta-tool arguments with each nested tool's `arguments` parsed as `_as_arguments` does."""
    parsed = dict(arguments)
    if "arguments" in parsed:
        parsed["arguments"] = _as_arguments(parsed["arguments"])
    if isinstance(parsed.get("calls"), list):
        parsed["calls"] = [
            _with_parsed_arguments(call) if isinstance(call, dict) else call for call in parsed["calls"]
        ]
    return parsed


def _catalog_unavailable(exc: UpstreamError) -> dict[str, Any]:
    reason = excerpt(str(exc), _ERROR_CHARS)
    return error_result(
        f"The tool catalog could not be listed from the upstream ({reason}). Try again shortly."
    )


def _show(entry: dict[str, Any], key: str, value: Any) -> None:
    """Put upstream `value` in `entry[key]` as a model may see it, noting in `entry["abridged"]` what
    was cut or left out."""
    shown, notes = abridged(value, f"/{key}")
    if shown is not None:
        entry[key] = shown
    if notes:
        entry.setdefault("abridged", []).extend(notes)


def _schema_error(
    name: str, problems: Sequence[str], schema: Mapping[str, Any], *, upstream: bool = False
) -> dict[str, Any]:
    source = (
        "The upstream rejected the arguments" if upstream else "The arguments do not match the input schema"
    )
    lines = "\n".join(f"- {problem}" for problem in problems)
    shown, notes = abridged(schema, "/inputSchema")
    schema_json = orjson.dumps(shown).decode() if shown is not None else "(too large to show)"
    cuts = f"\nAbridged: {'; '.join(notes)}." if notes else ""
    return error_result(
        f"{source} of {name}:\n{lines}\nInput schema: {schema_json}{cuts}\nFix the arguments and call again."
    )


def _passed_through(name: str, result: dict[str, Any], *, relay_input: bool) -> dict[str, Any]:
    """The upstream's tool result as it came, less the upstream's own protocol envelope. A result
    that asks for input is relayed to a caller that can answer it, and fails the call otherwise."""
    kind = result.get("resultType")
    if kind == INPUT_REQUIRED and relay_input:
        return {**without_envelope(result), "resultType": INPUT_REQUIRED}
    if kind == INPUT_REQUIRED:
        return error_result(
            f"{name} asks for input ({asked_input(result)}) before it can finish; toolsearch "
            "passes such requests on only to clients of protocol 2026-07-28, one call at a time."
        )
    if kind not in (None, "complete"):
        return error_result(f"{name} answered with a result of unknown type {excerpt(str(kind), 100)!r}.")
    return without_envelope(result)


def _upstream_error(exc: UpstreamRpcError, message: str) -> dict[str, Any]:
    """An upstream JSON-RPC error as a meta-tool's `structuredContent` shows it to the model."""
    error: dict[str, Any] = {"code": exc.code, "message": message}
    if exc.data is not None:
        error["data"] = abridged(exc.data, "/error/data")[0]
    return error


def _log_call(tool: str, outcome: str, started: float) -> None:
    logger.info(
        "tool call",
        extra={
            "tool": tool,
            "outcome": outcome,
            "duration_ms": round((time.perf_counter() - started) * 1000, 1),
        },
    )
