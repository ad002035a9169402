"""The meta-tools on their own, without HTTP: a small in-process catalog, and an upstream that
answers calls as a table says. What a call comes to for the model is what these tests read."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
import pytest

from tests.support.catalogs import CLOCK_AND_NOTES, ZONE, lexical_catalog
from toolsearch.catalog.service import Catalog
from toolsearch.mcp.caller import CallerHeaders, CallerInput
from toolsearch.mcp.errors import UpstreamAuthError, UpstreamError, UpstreamRpcError
from toolsearch.mcp.jsonrpc import INVALID_PARAMS, JsonRpcError
from toolsearch.metatools.definitions import CALL_READ, CALL_READ_BATCH, CALL_WRITE, DESCRIBE, SEARCH
from toolsearch.metatools.policy import ToolPolicy
from toolsearch.metatools.service import MetaTools
from toolsearch.outcomes import SearchOutcomes
from toolsearch.runtime import Supervisor
from toolsearch.telemetry import Telemetry

CALLER = CallerHeaders(authorization="Bearer t")


class _Catalogs:
    def __init__(self, catalog: Catalog | Exception) -> None:
        self._catalog = catalog

    async def get(self, caller: CallerHeaders) -> Catalog:
        if isinstance(self._catalog, Exception):
            raise self._catalog
        return self._catalog


class _Upstream:
    """Answers each tool call with the outcome its name is given: a result, or an exception raised."""

    def __init__(self, outcomes: Mapping[str, dict[str, Any] | Exception] | None = None) -> None:
        self._outcomes = dict(outcomes or {})
        self.calls: list[tuple[str, dict[str, Any], CallerInput | None]] = []

    async def call_tool(
        self,
        caller: CallerHeaders,
        name: str,
        arguments: Mapping[str, Any],
        input_schema: Mapping[str, Any] | None = None,
        caller_input: CallerInput | None = None,
    ) -> dict[str, Any]:
        self.calls.append((name, dict(arguments), caller_input))
        outcome = self._outcomes.get(name, {"content": [{"type": "text", "text": f"called {name}"}]})
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


def _metatools(
    supervisor: Supervisor,
    upstream: _Upstream | None = None,
    catalog: Catalog | Exception | None = None,
    **options: Any,
) -> MetaTools:
    catalogs = _Catalogs(catalog if catalog is not None else lexical_catalog(CLOCK_AND_NOTES))
    outcomes = SearchOutcomes.in_process(Telemetry(use_environment=False), supervisor)
    return MetaTools(
        catalogs,
        upstream or _Upstream(),
        ToolPolicy(),
        outcomes=outcomes,
        work=supervisor.pool("work"),
        **options,
    )


def _text(result: dict[str, Any]) -> str:
    return "\n".join(item["text"] for item in result["content"])


async def test_search_finds_the_tool_for_the_task_with_its_schema(supervisor: Supervisor) -> None:
    result = await _metatools(supervisor).call(SEARCH, {"query": "current time in a timezone"}, CALLER)
    answer = orjson.loads(_text(result))
    best = answer["results"][0]["tools"][0]
    assert (answer["total"], best["name"], best["readOnly"]) == (3, "clock_now", True)
    assert best["inputSchema"] == ZONE


async def test_describe_names_unknown_tools_with_the_closest_names(supervisor: Supervisor) -> None:
    result = await _metatools(supervisor).call(DESCRIBE, {"names": ["clock_now", "clock_nwo"]}, CALLER)
    answer = orjson.loads(_text(result))
    assert [tool["name"] for tool in answer["tools"]] == ["clock_now"]
    assert answer["unknown"][0]["name"] == "clock_nwo" and "clock_now" in answer["unknown"][0]["similar"]


@pytest.mark.parametrize(
    ("name", "arguments", "says"),
    [
        (SEARCH, {}, 'search_tools needs "query"'),
        (SEARCH, {"query": ""}, 'search_tools needs "query" (a non-empty string)'),
        (SEARCH, {"queries": ["who is on call", "  "]}, 'search_tools needs "query"'),
        (SEARCH, "not json", "Arguments of search_tools must be a JSON object: they could not be parsed"),
        (
            CALL_READ,
            {"name": "clock_now", "arguments": "not json"},
            "`arguments` could not be parsed as JSON",
        ),
        (
            CALL_READ_BATCH,
            {"calls": [{"name": "clock_now", "arguments": "[1]"}]},
            "`arguments` is the JSON of a list, not of an object",
        ),
        (SEARCH, {"query": "x" * 1001}, "at most 1000 characters"),
        (
            SEARCH,
            {"query": "time", "limit": 0},
            "The arguments do not match the input schema of search_tools",
        ),
        (DESCRIBE, {"names": []}, "The arguments do not match the input schema of describe_tool"),
        (CALL_READ, {"name": "clock_set"}, "is not marked read-only, so call_read_tool(s) refuses it"),
        (CALL_READ, {"name": "clock_nwo", "arguments": {}}, "Did you mean 'clock_now'?"),
        (CALL_READ, {"name": "weather_today"}, "There is no tool named 'weather_today'"),
        (CALL_READ, {"name": "clock_now", "arguments": {}}, "at /: 'zone' is a required property"),
        (CALL_READ, {"name": "clock_now", "arguments": [1]}, "at /arguments: [1] is not of type 'object'"),
        (CALL_WRITE, {"name": "clock_now", "arguments": {"zone": 5}}, "at /zone: 5 is not of type 'string'"),
        (CALL_READ_BATCH, {"calls": []}, "The arguments do not match the input schema of call_read_tools"),
    ],
)
async def test_a_call_the_model_got_wrong_says_how_to_fix_it_and_goes_nowhere(
    name: str,
    arguments: Any,
    says: str,
    supervisor: Supervisor,
) -> None:
    upstream = _Upstream()
    result = await _metatools(supervisor, upstream).call(name, arguments, CALLER)
    assert result["isError"] is True
    assert says in _text(result)
    assert upstream.calls == []


@pytest.mark.parametrize(
    ("arguments", "sent"),
    [
        ({"name": "clock_now", "arguments": {"zone": "UTC"}}, {"zone": "UTC"}),
        ({"name": "clock_now", "arguments": '{"zone": "UTC"}'}, {"zone": "UTC"}),
        ({"name": "notes_search"}, {}),
    ],
)
async def test_a_read_call_reaches_the_upstream_with_the_arguments_as_objects(
    arguments: dict[str, Any],
    sent: dict[str, Any],
    supervisor: Supervisor,
) -> None:
    upstream = _Upstream()
    result = await _metatools(supervisor, upstream).call(CALL_READ, arguments, CALLER)
    assert _text(result) == f"called {arguments['name']}"
    assert upstream.calls == [(arguments["name"], sent, None)]


@pytest.mark.parametrize(
    ("outcome", "says"),
    [
        (
            UpstreamRpcError(INVALID_PARAMS, "zone unknown"),
            "The upstream rejected the arguments of clock_now",
        ),
        (UpstreamRpcError(-32000, "quota"), "The upstream answered clock_now with error -32000: quota"),
        (
            UpstreamError("upstream did not answer tools/call in time"),
            "could not be called: upstream did not",
        ),
        (
            {"resultType": "input_required", "inputRequests": {"a": {"method": "elicitation/create"}}},
            "asks for input",
        ),
        ({"resultType": "mystery"}, "a result of unknown type 'mystery'"),
        ({"content": [], "isError": True}, ""),
    ],
)
async def test_an_upstream_failure_comes_back_to_the_model_as_an_error_result(
    outcome: dict[str, Any] | Exception,
    says: str,
    supervisor: Supervisor,
) -> None:
    tools = _metatools(supervisor, _Upstream({"clock_now": outcome}))
    result = await tools.call(CALL_WRITE, {"name": "clock_now", "arguments": {"zone": "UTC"}}, CALLER)
    assert result["isError"] is True
    assert says in _text(result)


async def test_an_upstream_json_rpc_error_keeps_its_code_in_structured_content(
    supervisor: Supervisor,
) -> None:
    tools = _metatools(supervisor, _Upstream({"clock_now": UpstreamRpcError(-32000, "quota", {"retry": 5})}))
    result = await tools.call(CALL_READ, {"name": "clock_now", "arguments": {"zone": "UTC"}}, CALLER)
    assert result["structuredContent"] == {
        "error": {"code": -32000, "message": "quota", "data": {"retry": 5}}
    }


@pytest.mark.parametrize("name", [CALL_READ, CALL_WRITE, CALL_READ_BATCH])
async def test_refused_credentials_are_raised_for_the_transport_to_pass_on(
    name: str, supervisor: Supervisor
) -> None:
    refused = UpstreamAuthError(401, {"www-authenticate": "Bearer"}, b"")
    call = {"name": "clock_now", "arguments": {"zone": "UTC"}}
    arguments = {"calls": [call, {"name": "notes_search"}]} if name == CALL_READ_BATCH else call
    with pytest.raises(UpstreamAuthError):
        await _metatools(supervisor, _Upstream({"clock_now": refused})).call(name, arguments, CALLER)


@pytest.mark.parametrize(
    ("failure", "raised"),
    [(UpstreamError("down"), None), (UpstreamAuthError(401, {}, b""), UpstreamAuthError)],
)
async def test_an_unlisted_catalog_is_an_error_result_but_refused_credentials_are_raised(
    failure: Exception,
    raised: type[Exception] | None,
    supervisor: Supervisor,
) -> None:
    tools = _metatools(supervisor, catalog=failure)
    if raised is not None:
        with pytest.raises(raised):
            await tools.call(SEARCH, {"query": "time"}, CALLER)
        return
    result = await tools.call(SEARCH, {"query": "time"}, CALLER)
    assert "The tool catalog could not be listed from the upstream (down)" in _text(result)


async def test_a_batch_reports_each_call_in_order_and_one_failure_stops_none(supervisor: Supervisor) -> None:
    upstream = _Upstream({"notes_search": UpstreamRpcError(-32000, "index offline")})
    calls = [
        {"name": "clock_now", "arguments": {"zone": "UTC"}},
        {"name": "notes_search"},
        {"name": "clock_set"},
    ]
    result = await _metatools(supervisor, upstream).call(CALL_READ_BATCH, {"calls": calls}, CALLER)
    summary = [(r["index"], r["name"], r["isError"]) for r in result["structuredContent"]["results"]]
    assert summary == [(0, "clock_now", False), (1, "notes_search", True), (2, "clock_set", True)]
    assert _text(result).startswith("[0] clock_now: ok\ncalled clock_now\n[1] notes_search: failed")
    assert [name for name, _, _ in upstream.calls] == ["clock_now", "notes_search"]


@pytest.mark.parametrize(
    ("outcome", "code"), [(None, INVALID_PARAMS), (UpstreamRpcError(-32000, "quota"), -32000)]
)
async def test_a_direct_call_by_real_name_fails_as_the_upstream_would(
    outcome: Exception | None,
    code: int,
    supervisor: Supervisor,
) -> None:
    upstream = _Upstream({"clock_now": outcome} if outcome is not None else {})
    name = "clock_now" if outcome is not None else "weather_today"
    with pytest.raises(JsonRpcError) as raised:
        await _metatools(supervisor, upstream).call(name, {"zone": "UTC"}, CALLER)
    assert raised.value.code == code


async def test_a_direct_call_passes_the_callers_input_and_relays_an_input_request(
    supervisor: Supervisor,
) -> None:
    asked = {"resultType": "input_required", "inputRequests": {"a": {"method": "elicitation/create"}}}
    upstream = _Upstream({"clock_set": asked})
    caller_input = CallerInput(capabilities={"elicitation": {}}, request_state="s1")
    result = await _metatools(supervisor, upstream).call("clock_set", {}, CALLER, caller_input)
    assert result == asked
    assert upstream.calls == [("clock_set", {}, caller_input)]


@pytest.mark.parametrize(("max_batch_calls", "listed"), [(10, True), (0, False)])
async def test_the_batch_tool_is_listed_unless_its_limit_is_zero(
    max_batch_calls: int, listed: bool, supervisor: Supervisor
) -> None:
    names = [
        tool["name"] for tool in _metatools(supervisor, max_batch_calls=max_batch_calls).listed_tools(None)
    ]
    assert (CALL_READ_BATCH in names) is listed
    assert [name for name in names if name != CALL_READ_BATCH] == [SEARCH, DESCRIBE, CALL_READ, CALL_WRITE]
