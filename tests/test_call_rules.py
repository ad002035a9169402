"""The rules of a meta-tool call, read directly from the pure functions (`call_rules`): what the
model's arguments mean, which tool a call may reach, and what each outcome says to the model."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from tests.support.catalogs import CLOCK_AND_NOTES, ZONE, lexical_catalog
from toolsearch.catalog.service import Catalog
from toolsearch.mcp.errors import InputNotRelayed, UpstreamError, UpstreamRpcError
from toolsearch.mcp.jsonrpc import INVALID_PARAMS
from toolsearch.metatools.call_rules import (
    MAX_QUERY_CHARS,
    SearchRequest,
    as_arguments,
    batch_result,
    call_refusal,
    catalog_unavailable,
    described,
    passed_through,
    schema_error,
    search_request,
    unknown_tool,
    upstream_failure,
    with_parsed_arguments,
)
from toolsearch.metatools.policy import ToolPolicy

WIDGET = {
    "name": "clock_widget",
    "description": "The clock's own widget.",
    "inputSchema": {"type": "object"},
    "_meta": {"ui": {"visibility": ["app"]}},
}
"""A tool of an MCP Apps UI, not the model's."""
ASKED = {"resultType": "input_required", "inputRequests": {"a": {"method": "elicitation/create"}}}


def _catalog() -> Catalog:
    return lexical_catalog([*CLOCK_AND_NOTES, WIDGET])


def _text(result: dict[str, Any]) -> str:
    return "\n".join(item["text"] for item in result["content"])


# -- arguments ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sent", "meant"),
    [
        (None, {}),
        ('{"zone": "UTC"}', {"zone": "UTC"}),
        ("[1, 2]", "[1, 2]"),
        ("not json", "not json"),
        ({"zone": "UTC"}, {"zone": "UTC"}),
        ([1], [1]),
    ],
)
def test_missing_arguments_are_none_and_an_object_sent_as_a_string_is_that_object(
    sent: Any, meant: Any
) -> None:
    assert as_arguments(sent) == meant


def test_each_nested_calls_arguments_are_parsed_as_the_calls_own() -> None:
    arguments = {"calls": [{"name": "a", "arguments": '{"x": 1}'}, {"name": "b"}, "odd"], "arguments": None}
    assert with_parsed_arguments(arguments) == {
        "calls": [{"name": "a", "arguments": {"x": 1}}, {"name": "b"}, "odd"],
        "arguments": {},
    }


def test_a_schema_error_lists_each_problem_and_shows_the_schema_to_fix_them_by() -> None:
    text = _text(schema_error("clock_now", ["at /: 'zone' is a required property"], ZONE))
    assert text.startswith("The arguments do not match the input schema of clock_now:\n- at /: 'zone'")
    assert f"Input schema: {orjson.dumps(ZONE).decode()}" in text
    assert text.endswith("Fix the arguments and call again.")
    assert "The upstream rejected the arguments" in _text(schema_error("clock_now", [], ZONE, upstream=True))


# -- search_tools and describe_tool ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "request_"),
    [
        ({"query": "time"}, SearchRequest(["time"], 8, True)),
        ({"query": "time", "queries": ["date"], "limit": 3.0}, SearchRequest(["time", "date"], 3, True)),
        ({"queries": ["date"], "schemas": False}, SearchRequest(["date"], 8, False)),
    ],
)
def test_a_search_asks_the_query_then_the_queries_eight_tools_each_with_schemas_by_default(
    arguments: dict[str, Any], request_: SearchRequest
) -> None:
    assert search_request(arguments) == request_


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ({}, 'search_tools needs "query"'),
        ({"queries": ["x" * (MAX_QUERY_CHARS + 1)]}, "at most 1000 characters"),
    ],
)
def test_a_search_without_a_query_or_with_one_too_long_is_refused(
    arguments: dict[str, Any], says: str
) -> None:
    refused = search_request(arguments)
    assert isinstance(refused, dict) and refused["isError"] is True and says in _text(refused)


def test_describe_shows_whole_definitions_and_names_what_the_catalog_lacks_with_similar_names() -> None:
    answer = described(_catalog(), ["clock_now", "clock_nwo", "clock_widget"], ToolPolicy().is_read_only)
    assert answer["tools"] == [
        {
            "name": "clock_now",
            "readOnly": True,
            "description": "The current time in a timezone.",
            "inputSchema": ZONE,
            "annotations": {"readOnlyHint": True},
        }
    ]
    assert [entry["name"] for entry in answer["unknown"]] == [
        "clock_nwo",
        "clock_widget",
    ]  # app-only: not the model's
    assert "clock_now" in answer["unknown"][0]["similar"]


def test_describe_says_read_only_as_the_operators_policy_does() -> None:
    policy = ToolPolicy(write_patterns=("clock_now",))
    assert described(_catalog(), ["clock_now"], policy.is_read_only)["tools"][0]["readOnly"] is False


# -- calling an upstream tool ---------------------------------------------------------------------


def test_an_unknown_name_close_to_a_tool_names_the_tool_meant_and_counts_as_a_typo() -> None:
    message, typo = unknown_tool("clock_nwo", ["clock_now", "clock_set"])
    assert typo is True
    assert message == "There is no tool named 'clock_nwo'. Did you mean 'clock_now'? Call it by that name."


