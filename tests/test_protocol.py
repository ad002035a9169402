"""The protocol rules of both eras, as pure functions. Inbound: what a request must carry, which era
has which method, which HTTP status an error gets, and what of an upstream result is the upstream's
envelope. Outbound: what toolsearch sends the upstream as a client of either era."""

from __future__ import annotations

from typing import Any

import pytest

from toolsearch.mcp.headers import (
    decode_header_value,
    encode_header_value,
    param_headers,
    valid_header_annotations,
)
from toolsearch.mcp.jsonrpc import HEADER_MISMATCH, INVALID_PARAMS, METHOD_NOT_FOUND, JsonRpcError
from toolsearch.mcp.protocol import (
    CLIENT_CAPABILITIES_META,
    CLIENT_INFO,
    CLIENT_INFO_META,
    PROTOCOL_VERSION_META,
    SERVER_INFO,
    SERVER_INFO_META,
    Era,
    answer_to_server_request,
    call_log_level,
    check_legacy_version_header,
    check_modern_request,
    complete_result,
    forwarded_result,
    legacy_headers,
    modern_headers,
    modern_params,
    modern_status,
    negotiate_legacy_version,
    offered_capabilities,
    relayed_meta,
    relayed_notification,
    request_era,
    speaks_only_modern,
    unrelayed_request,
    without_envelope,
)

META = {PROTOCOL_VERSION_META: "2026-07-28", CLIENT_CAPABILITIES_META: {}}
HEADERS = {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "search_tools"}


def _rejection(method: str, params: dict[str, Any], headers: dict[str, str] | None) -> JsonRpcError:
    with pytest.raises(JsonRpcError) as raised:
        check_modern_request(method, params, headers)
    return raised.value


def test_a_modern_request_without_client_capabilities_is_invalid_params() -> None:
    error = _rejection("tools/list", {"_meta": {PROTOCOL_VERSION_META: "2026-07-28"}}, None)
    assert (error.code, error.http_status) == (INVALID_PARAMS, 400)
    assert CLIENT_CAPABILITIES_META in error.message


def test_a_modern_request_without_meta_names_both_missing_keys() -> None:
    error = _rejection("server/discover", {}, None)
    assert error.code == INVALID_PARAMS
    assert PROTOCOL_VERSION_META in error.message and CLIENT_CAPABILITIES_META in error.message


@pytest.mark.parametrize(
    "method", ["initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"]
)
def test_methods_2026_07_28_removed_are_not_found_with_404(method: str) -> None:
    headers = {"mcp-protocol-version": "2026-07-28", "mcp-method": method}
    error = _rejection(method, {"_meta": META}, headers)
    assert (error.code, error.http_status) == (METHOD_NOT_FOUND, 404)


def test_initialize_with_the_modern_version_header_speaks_the_modern_era() -> None:
    assert request_era("initialize", {}, {"mcp-protocol-version": "2026-07-28"}) == "modern"
    assert request_era("initialize", {"protocolVersion": "2025-11-25"}, {}) == "legacy"


def test_optional_whitespace_around_header_values_is_not_part_of_them() -> None:
    params = {"name": "search_tools", "_meta": META}
    padded = {name: f" {value}   " for name, value in HEADERS.items()}
    assert check_modern_request("tools/call", params, padded) == "2026-07-28"
    assert check_legacy_version_header({"mcp-protocol-version": "2025-11-25\t"}) == "2025-11-25"


def test_whitespace_inside_a_header_value_still_mismatches() -> None:
    params = {"name": "search_tools", "_meta": META}
    error = _rejection("tools/call", params, {**HEADERS, "mcp-name": "search _tools"})
    assert error.code == HEADER_MISMATCH


@pytest.mark.parametrize(
    ("code", "status"), [(-32601, 404), (-32602, 400), (-32021, 400), (-32020, 400), (-32603, 200), (-1, 200)]
)
def test_modern_errors_get_the_http_status_of_their_code(code: int, status: int) -> None:
    assert modern_status(code) == status


def test_the_upstream_envelope_is_stripped_and_the_tool_meta_kept() -> None:
    result = {
        "content": [],
        "resultType": "complete",
        "_meta": {SERVER_INFO_META: {"name": "gateway"}, "com.example/trace": "abc"},
    }
    assert without_envelope(result) == {"content": [], "_meta": {"com.example/trace": "abc"}}


