"""The answer of `search_tools`: what an agent reads to pick a tool, within a character budget.

A pure function of hits already found, the caller's catalog and the budget (`search_answer`):

- **Budget.** The answer's JSON takes at most `chars_per_query` characters per query of the call;
  a query's unused share goes to the next. What does not fit is said in the query's `more`
  (`describe_tool` gives any tool's whole definition).
- **Leaders and the rest.** The first `leaders` tools of a query get what decides a call: the
  description cut at a sentence or clause boundary (leading notices such as "IMPORTANT: ..." moved
  behind what the tool does), `readOnly`, and the input schema compacted (`compact_schema`); the
  leaders' schemas are compacted harder, then left out, when the budget is short. The rest get a
  name, one line and `readOnly`. A tool shown under an earlier query of the call is named again,
  not shown again.
- **Twins.** Tools that are the same but for their server (`twins`) are one entry under the
  group's leading name, the others in `alsoAs`, ranked once where the first of them ranked.
- **No match.** When the search found nothing or doubts its best hit (`SearchHit.weak`), the query
  is answered short: `matched: false` and a note, the nearest few tools in one line each, and the
  servers nearby.
- **The map.** Each query says which servers its words name (`servers`) and which of its words no
  tool mentions (`unmentioned`): whether a product it names is in the catalog at all.
"""

from __future__ import annotations

import functools
import re
import threading
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

import cachetools
import orjson

from toolsearch.catalog import Catalog
from toolsearch.naming import split_qualified_name
from toolsearch.search import SearchHit
from toolsearch.tool import Tool
from toolsearch.untrusted import clean_text

NO_GOOD_MATCH: Final = (
    "No tool matches this request well; the nearest are named. Use one only if its description "
    "fits; otherwise tell the user that no available tool does this."
)
NO_MATCH: Final = (
    "No tool matches this request. Search again in other words; if nothing fits, tell the user that "
    "no available tool does this."
)
NEAREST: Final = 3
"""How many tools a "no match" answer names."""
SURE_RESULTS: Final = 5
"""Results named before the leaders get their schemas: the leaders' details come before the tail."""
LEADER_CHARS: Final = 240
"""The most characters of a leader's description."""
LINE_CHARS: Final = 90
"""The most characters of the one line the other tools get."""
QUERY_CHARS: Final = 120
"""The most characters of a query repeated in its result (the agent knows its own query)."""
MAP_ENTRIES: Final = 5
"""The most servers and unmentioned words named per query."""

_LOCK: Final = threading.Lock()
"""Guards the caches of descriptions and schemas as cut for answers (by tool digest)."""
_ABOVE: Final = "(shown above)"
_FULL: Final = "full"
_LINE: Final = "line"


class _Found(NamedTuple):
    """A distinct tool of a query's hits: a twin group's leading tool and the group's other names."""

    tool: Tool
    weak: bool
    also: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SchemaCut:
    """How far `compact_schema` shortens a schema."""

    description_chars: int
    enum_items: int
    depth: int
    """Levels of properties named; a property deeper than that is left out, one at the last level
    shows its type but not its own properties."""
    properties: int = 25


SCHEMA_CUTS: Final = (
    SchemaCut(description_chars=120, enum_items=8, depth=3),
    SchemaCut(description_chars=60, enum_items=5, depth=2),
    SchemaCut(description_chars=0, enum_items=3, depth=1, properties=15),
)
"""Ever shorter schemas: a leader gets the first that fits what is left of its query's share."""

_SCHEMA_KEYS: Final = frozenset(
    {
        "type",
        "description",
        "properties",
        "required",
        "items",
        "enum",
        "const",
        "default",
        "format",
        "anyOf",
        "oneOf",
        "minimum",
        "maximum",
        "minItems",
        "maxItems",
        "$ref",
    }
)
"""What of a schema decides how to call: its types, names, requirements and allowed values.
Titles, patterns, `$defs`, `additionalProperties` and examples are left to `describe_tool`."""
_MAX_VARIANTS: Final = 4
_MAX_DEFAULT_CHARS: Final = 40


def answer_budget(queries: int, chars_per_query: int) -> int:
    """The most characters of a `search_tools` answer to `queries` queries."""
    return queries * chars_per_query


