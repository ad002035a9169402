"""The rules of a meta-tool call, as pure functions: what the model's arguments mean, which tool a
call may reach, and what each outcome comes to for the model.

Every problem comes back as an `isError` result that says what is wrong and how to fix it, so the
model can correct itself in the next turn: arguments that do not fit a schema (`schema_error`, with
the schema), a name the catalog lacks (`unknown_tool`, with the name meant or similar ones), a tool
that writes called through call_read_tool(s) (`call_refusal`), an upstream failure
(`upstream_failure`). A tool's result is passed through as the upstream gave it (`passed_through`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import orjson

from toolsearch.catalog.service import Catalog
from toolsearch.integrity.skeletons import lookalike_note
from toolsearch.mcp.errors import InputNotRelayed, UpstreamError, UpstreamRpcError
from toolsearch.mcp.jsonrpc import INVALID_PARAMS
from toolsearch.mcp.protocol import INPUT_REQUIRED, asked_input, without_envelope
from toolsearch.metatools.answer import mark_suspicious
from toolsearch.metatools.policy import INFERRED, ToolPolicy
from toolsearch.metatools.validation import argument_problems
from toolsearch.naming import intended_name, similar_names
from toolsearch.tool import Tool
from toolsearch.untrusted import abridged, excerpt

MAX_QUERY_CHARS: Final = 1000
_ERROR_CHARS: Final = 2000
"""The most of an upstream's error message passed on to the model."""
_DEFAULT_LIMIT: Final = 8