def test_an_envelope_only_meta_leaves_no_meta() -> None:
    assert without_envelope({"content": [], "_meta": {SERVER_INFO_META: {}}}) == {"content": []}


@pytest.mark.parametrize(
    ("method", "params", "headers", "era"),
    [
        ("tools/list", {"_meta": {PROTOCOL_VERSION_META: "2026-07-28"}}, None, "modern"),
        ("tools/list", {}, {"mcp-protocol-version": "2026-07-28"}, "modern"),
        ("server/discover", {}, {}, "modern"),
        ("tools/list", {}, {"mcp-protocol-version": "2025-11-25"}, "legacy"),
        ("tools/list", {"_meta": {"progressToken": 1}}, None, "legacy"),
        ("initialize", {"protocolVersion": "2026-07-28"}, {}, "legacy"),
    ],
)
def test_the_era_of_a_request_is_read_from_its_meta_its_header_or_its_method(
    method: str, params: dict[str, Any], headers: dict[str, str] | None, era: str
) -> None:
    assert request_era(method, params, headers) == era


@pytest.mark.parametrize(
    ("requested", "answered"),
    [
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        ("2024-11-05", "2025-11-25"),
        (7, "2025-11-25"),
    ],
)
def test_initialize_answers_the_clients_legacy_version_or_the_newest(
    requested: object, answered: str
) -> None:
    assert negotiate_legacy_version(requested) == answered


@pytest.mark.parametrize(
    ("headers", "version"),
    [(None, "2025-03-26"), ({}, "2025-03-26"), ({"mcp-protocol-version": "2025-06-18"}, "2025-06-18")],
)
def test_a_legacy_request_declares_its_version_in_its_header_or_is_2025_03_26(
    headers: dict[str, str] | None, version: str
) -> None:
    assert check_legacy_version_header(headers) == version


def test_a_legacy_request_with_an_unknown_version_header_is_unsupported() -> None:
    with pytest.raises(JsonRpcError) as raised:
        check_legacy_version_header({"mcp-protocol-version": "1999-01-01"})
    assert (raised.value.code, raised.value.http_status) == (-32022, 400)
    assert raised.value.data["requested"] == "1999-01-01"


@pytest.mark.parametrize(
    ("result", "era", "completed"),
    [
        (
            {"tools": []},
            "modern",
            {"tools": [], "resultType": "complete", "_meta": {SERVER_INFO_META: SERVER_INFO}},
        ),
        (
            {"resultType": "input_required", "_meta": {"k": 1}},
            "modern",
            {"resultType": "input_required", "_meta": {"k": 1, SERVER_INFO_META: SERVER_INFO}},
        ),
        ({"tools": [], "resultType": "complete"}, "legacy", {"tools": []}),
    ],
)
def test_a_result_is_marked_for_the_callers_era(
    result: dict[str, Any], era: Era, completed: dict[str, Any]
) -> None:
    assert complete_result(result, era) == completed


@pytest.mark.parametrize(
    ("value", "sent"),
    [
        ("github_search", "github_search"),
        ("two words", "two words"),
        (" padded", "=?base64?IHBhZGRlZA==?="),
        ("naïve", "=?base64?bmHDr3Zl?="),
        ("line\nbreak", "=?base64?bGluZQpicmVhaw==?="),
        ("=?base64?looks-encoded?=", "=?base64?PT9iYXNlNjQ/bG9va3MtZW5jb2RlZD89?="),
    ],
)
def test_header_values_are_sent_plain_when_safe_else_as_base64_and_read_back(value: str, sent: str) -> None:
    assert encode_header_value(value) == sent
    assert decode_header_value(sent) == value


def test_a_modern_requests_params_carry_the_envelope_beside_their_own_meta() -> None:
    params = modern_params({"name": "t", "_meta": {"progressToken": 3}}, {"elicitation": {}})
    assert params == {
        "name": "t",
        "_meta": {
            "progressToken": 3,
            PROTOCOL_VERSION_META: "2026-07-28",
            CLIENT_CAPABILITIES_META: {"elicitation": {}},
            CLIENT_INFO_META: CLIENT_INFO,
        },
    }


