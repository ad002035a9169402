"""The answer of `search_tools`: what an agent reads to pick a tool, within a character budget.

A pure function of hits already found, the caller's catalog and the budget (`search_answer`):

- **Budget.** The answer's JSON takes at most `chars_per_query` characters per query of the call;
  a query's unused share goes to the next. What does not fit is said in the query's `more`
  (`describe_tool` gives any tool's whole definition).
- **Leaders and the rest.** The first `leaders` tools of a query get what decides a call: the
  description cut at a sentence or clause boundary (leading notices such as "IMPORTANT: ..." moved
  behind what the tool does: `descriptions`; a sentence most tools of its server share left out:
  `catalog.boilerplate`), `readOnly`, and the input schema compacted
  (`compact_schemas`); the leaders' schemas are compacted harder, then left out, when the budget is
  short. The rest get a name, one line and `readOnly`. A tool shown under an earlier query of the
  call is named again, not shown again.
- **Twins.** Tools that are the same but for their server (`twins`) are one entry under the
  group's leading name, the others in `alsoAs`, ranked once where the first of them ranked.
- **No match.** When the search found nothing or doubts its best hit (`SearchHit.weak`), the query
  is answered short: `matched: false` and a note, the nearest few tools in one line each.
- **What the request names** (`search.products` decides it; this only formats it). `servers`: the
  servers whose product the query names, each with its tool count, and only those. `notInCatalog`,
  first after the query: the proper names the query gives that no server or tool mentions, when it
  names no product the catalog has (a product the catalog lacks, or a value such as a person's
  name); with no good match, the note names them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, NamedTuple

from toolsearch.catalog.service import Catalog
from toolsearch.metatools.compact_schemas import SchemaCut, compact_schema_of, json_chars
from toolsearch.metatools.descriptions import described, shortened
from toolsearch.search import SearchHit
from toolsearch.tool import Tool

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
"""The most servers, and names not in the catalog, named per query."""

_ABOVE: Final = "(shown above)"
_FULL: Final = "full"
_LINE: Final = "line"


class _Found(NamedTuple):
    """A distinct tool of a query's hits: a twin group's leading tool and the group's other names."""

    tool: Tool
    weak: bool
    also: tuple[str, ...]


SCHEMA_CUTS: Final = (
    SchemaCut(description_chars=120, enum_items=8, depth=3),
    SchemaCut(description_chars=60, enum_items=5, depth=2),
    SchemaCut(description_chars=0, enum_items=3, depth=1, properties=15),
)
"""Ever shorter schemas: a leader gets the first that fits what is left of its query's share."""


def answer_budget(queries: int, chars_per_query: int) -> int:
    """The most characters of a `search_tools` answer to `queries` queries."""
    return queries * chars_per_query


def search_answer(
    searches: Sequence[tuple[str, Sequence[SearchHit]]],
    catalog: Catalog,
    *,
    read_only: Callable[[Tool], bool | str],
    limit: int,
    leaders: int,
    chars_per_query: int,
    schemas: bool = True,
) -> dict[str, Any]:
    """The answer to one `search_tools` call: per query (with its hits, best first, as
    `Catalog.hits` gives them for `limit` entries), at most `limit` entries;
    without `schemas`, the leaders' input schemas are left out."""
    answer: dict[str, Any] = {"total": len(catalog), "results": []}
    budget = answer_budget(len(searches), chars_per_query)
    used = json_chars(answer)
    shown: dict[str, str] = {}
    """How each tool was shown under an earlier query of the call (`_FULL` or `_LINE`)."""
    for number, (query, hits) in enumerate(searches):
        share = (budget - used) // (len(searches) - number) - 1  # a comma between results
        result = _query_result(query, hits, catalog, read_only, limit, leaders, schemas, share, shown)
        answer["results"].append(result)
        used += json_chars(result) + 1
    return answer


