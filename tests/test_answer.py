"""The search_tools answer's rules (`toolsearch.answer`), on real catalogs without HTTP, and once
through the proxy in front of a real upstream."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
import pytest

from bench.stats import dev_queries
from tests.conftest import call_json, call_text, connect, running_proxy, running_upstream
from toolsearch.backends.base import CatalogRecord, catalog_digest
from toolsearch.catalog.service import Catalog
from toolsearch.catalog.toolsets import Toolset
from toolsearch.catalog.twins import twin_groups
from toolsearch.metatools.answer import (
    LEADER_CHARS,
    LINE_CHARS,
    NEAREST,
    NO_GOOD_MATCH,
    NO_MATCH,
    SCHEMA_CUTS,
    answer_budget,
    search_answer,
)
from toolsearch.metatools.compact_schemas import compact_schema
from toolsearch.metatools.descriptions import cut_text
from toolsearch.metatools.policy import ToolPolicy
from toolsearch.search import SearchHit
from toolsearch.search.lexical import LexicalIndex
from toolsearch.testing import recorded_tools
from toolsearch.tool import ToolInterner

SEND = {
    "name": "mail_send",
    "description": "Send an email message to one or more recipients.",
    "inputSchema": {"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]},
}
DEFINITIONS = [
    {**SEND, "name": "mail-full_send"},
    SEND,
    {**SEND, "name": "mail-eu_send"},
    {
        "name": "mail_list",
        "description": "List the messages of a mailbox folder.",
        "inputSchema": {"type": "object", "properties": {"folder": {"type": "string"}}},
        "annotations": {"readOnlyHint": True},
    },
    {"name": "calendar_create_event", "description": "Create a calendar event.", "inputSchema": {}},
    {
        "name": "shop_get-products",
        "description": "",
        "inputSchema": {
            "type": "object",
            "properties": {"searchTitle": {"type": "string"}, "limit": {"type": "number"}},
        },
    },
]


def _catalog(definitions: Sequence[dict[str, Any]]) -> Catalog:
    interner = ToolInterner()
    tools = tuple(interner.intern(definition) for definition in definitions)
    toolset = Toolset(tools, catalog_digest(tools), LexicalIndex.build(tools))
    return Catalog(toolset, CatalogRecord(tools, None, listed_at=0.0))


def _hits(catalog: Catalog, *names: str, weak: bool = False) -> list[SearchHit]:
    positions = {tool.name: position for position, tool in enumerate(catalog.tools)}
    return [SearchHit(positions[name], 1.0 - rank / 100, weak) for rank, name in enumerate(names)]


def _answer(
    catalog: Catalog,
    searches: Sequence[tuple[str, Sequence[SearchHit]]],
    *,
    limit: int = 8,
    leaders: int = 3,
    chars_per_query: int = 1500,
) -> dict[str, Any]:
    return search_answer(
        searches,
        catalog,
        read_only=ToolPolicy().is_read_only,
        limit=limit,
        leaders=leaders,
        chars_per_query=chars_per_query,
    )


def _names(result: dict[str, Any]) -> list[str]:
    return [tool["name"] for tool in result["tools"]]


@pytest.fixture(scope="module")
def recorded() -> Catalog:
    return _catalog(recorded_tools(limit=1500))


# -- the budget --------------------------------------------------------------------------------


@pytest.mark.parametrize("queries", [1, 3, 5])
@pytest.mark.parametrize("chars_per_query", [800, 1500, 4000])
def test_every_answer_fits_its_budget_which_grows_with_the_queries(
    recorded: Catalog, queries: int, chars_per_query: int
) -> None:
    texts = [query["query"] for query in dev_queries()][::7]
    for start in range(0, len(texts) - queries, queries):
        searches = [(text, recorded.hits(text, 8)) for text in texts[start : start + queries]]
        answer = _answer(recorded, searches, chars_per_query=chars_per_query)
        assert len(orjson.dumps(answer).decode()) <= answer_budget(queries, chars_per_query)


def test_what_the_budget_leaves_out_is_said_with_describe_tool_for_the_rest(recorded: Catalog) -> None:
    query = "create an issue in a repository"
    result = _answer(recorded, [(query, recorded.hits(query, 8))], chars_per_query=800)["results"][0]
    assert "left out" in result["more"] and "describe_tool" in result["more"]
    assert len(result["tools"]) >= 1


def test_leaders_get_description_read_only_and_schema_the_rest_a_name_a_line_and_read_only() -> None:
    catalog = _catalog(DEFINITIONS)
    hits = _hits(catalog, "mail_list", "calendar_create_event", "mail-eu_send")
    tools = _answer(catalog, [("list mail", hits)], leaders=1)["results"][0]["tools"]
    assert tools[0] == {
        "name": "mail_list",
        "description": "List the messages of a mailbox folder.",
        "readOnly": True,
        "inputSchema": {"type": "object", "properties": {"folder": {"type": "string"}}},
    }
    assert tools[1] == {
        "name": "calendar_create_event",
        "description": "Create a calendar event.",
        "readOnly": False,
    }


def test_a_tool_under_several_queries_of_a_call_is_shown_in_full_once() -> None:
    catalog = _catalog(DEFINITIONS)
    hits = _hits(catalog, "mail_list", "mail-eu_send")
    first, second = _answer(catalog, [("list mail", hits), ("mail folders", hits)])["results"]
    assert "inputSchema" in first["tools"][0]
    assert second["tools"][0] == {"name": "mail_list", "description": "(shown above)"}


# -- twins -------------------------------------------------------------------------------------


def test_twins_are_one_entry_under_the_shortest_name_and_free_their_slots() -> None:
    catalog = _catalog(DEFINITIONS)
    hits = _hits(catalog, "mail-full_send", "mail_send", "mail-eu_send", "mail_list")
    result = _answer(catalog, [("send an email", hits)], limit=3)["results"][0]
    assert _names(result) == ["mail_send", "mail_list"]
    assert result["tools"][0]["alsoAs"] == ["mail-eu_send", "mail-full_send"]


def test_the_leading_twin_does_not_depend_on_the_catalog_order() -> None:
    forward = _catalog(DEFINITIONS)
    backward = _catalog(DEFINITIONS[::-1])
    assert forward.twins("mail-full_send") == backward.twins("mail-eu_send")
    assert forward.twins("mail_send") == ("mail_send", "mail-eu_send", "mail-full_send")
    assert forward.twins("mail_list") == ()


def test_a_suspicious_look_alike_is_never_folded_into_the_tool_it_imitates() -> None:
    imitation = {**SEND, "name": "maіl_send"}  # Cyrillic і
    catalog = _catalog([SEND, imitation, DEFINITIONS[3]])
    assert catalog.suspicious("maіl_send")
    assert "maіl_send" not in catalog.twins("mail_send")
    result = _answer(catalog, [("send", _hits(catalog, "mail_send", "maіl_send"))])["results"][0]
    assert _names(result) == ["mail_send", "maіl_send"]
    assert "suspicious" in result["tools"][1]


def test_twin_groups_need_the_same_definition_apart_from_the_server() -> None:
    interner = ToolInterner()
    changed = {**SEND, "name": "other_send", "description": "Send a fax."}
    tools = [interner.intern(definition) for definition in (SEND, changed, {**SEND, "name": "copy_send"})]
    assert twin_groups(tools) == {0: (2, 0), 2: (2, 0)}


# -- descriptions and schemas ------------------------------------------------------------------


def test_a_description_is_cut_after_a_sentence_not_at_a_list_number() -> None:
    text = (
        "Comprehensive pricing analysis tool that gives access to service prices and cost analysis. "
        "This tool supports four main operations: 1. get_service_codes: Get a comprehensive list of "
        "service codes 2. get_service_attributes: get the filterable attributes of a service"
    )
    assert cut_text(text, 150) == (
        "Comprehensive pricing analysis tool that gives access to service prices and cost analysis."
    )


def test_a_description_without_a_sentence_end_is_cut_at_a_clause() -> None:
    text = "Lists the open pull requests of a repository, newest first, with their authors, labels, reviewers"
    cut = "Lists the open pull requests of a repository, newest first, with their authors…"
    assert cut_text(text, 80) == cut


def test_leading_notices_come_after_what_the_tool_does() -> None:
    notice = {
        "name": "ci_download_usage",
        "description": "⚠️ **MANDATORY: The handler will REJECT any call without outputDir.**\n\n"
        "Downloads usage data for an organization and a date range.",
        "inputSchema": {"type": "object"},
    }
    catalog = _catalog([notice, DEFINITIONS[3]])
    tools = _answer(catalog, [("usage", _hits(catalog, "ci_download_usage"))])["results"][0]["tools"]
    assert tools[0]["description"].startswith("Downloads usage data for an organization")
    assert "MANDATORY" in tools[0]["description"]


def test_an_empty_description_says_so_and_names_the_parameters() -> None:
    catalog = _catalog(DEFINITIONS)
    hits = _hits(catalog, "mail_list", "shop_get-products")
    tools = _answer(catalog, [("products", hits)], leaders=1)["results"][0]["tools"]
    assert tools[1]["description"] == "(no description; parameters: searchTitle, limit)"


def test_descriptions_stay_within_their_lengths(recorded: Catalog) -> None:
    query = "query the metrics of a service over the last hour"
    answer = _answer(recorded, [(query, recorded.hits(query, 8))], chars_per_query=6000)
    tools = answer["results"][0]["tools"]
    assert all(len(tool["description"]) <= LEADER_CHARS for tool in tools[:3])
    assert all(len(tool["description"]) <= LINE_CHARS for tool in tools[3:])


def test_a_schema_is_compacted_texts_and_enums_shortened_depth_bounded_documentation_left_out() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "title": "Arguments",
        "properties": {
            "color": {"type": "string", "enum": [f"c{n}" for n in range(20)], "description": "Red. " * 30},
            "filter": {
                "type": "object",
                "properties": {"deep": {"type": "object", "properties": {"deeper": {"type": "string"}}}},
            },
        },
        "required": ["color"],
        "additionalProperties": False,
    }
    shallow = compact_schema(schema, SCHEMA_CUTS[-1])
    assert shallow == {
        "type": "object",
        "properties": {
            "color": {"type": "string", "enum": ["c0", "c1", "c2", "…(17 more)"]},
            "filter": {"type": "object"},
        },
        "required": ["color"],
    }
    full = compact_schema(schema, SCHEMA_CUTS[0])
    assert len(full["properties"]["color"]["description"]) <= SCHEMA_CUTS[0].description_chars
    assert len(full["properties"]["color"]["enum"]) == SCHEMA_CUTS[0].enum_items + 1
    assert full["properties"]["filter"]["properties"]["deep"] == {
        "type": "object",
        "properties": {"deeper": {"type": "string"}},
    }


def test_a_compacted_schema_shows_what_a_local_ref_names_since_its_defs_are_left_out() -> None:
    schema = {
        "type": "object",
        "properties": {
            "incident": {"$ref": "#/$defs/Incident"},
            "remote": {"$ref": "https://example.com/schema.json"},
            "loop": {"$ref": "#/$defs/Loop"},
        },
        "$defs": {
            "Incident": {
                "type": "object",
                "properties": {"title": {"type": "string"}},
                "required": ["title"],
            },
            "Loop": {"$ref": "#/$defs/Loop"},
        },
    }
    compacted = compact_schema(schema, SCHEMA_CUTS[0])
    assert compacted == {
        "type": "object",
        "properties": {
            "incident": {
                "type": "object",
                "properties": {"title": {"type": "string"}},
                "required": ["title"],
            },
            "remote": {},
            "loop": {},
        },
    }


# -- no match and the map ----------------------------------------------------------------------


def test_no_good_match_is_short_the_verdict_and_the_nearest_names_no_servers_it_did_not_name() -> None:
    catalog = _catalog(DEFINITIONS)
    hits = _hits(catalog, "mail_list", "calendar_create_event", "mail-eu_send", "mail_send", weak=True)
    result = _answer(catalog, [("order a pizza", hits)])["results"][0]
    assert (result["matched"], result["note"]) == (False, NO_GOOD_MATCH)
    assert len(result["tools"]) == NEAREST
    assert all("inputSchema" not in tool for tool in result["tools"])
    assert "servers" not in result


def test_nothing_found_says_no_match() -> None:
    result = _answer(_catalog(DEFINITIONS), [("zqxwv", [])])["results"][0]
    assert (result["matched"], result["note"], result["tools"]) == (False, NO_MATCH, [])


def test_servers_are_those_the_request_names_with_their_tool_counts() -> None:
    catalog = _catalog(DEFINITIONS)
    query = "list my calendar events and BambooHR employees"
    result = _answer(catalog, [(query, _hits(catalog, "calendar_create_event"))])["results"][0]
    assert result["servers"] == [{"name": "calendar", "tools": 1}]
    assert "notInCatalog" not in result


@pytest.mark.parametrize(
    ("query", "absent"),
    [
        ("approve a leave request in BambooHR", ["BambooHR"]),
        ("print shipping labels on a Zebra printer", ["Zebra"]),
        ("在企业微信里用 WeCom 给王磊开个账号", ["WeCom"]),
    ],
)
def test_a_product_no_tool_mentions_is_said_first_and_in_the_note(
    recorded: Catalog, query: str, absent: list[str]
) -> None:
    hits = _hits(recorded, *recorded.names[:3], weak=True)
    result = _answer(recorded, [(query, hits)])["results"][0]
    assert list(result)[:2] == ["query", "notInCatalog"]
    assert result["notInCatalog"] == absent
    assert result["matched"] is False
    assert all(name in result["note"] for name in absent)


# -- through the proxy -------------------------------------------------------------------------


async def test_through_the_proxy_twins_are_one_entry_and_each_name_stays_callable() -> None:
    with running_upstream(DEFINITIONS) as (upstream_url, _), running_proxy(upstream_url) as url:
        async with connect(url, "token-answer") as client:
            answer = await call_json(client, "search_tools", {"query": "send an email message"})
            entry = next(tool for tool in answer["results"][0]["tools"] if tool["name"] == "mail_send")
            calls = [
                await call_text(client, "call_write_tool", {"name": name, "arguments": {"to": "a@b.c"}})
                for name in entry["alsoAs"]
            ]
    names = [tool["name"] for tool in answer["results"][0]["tools"]]
    assert sorted(entry["alsoAs"]) == ["mail-eu_send", "mail-full_send"]
    assert not set(entry["alsoAs"]) & set(names)
    assert "inputSchema" in entry
    assert [is_error for is_error, _ in calls] == [False, False]


def test_a_sentence_most_tools_of_a_server_share_is_left_out_of_their_descriptions() -> None:
    catalog = _catalog(recorded_tools(servers=["twilio", "github"]))
    boilerplate = "This is the public Twilio REST API."
    twilio = [tool.name for tool in catalog.tools if tool.name.startswith("twilio_")][:8]
    assert all(boilerplate in tool.description for tool in map(catalog.get, twilio) if tool)
    result = _answer(catalog, [("recordings of a call", _hits(catalog, *twilio))])["results"][0]
    descriptions = [tool["description"] for tool in result["tools"]]
    assert len(descriptions) >= 3
    assert not any(boilerplate in description for description in descriptions)
    assert len(set(descriptions)) == len(descriptions)