@pytest.mark.parametrize(
    ("method", "params", "headers"),
    [
        ("tools/list", {}, {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/list"}),
        (
            "tools/call",
            {"name": "clock now"},
            {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "clock now"},
        ),
        (
            "resources/read",
            {"uri": "file:///é"},
            {
                "mcp-protocol-version": "2026-07-28",
                "mcp-method": "resources/read",
                "mcp-name": "=?base64?ZmlsZTovLy/DqQ==?=",
            },
        ),
        ("prompts/get", {}, {"mcp-protocol-version": "2026-07-28", "mcp-method": "prompts/get"}),
    ],
)
def test_a_modern_request_mirrors_its_method_and_name_in_headers(
    method: str, params: dict[str, Any], headers: dict[str, str]
) -> None:
    assert modern_headers(method, params) == headers


@pytest.mark.parametrize(
    ("session_id", "headers"),
    [
        ("abc", {"mcp-protocol-version": "2025-06-18", "mcp-session-id": "abc"}),
        (None, {"mcp-protocol-version": "2025-06-18"}),
    ],
)
def test_a_legacy_request_carries_its_version_and_session(
    session_id: str | None, headers: dict[str, str]
) -> None:
    assert legacy_headers("2025-06-18", session_id) == headers


@pytest.mark.parametrize(
    ("data", "only_modern"),
    [
        ({"supported": ["2026-07-28"]}, True),
        ({"supported": ["2026-07-28", "2025-06-18"]}, False),
        ({"supported": "2026-07-28"}, False),
        (None, False),
    ],
)
def test_an_unsupported_version_error_says_whether_the_upstream_speaks_only_modern(
    data: Any, only_modern: bool
) -> None:
    assert speaks_only_modern(data) is only_modern


def _annotated(*properties: tuple[str, Any, Any]) -> dict[str, Any]:
    schema = {name: {"type": kind, "x-mcp-header": header} for name, header, kind in properties}
    return {"name": "t", "inputSchema": {"type": "object", "properties": schema}}


@pytest.mark.parametrize(
    ("tool", "valid"),
    [
        ({"name": "t", "inputSchema": {"type": "object"}}, True),
        (_annotated(("region", "Region", "string"), ("count", "Count", "integer")), True),
        (_annotated(("dry", "Dry-Run", "boolean")), True),
        (_annotated(("region", "Re gion", "string")), False),
        (_annotated(("region", "", "string")), False),
        (_annotated(("region", 5, "string")), False),
        (_annotated(("ratio", "Ratio", "number")), False),
        (_annotated(("a", "Region", "string"), ("b", "region", "string")), False),
    ],
)
def test_tools_whose_header_annotations_break_the_rules_are_invalid(
    tool: dict[str, Any], valid: bool
) -> None:
    assert valid_header_annotations(tool) is valid


def test_annotations_inside_nested_properties_count() -> None:
    nested = {"type": "object", "properties": {"inner": {"type": "string", "x-mcp-header": "bad name"}}}
    tool = {"name": "t", "inputSchema": {"type": "object", "properties": {"outer": nested}}}
    assert valid_header_annotations(tool) is False


@pytest.mark.parametrize(
    ("arguments", "headers"),
    [
        (
            {"region": "eu-west", "count": 3, "dry": True},
            {"Mcp-Param-Region": "eu-west", "Mcp-Param-Count": "3", "Mcp-Param-Dry": "true"},
        ),
        ({"region": "Zürich"}, {"Mcp-Param-Region": "=?base64?WsO8cmljaA==?="}),
        ({"count": 2**53}, {}),
        ({"count": 1.5, "dry": None}, {}),
        ({}, {}),
    ],
)
def test_annotated_arguments_are_mirrored_in_param_headers(
    arguments: dict[str, Any], headers: dict[str, str]
) -> None:
    schema = _annotated(
        ("region", "Region", "string"), ("count", "Count", "integer"), ("dry", "Dry", "boolean")
    )
    assert param_headers(schema["inputSchema"], arguments) == headers


def test_param_headers_follow_nested_properties() -> None:
    inner = {"type": "object", "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}}}
    schema = {"type": "object", "properties": {"where": inner}}
    assert param_headers(schema, {"where": {"zone": "b"}}) == {"Mcp-Param-Zone": "b"}
    assert param_headers(schema, {"where": "b"}) == {}


@pytest.mark.parametrize("method", ["sampling/createMessage", "elicitation/create", "roots/list"])
def test_a_request_the_upstream_sends_mid_call_is_refused_by_name_and_ping_answered(method: str) -> None:
    refusal = answer_to_server_request({"jsonrpc": "2.0", "id": 7, "method": method})
    assert refusal["id"] == 7
    assert refusal["error"]["code"] == METHOD_NOT_FOUND
    assert repr(method) in refusal["error"]["message"]
    assert answer_to_server_request({"jsonrpc": "2.0", "id": 8, "method": "ping"}) == {
        "jsonrpc": "2.0",
        "id": 8,
        "result": {},
    }


@pytest.mark.parametrize(
    ("methods", "wanted"),
    [
        (["sampling/createMessage"], "a completion from the caller's model (sampling/createMessage)"),
        (["elicitation/create"], "input from the caller's user (elicitation/create)"),
        (
            ["roots/list", "roots/list", "sampling/createMessage"],
            "the caller's roots (roots/list) and a completion from the caller's model",
        ),
        (["tasks/\u202eget"], "'tasks/"),
    ],
)
def test_a_call_ended_by_an_unrelayed_request_says_what_was_wanted_and_why_not(
    methods: list[str], wanted: str
) -> None:
    reason = unrelayed_request(methods)
    assert reason.startswith(f"the upstream asked for {wanted}")
    assert "stateless proxy" in reason
    assert "within 3 s of the refusal" in reason
    assert "\u202e" not in reason


def _log(level: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": level, "data": "x"}}


def _progress(token: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {"progressToken": token, "progress": 1},
    }


def test_a_calls_stream_relays_its_own_progress_and_log_messages_at_or_above_the_asked_level() -> None:
    assert relayed_notification(_progress("t"), "t", None)
    assert not relayed_notification(_progress("other"), "t", "debug")
    assert not relayed_notification(_progress("t"), None, "debug")
    assert relayed_notification(_log("warning"), None, "warning")
    assert relayed_notification(_log("error"), None, "warning")
    assert not relayed_notification(_log("info"), None, "warning")
    assert not relayed_notification(_log("info"), "t", None)
    assert not relayed_notification(_log("loud"), None, "debug")
    assert not relayed_notification({"method": "notifications/resources/updated", "params": {}}, "t", "debug")


def test_a_modern_caller_asks_for_log_messages_per_call_and_a_legacy_caller_gets_what_its_session_sends() -> (
    None
):
    asked = {"_meta": {"io.modelcontextprotocol/logLevel": "notice"}}
    assert call_log_level("modern", asked) == "notice"
    assert call_log_level("modern", {"_meta": {}}) is None
    assert call_log_level("modern", {"_meta": {"io.modelcontextprotocol/logLevel": "loud"}}) is None
    assert call_log_level("legacy", {}) == "debug"


def test_an_upstream_call_asks_for_the_progress_and_log_messages_its_caller_streams() -> None:
    assert relayed_meta("t", "info", "modern") == {
        "progressToken": "t",
        "io.modelcontextprotocol/logLevel": "info",
    }
    assert relayed_meta("t", "info", "legacy") == {"progressToken": "t"}
    assert relayed_meta(None, None, "modern") == {}


@pytest.mark.parametrize(
    ("caller", "upstream", "offered"),
    [
        ("legacy", "legacy", True),
        ("modern", "legacy", True),
        ("modern", "modern", True),
        ("legacy", "modern", False),
    ],
)
def test_logging_is_offered_where_a_caller_can_set_its_level(
    caller: Era, upstream: Era, offered: bool
) -> None:
    capabilities = offered_capabilities({"logging": {}, "prompts": {"listChanged": True}}, caller, upstream)
    assert ("logging" in capabilities) is offered
    assert capabilities["prompts"] == {}
    assert "logging" not in offered_capabilities({}, caller, upstream)


def test_a_forwarded_result_asking_for_input_goes_to_a_modern_caller_and_is_refused_to_a_legacy_one() -> None:
    asking = {
        "resultType": "input_required",
        "inputRequests": {"who": {"method": "elicitation/create", "params": {}}},
        "_meta": {SERVER_INFO_META: {"name": "upstream"}},
    }
    assert forwarded_result("prompts/get", asking, "modern") == {
        "resultType": "input_required",
        "inputRequests": asking["inputRequests"],
    }
    with pytest.raises(JsonRpcError) as refused:
        forwarded_result("prompts/get", asking, "legacy")
    assert "asks for input (elicitation/create) before it can answer prompts/get" in refused.value.message
    complete = {"resultType": "complete", "messages": []}
    assert forwarded_result("prompts/get", complete, "legacy") == {"messages": []}