def _query_result(
    query: str,
    hits: Sequence[SearchHit],
    catalog: Catalog,
    read_only: Callable[[Tool], bool | str],
    limit: int,
    leaders: int,
    schemas: bool,
    share: int,
    shown: dict[str, str],
) -> dict[str, Any]:
    found = _distinct(hits, catalog, limit)
    result: dict[str, Any] = {"query": shortened(query, QUERY_CHARS)}
    products = catalog.products(query)
    absent = [] if products.servers else list(products.unknown[:MAP_ENTRIES])
    if absent:
        result["notInCatalog"] = absent
    matched = bool(found) and not found[0].weak
    if not matched:
        result["matched"] = False
        result["note"] = _absent_note(absent) if absent else NO_GOOD_MATCH if found else NO_MATCH
        found = found[:NEAREST]
    counts = dict(catalog.servers)
    if products.servers:
        result["servers"] = [
            {"name": server, "tools": counts.get(server, 0)} for server in products.servers[:MAP_ENTRIES]
        ]
    lines = [_line(each, catalog, read_only, shown) for each in found]
    # Room for the note of what was left out, should anything be: kept whether or not it is needed.
    room = share - json_chars({**result, "tools": []}) - json_chars(_more(limit, leaders)) - len('"more":,')
    kept = _fitting(lines[:SURE_RESULTS], room)
    entries = lines[:kept]
    room -= sum(json_chars(entry) + 1 for entry in entries)
    schemas_left_out = 0
    for rank in range(min(leaders, kept) if matched else 0):
        tool = found[rank].tool
        if shown.get(tool.name) == _FULL:
            continue
        room_here = room + json_chars(entries[rank])
        full, has_schema = _leader(found[rank], catalog, read_only, room_here, schemas=schemas)
        schemas_left_out += schemas and not has_schema
        if full is not None:
            room -= json_chars(full) - json_chars(entries[rank])
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
    found: _Found, catalog: Catalog, read_only: Callable[[Tool], bool | str], shown: Mapping[str, str]
) -> dict[str, Any]:
    """A tool in a name, one line and whether it only reads (which call tool takes it); a tool
    shown under an earlier query of the call is only named."""
    tool = found.tool
    if tool.name in shown:
        return {"name": tool.name, "description": _ABOVE}
    description = described(tool, LINE_CHARS, catalog.boilerplate(tool.name))
    entry = {"name": tool.name, "description": description, "readOnly": read_only(tool)}
    _marked(entry, found, catalog)
    return entry


def _leader(
    found: _Found, catalog: Catalog, read_only: Callable[[Tool], bool | str], room: int, *, schemas: bool
) -> tuple[dict[str, Any] | None, bool]:
    """A leader's entry within `room` characters: with the fullest compacted schema that fits, else
    without a schema; None when even that does not fit. The flag says whether a schema is in it."""
    tool = found.tool
    description = described(tool, LEADER_CHARS, catalog.boilerplate(tool.name))
    entry: dict[str, Any] = {"name": tool.name, "description": description}
    entry["readOnly"] = read_only(tool)
    _marked(entry, found, catalog)
    for cut in SCHEMA_CUTS if schemas else ():
        with_schema = {**entry, "inputSchema": compact_schema_of(tool, cut)}
        if json_chars(with_schema) <= room:
            return with_schema, True
    return (entry, False) if json_chars(entry) <= room else (None, False)


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
        room -= json_chars(entry) + 1
        if room < 0:
            return count
    return len(entries)


def _more(results: int, schemas: int) -> str:
    cut = [f"{results} more result{'s' * (results != 1)}"] if results else []
    cut += [f"{schemas} schema{'s' * (schemas != 1)}"] if schemas else []
    return f"{' and '.join(cut)} left out to fit the answer's budget; describe_tool gives full definitions."


def _absent_note(absent: Sequence[str]) -> str:
    names = ", ".join(absent)
    return (
        f"No server or tool of this catalog mentions {names}: tell the user that no available tool "
        "does this, unless one of the nearest named here plainly does."
    )
