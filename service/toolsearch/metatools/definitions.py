"""The meta-tools' public interface: their names, their definitions as `tools/list` shows them,
and what search_tools' description says of the caller's catalog.

The definitions are data (`_DEFINITIONS`); the settings only fill in the batch tool's limit, and
a limit of 0 leaves the batch tool out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final

from toolsearch.catalog.service import Catalog
from toolsearch.metatools.policy import ToolPolicy

SEARCH: Final = "search_tools"
DESCRIBE: Final = "describe_tool"
CALL_READ: Final = "call_read_tool"
CALL_READ_BATCH: Final = "call_read_tools"
CALL_WRITE: Final = "call_write_tool"

_MAX_SERVER_LIST_CHARS: Final = 2000
"""Room for the catalog's servers in search_tools' description: tools/list stays under 1,500 tokens
(6,000 characters) with the 150 servers of the recorded catalog all named."""
_SERVER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]{0,39}")
"""A server name as shown to the model: names are upstream text, so anything else is left out."""

_NAME = {"type": "string", "description": "Exact tool name, as search_tools returns it."}
_ARGUMENTS = {"type": "object", "description": "Arguments matching the tool's input schema."}
_ONE_CALL = {
    "type": "object",
    "properties": {"name": _NAME, "arguments": _ARGUMENTS},
    "required": ["name"],
    "additionalProperties": False,
}
_MAX_BATCH_CALLS: Final = "{max_batch_calls}"
"""Where the batch tool's definition takes `--max-batch-calls` (`definitions`)."""

_DEFINITIONS: Final[tuple[dict[str, Any], ...]] = (
    {
        "name": SEARCH,
        "title": "Search tools",
        "description": (
            "Find tools for a task. The tools you can call are not listed directly: search first, "
            "then call one by its exact name. Per query: the best tools, the top ones with readOnly "
            "and a compacted input schema, the rest a name and a line (describe_tool gives full "
            "definitions); a tool several servers serve is one entry, its other names (each "
            'callable) in alsoAs. readOnly "inferred": judged a read, not marked so by its server. '
            "matched:false: no tool fits. `servers`: the servers whose product "
            "you named; `notInCatalog`: names you gave that no tool mentions. Describe the task in "
            "any language; "
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
            "Call a tool that only reads (readOnly: true in search results{inferred}). "
            "Anything that creates, changes or deletes goes through call_write_tool."
        ),
        "inputSchema": _ONE_CALL,
        "annotations": {"readOnlyHint": True, "openWorldHint": True},
    },
    {
        "name": CALL_READ_BATCH,
        "title": "Call read-only tools in parallel",
        "description": (
            "Call up to {max_batch_calls} read-only tools at once. Results come back in order, each "
            "labelled with its index, tool and whether it failed; one failure does not stop the others."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "calls": {"type": "array", "minItems": 1, "maxItems": _MAX_BATCH_CALLS, "items": _ONE_CALL}
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
        "inputSchema": _ONE_CALL,
        "annotations": {"readOnlyHint": False, "destructiveHint": True, "openWorldHint": True},
    },
)


def definitions(max_batch_calls: int, *, read_inferred: bool = False) -> list[dict[str, Any]]:
    """The meta-tools' definitions with the batch tool's limit (without the batch tool at 0), and
    call_read_tool saying whether it takes reads judged so but not marked (`--read-inferred`)."""
    single = next(d for d in _DEFINITIONS if d["name"] == CALL_READ)
    inferred = ' or "inferred"' if read_inferred else '; "inferred" ones go through call_write_tool'
    changed = {CALL_READ: {**single, "description": single["description"].format(inferred=inferred)}}
    if max_batch_calls:
        batch = next(d for d in _DEFINITIONS if d["name"] == CALL_READ_BATCH)
        calls = {**batch["inputSchema"]["properties"]["calls"], "maxItems": max_batch_calls}
        schema = {**batch["inputSchema"], "properties": {"calls": calls}}
        description = batch["description"].format(max_batch_calls=max_batch_calls)
        changed[CALL_READ_BATCH] = {**batch, "description": description, "inputSchema": schema}
    return [
        changed.get(d["name"], d) for d in _DEFINITIONS if max_batch_calls or d["name"] != CALL_READ_BATCH
    ]


def listed_tools(
    definitions: Sequence[dict[str, Any]], catalog: Catalog | None, policy: ToolPolicy
) -> list[dict[str, Any]]:
    """What `tools/list` shows: the meta-tools (search_tools naming the caller's servers), then
    the caller's pinned tools as themselves."""
    if catalog is None:
        return list(definitions)
    names = {d["name"] for d in definitions}
    described = [
        {**d, "description": d["description"] + servers_note(catalog.servers)} if d["name"] == SEARCH else d
        for d in definitions
    ]
    pinned = [
        dict(t.definition)
        # By name: one list whatever order the upstream lists in, so clients can cache it.
        for t in sorted(catalog.tools, key=lambda tool: tool.name)
        if policy.is_pinned(t) and t.name not in names and not catalog.withheld(t.name)
    ]
    return [*described, *pinned]


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