def search_answer(
    searches: Sequence[tuple[str, Sequence[SearchHit]]],
    catalog: Catalog,
    *,
    read_only: Callable[[Tool], bool],
    limit: int,
    leaders: int,
    chars_per_query: int,
    schemas: bool = True,
) -> dict[str, Any]:
    """The answer to one `search_tools` call: per query (with its hits, best first, more than
    `limit` so that twins folded together leave room for other tools), at most `limit` entries;
    without `schemas`, the leaders' input schemas are left out."""
    answer: dict[str, Any] = {"total": len(catalog), "results": []}
    budget = answer_budget(len(searches), chars_per_query)
    used = _size(answer)
    shown: dict[str, str] = {}
    """How each tool was shown under an earlier query of the call (`_FULL` or `_LINE`)."""
    for number, (query, hits) in enumerate(searches):
        share = (budget - used) // (len(searches) - number) - 1  # a comma between results
        result = _query_result(query, hits, catalog, read_only, limit, leaders, schemas, share, shown)
        answer["results"].append(result)
        used += _size(result) + 1
    return answer


def _query_result(
    query: str,
    hits: Sequence[SearchHit],
    catalog: Catalog,
    read_only: Callable[[Tool], bool],
    limit: int,
    leaders: int,
    schemas: bool,
    share: int,
    shown: dict[str, str],
) -> dict[str, Any]:
    found = _distinct(hits, catalog, limit)
    result: dict[str, Any] = {"query": _shortened(query, QUERY_CHARS)}
    matched = bool(found) and not found[0].weak
    if not matched:
        result["matched"] = False
        result["note"] = NO_GOOD_MATCH if found else NO_MATCH
        found = found[:NEAREST]
    named = _named_servers(query, catalog)
    nearby = named if matched else _with_servers_of(named, [each.tool for each in found], catalog)
    if nearby:
        result["servers"] = dict(nearby[:MAP_ENTRIES])
    unmentioned = catalog.unknown_words(query)[:MAP_ENTRIES]
    if unmentioned:
        result["unmentioned"] = unmentioned
    lines = [_line(each, catalog, read_only, shown) for each in found]
    # Room for the note of what was left out, should anything be: kept whether or not it is needed.
    room = share - _size({**result, "tools": []}) - _size(_more(limit, leaders)) - len('"more":,')
    kept = _fitting(lines[:SURE_RESULTS], room)
    entries = lines[:kept]
    room -= sum(_size(entry) + 1 for entry in entries)
    schemas_left_out = 0
    for rank in range(min(leaders, kept) if matched else 0):
        tool = found[rank].tool
        if shown.get(tool.name) == _FULL:
            continue
        room_here = room + _size(entries[rank])
        full, has_schema = _leader(found[rank], catalog, read_only, room_here, schemas=schemas)
        schemas_left_out += schemas and not has_schema
        if full is not None:
            room -= _size(full) - _size(entries[rank])
            entries[rank] = full
            shown[tool.name] = _FULL
    if kept == SURE_RESULTS:
        more = _fitting(lines[kept:], room)
        entries += lines[kept : kept + more]
        kept += more
    if kept < len(lines) or schemas_left_out:
        result["more"] = _more(len(lines) - kept, schemas_left_out)
    result["tools"] = entries
    for each in found[:kept]:
        shown.setdefault(each.tool.name, _LINE)
    return result


def _distinct(hits: Sequence[SearchHit], catalog: Catalog, limit: int) -> list[_Found]:
    """The first `limit` distinct tools of `hits`, each twin group once, under its leading name,
    where its first member ranked; MCP Apps' own tools left out."""
    found: list[_Found] = []
    seen: set[str] = set()
    for hit in hits:
        tool = catalog.tools[hit.position]
        if tool.app_only or tool.name in seen:
            continue
        group = [name for name in catalog.twins(tool.name) if not catalog.withheld(name)] or [tool.name]
        seen.update(group)
        lead = catalog.get(group[0]) or tool
        found.append(_Found(lead, hit.weak, tuple(group[1:])))
        if len(found) == limit:
            break
    return found