def test_a_look_alike_name_says_which_character_is_foreign() -> None:
    message, typo = unknown_tool("clock_nоw", ["clock_now"])  # a Cyrillic о
    assert typo is True and "It looks like 'clock_now' but has" in message


def test_an_unknown_name_far_from_every_tool_sends_the_model_to_search() -> None:
    message, typo = unknown_tool("weather_today", ["clock_now"])
    assert typo is False
    assert message == "There is no tool named 'weather_today'. Use search_tools to find the right tool."


@pytest.mark.parametrize(
    ("name", "arguments", "require_read_only", "says"),
    [
        ("clock_set", {}, True, "clock_set is not marked read-only, so call_read_tool(s) refuses it."),
        ("clock_now", [1], False, "at /: the arguments must be a JSON object"),
        (
            "clock_now",
            "not json",
            False,
            "the arguments must be a JSON object: they could not be parsed as JSON",
        ),
        ("clock_now", {}, False, "at /: 'zone' is a required property"),
    ],
)
def test_a_call_that_writes_through_a_read_tool_or_breaks_the_schema_is_refused(
    name: str, arguments: Any, require_read_only: bool, says: str
) -> None:
    catalog = _catalog()
    tool = catalog.get(name)
    assert tool is not None
    refusal = call_refusal(catalog, tool, arguments, ToolPolicy(), require_read_only=require_read_only)
    assert refusal is not None and refusal["isError"] is True and says in _text(refusal)


@pytest.mark.parametrize(("name", "arguments"), [("clock_now", {"zone": "UTC"}), ("clock_set", {})])
def test_a_call_with_valid_arguments_through_the_right_tool_goes_upstream(name: str, arguments: Any) -> None:
    catalog = _catalog()
    tool = catalog.get(name)
    assert tool is not None
    read = name == "clock_now"
    assert call_refusal(catalog, tool, arguments, ToolPolicy(), require_read_only=read) is None


def test_an_upstream_rejecting_the_arguments_reads_as_a_schema_error_with_the_error_kept() -> None:
    result = upstream_failure(
        "clock_now", UpstreamRpcError(INVALID_PARAMS, "zone unknown", {"zone": "Mars"}), ZONE
    )
    assert _text(result).startswith("The upstream rejected the arguments of clock_now:\n- zone unknown")
    assert result["structuredContent"] == {
        "error": {"code": INVALID_PARAMS, "message": "zone unknown", "data": {"zone": "Mars"}}
    }


@pytest.mark.parametrize(
    ("failure", "says"),
    [
        (UpstreamRpcError(-32000, "quota"), "The upstream answered clock_now with error -32000: quota"),
        (InputNotRelayed("it asked for sampling"), "clock_now could not finish: it asked for sampling."),
        (UpstreamError("timed out"), "clock_now could not be called: timed out. Try again later."),
    ],
)
def test_an_upstream_failure_says_what_happened_to_the_call(failure: UpstreamError, says: str) -> None:
    result = upstream_failure("clock_now", failure, ZONE)
    assert result["isError"] is True and _text(result) == says


def test_an_upstream_error_message_is_cut_to_2000_characters_and_marked_cut() -> None:
    result = upstream_failure("clock_now", UpstreamRpcError(-32000, "x" * 5000), ZONE)
    assert result["structuredContent"]["error"]["message"] == "x" * 2000 + "…"


def test_a_result_is_passed_through_less_the_upstreams_envelope() -> None:
    result = {"resultType": "complete", "content": [], "_meta": {"io.modelcontextprotocol/x": 1, "mine": 2}}
    assert passed_through("clock_now", result, relay_input=False) == {"content": [], "_meta": {"mine": 2}}


def test_a_request_for_input_is_relayed_only_to_a_caller_that_can_answer_it() -> None:
    assert passed_through("clock_set", ASKED, relay_input=True) == ASKED
    refused = passed_through("clock_set", ASKED, relay_input=False)
    assert refused["isError"] is True and "clock_set asks for input" in _text(refused)


def test_a_result_of_an_unknown_type_fails_the_call() -> None:
    result = passed_through("clock_now", {"resultType": "mystery"}, relay_input=False)
    assert _text(result) == "clock_now answered with a result of unknown type 'mystery'."


def test_a_batch_labels_each_call_in_order_and_a_call_that_raised_is_one_failure() -> None:
    calls = [{"name": "clock_now"}, {"name": "notes_search"}, {"name": "clock_set"}]
    outcomes: list[dict[str, Any] | BaseException] = [
        {"content": [{"type": "text", "text": "12:00"}], "structuredContent": {"time": "12:00"}},
        RuntimeError("boom"),
        {"content": [{"type": "text", "text": "no"}, "junk"], "isError": True},
    ]
    result = batch_result(calls, outcomes)
    assert _text(result) == (
        "[0] clock_now: ok\n12:00\n[1] notes_search: failed\n"
        "The call failed inside toolsearch: RuntimeError.\n[2] clock_set: failed\nno"
    )
    assert result["structuredContent"] == {
        "results": [
            {"index": 0, "name": "clock_now", "isError": False, "structuredContent": {"time": "12:00"}},
            {"index": 1, "name": "notes_search", "isError": True},
            {"index": 2, "name": "clock_set", "isError": True},
        ]
    }


def test_an_unlisted_catalog_says_why_and_to_try_again() -> None:
    result = catalog_unavailable(UpstreamError("down"))
    assert (
        _text(result) == "The tool catalog could not be listed from the upstream (down). Try again shortly."
    )