def error_result(message: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": message}], "isError": True}


def json_result(value: Any) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": orjson.dumps(value).decode()}]}


# -- arguments ------------------------------------------------------------------------------------


def as_arguments(arguments: Any) -> Any:
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


def unparsed_arguments(arguments: Mapping[str, Any]) -> str | None:
    """Why a tool's `arguments` (of a call, or of one of `calls`) sent as a string were not taken:
    the string is not JSON, or not the JSON of an object. None when no such string was sent."""
    calls = arguments.get("calls")
    nested = [call for call in calls if isinstance(call, dict)] if isinstance(calls, list) else []
    for each in [arguments, *nested]:
        if isinstance(each.get("arguments"), str):
            return f"`arguments` {parse_problem(each['arguments'])}; send a JSON object."
    return None


def parse_problem(text: str) -> str:
    """What is wrong with `text` as a JSON object sent as a string."""
    try:
        parsed = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        return f"could not be parsed as JSON ({exc})"
    return f"is the JSON of a {type(parsed).__name__}, not of an object"


def with_parsed_arguments(arguments: dict[str, Any]) -> dict[str, Any]:
    """Meta-tool arguments with each nested tool's `arguments` parsed as `as_arguments` does."""
    parsed = dict(arguments)
    if "arguments" in parsed:
        parsed["arguments"] = as_arguments(parsed["arguments"])
    if isinstance(parsed.get("calls"), list):
        parsed["calls"] = [
            with_parsed_arguments(call) if isinstance(call, dict) else call for call in parsed["calls"]
        ]
    return parsed


def schema_error(
    name: str, problems: Sequence[str], schema: Mapping[str, Any], *, upstream: bool = False
) -> dict[str, Any]:
    """Arguments of `name` that do not fit its `schema`: each problem, and the schema to fix them by."""
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


# -- search_tools and describe_tool ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """What a search_tools call asks: its queries in order, how many tools each, with schemas or not."""

    queries: list[str]
    limit: int
    schemas: bool


def search_request(arguments: Mapping[str, Any]) -> SearchRequest | dict[str, Any]:
    """search_tools' arguments (valid by its schema) as a request, or the error result saying what
    is missing or too long."""
    queries = [arguments["query"]] if "query" in arguments else []
    queries += arguments.get("queries", [])
    if not queries or not all(query.strip() for query in queries):
        return error_result(
            'search_tools needs "query" (a non-empty string) or "queries" (up to 5 non-empty strings).'
        )
    if any(len(q) > MAX_QUERY_CHARS for q in queries):
        return error_result(f"Each query may have at most {MAX_QUERY_CHARS} characters; shorten it.")
    limit = int(arguments.get("limit", _DEFAULT_LIMIT))  # JSON Schema's integers include 8.0
    return SearchRequest(queries, limit, arguments.get("schemas", True))


def described(
    catalog: Catalog, names: Sequence[str], read_only: Callable[[Tool], bool | str]
) -> dict[str, Any]:
    """describe_tool's answer: each named tool's whole definition as a model may see it (a withheld
    tool says why), and the names the catalog lacks with similar ones."""
    tools, unknown = [], []
    for name in names:
        tool = catalog.get(name)
        if tool is None or tool.app_only:
            unknown.append({"name": name, "similar": similar_names(name, catalog.names)})
            continue
        entry: dict[str, Any] = {"name": tool.name, "readOnly": read_only(tool)}
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
    return answer


def _show(entry: dict[str, Any], key: str, value: Any) -> None:
    """Put upstream `value` in `entry[key]` as a model may see it, noting in `entry["abridged"]` what
    was cut or left out."""
    shown, notes = abridged(value, f"/{key}")
    if shown is not None:
        entry[key] = shown
    if notes:
        entry.setdefault("abridged", []).extend(notes)


# -- calling an upstream tool ---------------------------------------------------------------------


def unknown_tool(name: str, names: Sequence[str]) -> tuple[str, bool]:
    """What a call of `name`, which the catalog of `names` lacks, tells the model, and whether it is a
    typo of one of them (a look-alike name says which character is foreign)."""
    meant = intended_name(name, names)
    if meant is not None:
        message = (
            f"There is no tool named {name!r}.{lookalike_note(name, meant)} Did you mean {meant!r}? "
            "Call it by that name."
        )
        return message, True
    similar = similar_names(name, names)
    hint = f" Similar names: {', '.join(similar)}." if similar else ""
    return f"There is no tool named {name!r}.{hint} Use search_tools to find the right tool.", False


def call_refusal(
    catalog: Catalog, tool: Tool, arguments: Any, policy: ToolPolicy, *, require_read_only: bool
) -> dict[str, Any] | None:
    """Why a call of `tool` with `arguments` does not go upstream, or None when it may: the tool is
    withheld, it writes and the call was made through call_read_tool(s) (`require_read_only`), or
    the arguments break its input schema."""
    withheld = catalog.withheld(tool.name)
    if withheld:
        return error_result(withheld)
    if require_read_only and not policy.is_read_only(tool):
        inferred = policy.read_only_label(tool) == INFERRED
        why = "is judged a read but not marked read-only" if inferred else "is not marked read-only"
        return error_result(
            f"{tool.name} {why}, so call_read_tool(s) refuses it. "
            f"If you intend its effect, call it with call_write_tool."
        )
    if not isinstance(arguments, dict):
        parsing = f": they {parse_problem(arguments)}" if isinstance(arguments, str) else ""
        return schema_error(
            tool.name, [f"at /: the arguments must be a JSON object{parsing}"], tool.input_schema
        )
    problems = argument_problems(tool.input_schema, arguments, key=tool.digest)
    return schema_error(tool.name, problems, tool.input_schema) if problems else None


def upstream_failure(name: str, exc: UpstreamError, schema: Mapping[str, Any]) -> dict[str, Any]:
    """A call of `name` the upstream did not answer with a result: its JSON-RPC error (invalid
    params read as a schema error, with `schema`, and the error kept in `structuredContent`), input
    it asked for that could not be relayed, or no usable answer."""
    if isinstance(exc, UpstreamRpcError):
        message = excerpt(exc.message, _ERROR_CHARS)
        if exc.code == INVALID_PARAMS:
            result = schema_error(name, [message], schema, upstream=True)
        else:
            result = error_result(f"The upstream answered {name} with error {exc.code}: {message}")
        return {**result, "structuredContent": {"error": _upstream_error(exc, message)}}
    if isinstance(exc, InputNotRelayed):
        return error_result(f"{name} could not finish: {exc}.")
    return error_result(f"{name} could not be called: {excerpt(str(exc), _ERROR_CHARS)}. Try again later.")


def _upstream_error(exc: UpstreamRpcError, message: str) -> dict[str, Any]:
    """An upstream JSON-RPC error as a meta-tool's `structuredContent` shows it to the model."""
    error: dict[str, Any] = {"code": exc.code, "message": message}
    if exc.data is not None:
        error["data"] = abridged(exc.data, "/error/data")[0]
    return error


def passed_through(name: str, result: dict[str, Any], *, relay_input: bool) -> dict[str, Any]:
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


def batch_result(
    calls: Sequence[Mapping[str, Any]], outcomes: Sequence[dict[str, Any] | BaseException]
) -> dict[str, Any]:
    """call_read_tools' result: each call's content in order under a line naming its index, tool and
    whether it failed, and a summary in `structuredContent`. A call that raised is one failure."""
    content: list[dict[str, Any]] = []
    summary = []
    for index, (call, outcome) in enumerate(zip(calls, outcomes, strict=True)):
        if isinstance(outcome, BaseException):
            outcome = error_result(f"The call failed inside toolsearch: {type(outcome).__name__}.")
        failed = bool(outcome.get("isError"))
        content.append({"type": "text", "text": f"[{index}] {call['name']}: {'failed' if failed else 'ok'}"})
        content.extend(item for item in outcome.get("content", []) if isinstance(item, dict))
        entry: dict[str, Any] = {"index": index, "name": call["name"], "isError": failed}
        if "structuredContent" in outcome:
            entry["structuredContent"] = outcome["structuredContent"]
        summary.append(entry)
    return {"content": content, "structuredContent": {"results": summary}}


def catalog_unavailable(exc: UpstreamError) -> dict[str, Any]:
    """A call that needs the caller's catalog when the upstream could not list it."""
    reason = excerpt(str(exc), _ERROR_CHARS)
    return error_result(
        f"The tool catalog could not be listed from the upstream ({reason}). Try again shortly."
    )