def _line(
    found: _Found, catalog: Catalog, read_only: Callable[[Tool], bool], shown: Mapping[str, str]
) -> dict[str, Any]:
    """A tool in a name, one line and whether it only reads (which call tool takes it); a tool
    shown under an earlier query of the call is only named."""
    tool = found.tool
    if tool.name in shown:
        return {"name": tool.name, "description": _ABOVE}
    entry = {"name": tool.name, "description": _described(tool, LINE_CHARS), "readOnly": read_only(tool)}
    _marked(entry, found, catalog)
    return entry


def _leader(
    found: _Found, catalog: Catalog, read_only: Callable[[Tool], bool], room: int, *, schemas: bool
) -> tuple[dict[str, Any] | None, bool]:
    """A leader's entry within `room` characters: with the fullest compacted schema that fits, else
    without a schema; None when even that does not fit. The flag says whether a schema is in it."""
    tool = found.tool
    entry: dict[str, Any] = {"name": tool.name, "description": _described(tool, LEADER_CHARS)}
    entry["readOnly"] = read_only(tool)
    _marked(entry, found, catalog)
    for cut in SCHEMA_CUTS if schemas else ():
        with_schema = {**entry, "inputSchema": _compact_schema_of(tool, cut)}
        if _size(with_schema) <= room:
            return with_schema, True
    return (entry, False) if _size(entry) <= room else (None, False)


def _marked(entry: dict[str, Any], found: _Found, catalog: Catalog) -> None:
    if found.also:
        entry["alsoAs"] = list(found.also)
    mark_suspicious(entry, catalog)
    if found.weak:
        entry["weak"] = True


def mark_suspicious(entry: dict[str, Any], catalog: Catalog) -> None:
    """Mark the tool `entry` names with why it looks hostile (`integrity`), if it does, and the tool
    it imitates."""
    reasons = catalog.suspicious(entry["name"])
    if reasons:
        entry["suspicious"] = list(reasons)
        imitated = catalog.imitated(entry["name"])
        if imitated:
            entry["imitates"] = imitated


def _fitting(entries: Sequence[Mapping[str, Any]], room: int) -> int:
    """How many of `entries`, from the first, fit in `room` characters of a JSON list."""
    for count, entry in enumerate(entries):
        room -= _size(entry) + 1
        if room < 0:
            return count
    return len(entries)


def _more(results: int, schemas: int) -> str:
    cut = [f"{results} more result{'s' * (results != 1)}"] if results else []
    cut += [f"{schemas} schema{'s' * (schemas != 1)}"] if schemas else []
    return f"{' and '.join(cut)} left out to fit the answer's budget; describe_tool gives full definitions."


def _size(value: Any) -> int:
    """Characters of `value` as JSON."""
    return len(orjson.dumps(value).decode())


# -- the map -----------------------------------------------------------------------------------


_WORD = re.compile(r"[^\W_]{3,}")
_GENERIC: Final = frozenset({"mcp", "api", "server", "tools", "full", "official", "remote"})
"""Parts of server names that name no product."""


def _named_servers(query: str, catalog: Catalog) -> list[tuple[str, int]]:
    """The catalog's servers (with their tool counts) whose name, or a part of it, is a word of
    `query`: `github` names github and github-actions."""
    words = {word.lower() for word in _WORD.findall(query)}
    if not words:
        return []
    return [(server, count) for server, count in catalog.servers if words.intersection(_name_parts(server))]


@functools.lru_cache(maxsize=4096)
def _name_parts(server: str) -> frozenset[str]:
    """The words a server name is known by: itself and its parts, but those that name no product."""
    name = server.lower()
    return frozenset({name, *re.split(r"[-.]", name)}) - _GENERIC


def _with_servers_of(
    named: list[tuple[str, int]], tools: Sequence[Tool], catalog: Catalog
) -> list[tuple[str, int]]:
    counts = dict(catalog.servers)
    nearby = dict(named)
    for tool in tools:
        server = split_qualified_name(tool.name)[0]
        if server in counts:
            nearby.setdefault(server, counts[server])
    return list(nearby.items())


# -- descriptions ------------------------------------------------------------------------------


