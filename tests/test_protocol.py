"""The protocol rules of both eras, as pure functions: what a request must carry, which era has which
method, which HTTP status an error gets, and what of an upstream result is the upstream's envelope."""

from __future__ import annotations

from typing import Any

import pytest

from toolsearch.jsonrpc import HEADER_MISMATCH, INVALID_PARAMS, METHOD_NOT_FOUND, JsonRpcError
from toolsearch.protocol import (
    CLIENT_CAPABILITIES_META,
    PROTOCOL_VERSION_META,
    SERVER_INFO_META,
    check_legacy_version_header,
    check_modern_request,
    modern_status,
    request_era,
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