_NOTICE = re.compile(r"(IMPORTANT|MANDATORY|REQUIRED|WARNING|NOTE|CRITICAL|ALWAYS|NEVER|ATTENTION|CAUTION)\b")
_DECORATION: Final = frozenset(" \t*#-•>[]|\ufe0f")
_PARAGRAPHS = re.compile(r"\n\s*\n")
_SENTENCE_END = re.compile(r"[.!?。！？](?=\s|$)")
_CLAUSE_END = re.compile(r"[,;)] | [-–—] | \(")
_ABBREVIATIONS: Final = frozenset({"e.g", "i.e", "etc", "vs", "cf", "approx", "incl", "no"})


@cachetools.cached(cachetools.LRUCache(16_384), key=lambda tool, limit: (tool.digest, limit), lock=_LOCK)
def _described(tool: Tool, limit: int) -> str:
    """The tool's description as an agent picks by it: what it does first, at most `limit`
    characters; for a tool without one, that it has none and the names of its parameters."""
    text = _plain(tool.description)
    if text:
        return cut_text(text, limit)
    title = _plain(tool.title)
    properties = tool.input_schema.get("properties")
    names = [clean_text(str(name))[:40] for name in properties] if isinstance(properties, Mapping) else []
    parameters = f"parameters: {', '.join(names)}" if names else "no parameters"
    return cut_text(f"{title + ' ' if title else ''}(no description; {parameters})", limit)


def _plain(text: str) -> str:
    """Upstream text in one line: without control characters, markdown emphasis and the decoration
    that opens lines, leading notices ("IMPORTANT: ...", by paragraph, or by sentence in a text of one
    paragraph) moved behind what follows them."""
    text = clean_text(text[:20_000]).replace("**", "").replace("`", "")
    units = [unit for unit in _PARAGRAPHS.split(text.strip()) if unit.strip()]
    if len(units) == 1:
        units = _sentences(units[0])
    notices = 0
    while notices < len(units) - 1 and _NOTICE.match(_undecorated(units[notices])):
        notices += 1
    ordered = [*units[notices:], *units[:notices]]
    return " ".join(" ".join(_undecorated(line).split()) for unit in ordered for line in unit.splitlines())


def _undecorated(text: str) -> str:
    """`text` without the emoji, bullets and markdown marks that open it."""
    start = 0
    while start < len(text) and (text[start] in _DECORATION or unicodedata.category(text[start])[0] in "SZ"):
        start += 1
    return text[start:]


def _sentences(text: str) -> list[str]:
    sentences, start = [], 0
    for end in _sentence_ends(text):
        if text[start:end].strip():
            sentences.append(text[start:end].strip())
        start = end
    if text[start:].strip():
        sentences.append(text[start:].strip())
    return sentences


def _sentence_ends(text: str) -> list[int]:
    """Where sentences of `text` end: a stop not after a list number, an initial or an abbreviation."""
    ends = []
    for match in _SENTENCE_END.finditer(text):
        words = text[: match.start()].rsplit(None, 1)
        word = words[-1].lower() if words else ""
        if not word or word.isdigit() or len(word) == 1 or word.strip("(") in _ABBREVIATIONS:
            continue
        ends.append(match.end())
    return ends


def cut_text(text: str, limit: int) -> str:
    """`text` (as `_plain` leaves it) in one line of at most `limit` characters: cut after the last
    whole sentence that fits (not one that opens a list with a colon), else at a clause or a word,
    ending in `…`."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    window = text[:limit]
    for end in reversed(_sentence_ends(window)):
        if end < limit * 0.35:
            break
        if not window[:end].endswith(":"):
            return window[:end]
    clauses = [match.start() for match in _CLAUSE_END.finditer(window)]
    if clauses and clauses[-1] >= limit // 2:
        return window[: clauses[-1]].rstrip(" ,;:-–—(") + "…"
    return _shortened(text, limit)


def _shortened(text: str, limit: int) -> str:
    """`text` cut at the last word that fits `limit` characters with `…`."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    head = cut.rsplit(" ", 1)[0] if " " in cut[limit // 2 :] else cut
    return head.rstrip(" ,;:") + "…"


# -- schemas -----------------------------------------------------------------------------------


@cachetools.cached(cachetools.LRUCache(maxsize=2048), key=lambda tool, cut: (tool.digest, cut), lock=_LOCK)
def _compact_schema_of(tool: Tool, cut: SchemaCut) -> dict[str, Any]:
    """`compact_schema` of a tool's input schema, kept for the tools searched most (callers share
    tools; answers only read it)."""
    return compact_schema(tool.input_schema, cut)


def compact_schema(schema: Mapping[str, Any], cut: SchemaCut) -> dict[str, Any]:
    """What of an input schema decides a call, shortened by `cut`: property descriptions and enum
    lists cut, properties deeper than `cut.depth` levels shown by type only, keys that only
    document (titles, examples, patterns) left out. A local `$ref` (`#/$defs/...`) is replaced by
    what it names, one level deeper, since the `$defs` it points into are not shown."""
    return _compact(schema, cut, 0, schema)


def _compact(node: Mapping[str, Any], cut: SchemaCut, depth: int, root: Mapping[str, Any]) -> dict[str, Any]:
    shown: dict[str, Any] = {}
    for key, value in node.items():
        if key not in _SCHEMA_KEYS:
            continue
        if key == "properties" and isinstance(value, Mapping):
            if depth >= cut.depth:
                continue
            shown[key] = _properties(value, cut, depth, root)
            if len(value) > cut.properties:
                shown["moreProperties"] = len(value) - cut.properties
        elif key == "items" and isinstance(value, Mapping):
            shown[key] = _child(value, cut, depth + 1, root)
        elif key == "$ref":
            target = _local_definition(root, value)
            for name, part in _child(target, cut, depth + 1, root).items() if target else ():
                shown.setdefault(name, part)
        elif key in ("anyOf", "oneOf") and isinstance(value, list):
            variants = [item for item in value if isinstance(item, Mapping)][:_MAX_VARIANTS]
            shown[key] = [_child(item, cut, depth + 1, root) for item in variants]
        elif key == "description" and isinstance(value, str):
            if cut.description_chars and value.strip():
                shown[key] = cut_text(_plain(value), cut.description_chars)
        elif key == "enum" and isinstance(value, list):
            shown[key] = [_scalar(item) for item in value[: cut.enum_items]]
            if len(value) > cut.enum_items:
                shown[key].append(f"…({len(value) - cut.enum_items} more)")
        elif key == "default" and _size(value) > _MAX_DEFAULT_CHARS:
            continue
        elif key == "required" and isinstance(value, list):
            if depth >= cut.depth:
                continue
            shown[key] = [clean_text(str(name))[:64] for name in value[: cut.properties]]
        else:
            shown[key] = _scalar(value)
    return shown


def _properties(
    properties: Mapping[str, Any], cut: SchemaCut, depth: int, root: Mapping[str, Any]
) -> dict[str, Any]:
    shown = {}
    for name, value in list(properties.items())[: cut.properties]:
        key = clean_text(str(name))[:64]
        shown[key] = _child(value, cut, depth + 1, root) if isinstance(value, Mapping) else {}
    return shown


def _child(node: Mapping[str, Any], cut: SchemaCut, depth: int, root: Mapping[str, Any]) -> dict[str, Any]:
    """A nested schema: compacted while within `cut.depth`, by its type alone past it."""
    if depth <= cut.depth:
        return _compact(node, cut, depth, root)
    kind = node.get("type")
    return {"type": _scalar(kind)} if isinstance(kind, str | list) else {}


def _local_definition(root: Mapping[str, Any], ref: object) -> Mapping[str, Any] | None:
    """The schema a JSON pointer within the document (`#/$defs/Name`) names, or None."""
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return None
    node: object = root
    for part in ref[2:].split("/"):
        if not isinstance(node, Mapping):
            return None
        node = node.get(part.replace("~1", "/").replace("~0", "~"))
    return node if isinstance(node, Mapping) else None


def _scalar(value: Any) -> Any:
    """An upstream value in a schema: texts cleaned and short, lists of texts too, nothing nested."""
    if isinstance(value, str):
        return _shortened(clean_text(value), 60)
    if isinstance(value, list):
        return [_scalar(item) for item in value[:10] if not isinstance(item, dict | list)]
    if isinstance(value, dict):
        return {}
    return value
