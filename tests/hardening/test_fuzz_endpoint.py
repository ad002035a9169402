"""Property-based fuzzing of `POST /mcp`: whatever a client sends, in either era and with any headers,
the answer is spec-shaped (a JSON-RPC result or error, or 202 for notifications and responses), never
a 500 or a traceback, and echoes the request's id whenever that id is valid."""

from __future__ import annotations

from typing import Any

import httpx
import orjson
from hypothesis import given
from hypothesis import strategies as st

from toolsearch.mcp.headers import decode_header_value, encode_header_value
from toolsearch.mcp.jsonrpc import HEADER_MISMATCH, JsonRpcError
from toolsearch.mcp.protocol import MODERN_VERSION
from toolsearch.metatools.definitions import CALL_READ, CALL_READ_BATCH, CALL_WRITE, DESCRIBE, SEARCH

from .fuzzing import (
    FUZZ,
    METHODS,
    base64_headers,
    checked_answer,
    encoded,
    header_texts,
    json_objects,
    json_values,
    modern_meta,
    texts,
    versions,
)

AUTH = {"Authorization": "Bearer fuzz", "Content-Type": "application/json"}
TOOL_NAMES = (SEARCH, DESCRIBE, CALL_READ, CALL_READ_BATCH, CALL_WRITE, "time_get_current_time")
ids = (
    st.integers()
    | texts
    | st.none()
    | st.booleans()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.lists(st.integers(), max_size=2)
)


def _params() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {},
        optional={
            "_meta": versions.map(modern_meta) | json_values,
            "name": st.sampled_from(TOOL_NAMES) | texts | json_values,
            "arguments": json_objects | json_values,
            "protocolVersion": versions | json_values,
            "cursor": json_values,
            "capabilities": json_objects,
        },
    )


@st.composite
def _header_value(draw: st.DrawFn, matching: Any) -> str | None:
    """Absent, the value that matches the body (when there is one), or anything else."""
    options: list[st.SearchStrategy[str | None]] = [st.none(), header_texts, versions, base64_headers]
    if isinstance(matching, str):
        options.append(st.just(encode_header_value(matching)))
    return draw(st.one_of(options))


@st.composite
def requests(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, str]]:
    """A JSON-RPC request of either era (often well-formed, often not) and MCP headers for it."""
    method = draw(st.sampled_from(METHODS) | texts)
    params = draw(st.none() | _params() | json_values)
    message = draw(
        st.fixed_dictionaries(
            {},
            optional={
                "jsonrpc": st.just("2.0") | st.just("2.0") | json_values,
                "id": ids,
                "method": st.just(method) | json_values,
                "params": st.just(params),
            },
        )
    )
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get("io.modelcontextprotocol/protocolVersion") if isinstance(meta, dict) else None
    name = params.get("name") if isinstance(params, dict) else None
    drawn = {
        "MCP-Protocol-Version": draw(_header_value(version)),
        "Mcp-Method": draw(_header_value(method)),
        "Mcp-Name": draw(_header_value(name)),
    }
    return message, {header: value for header, value in drawn.items() if value is not None}


def _post(http: httpx.Client, url: str, body: bytes, headers: dict[str, str] | None = None) -> httpx.Response:
    return http.post(url, content=body, headers={**AUTH, **(headers or {})})


@FUZZ
@given(sent=requests())
def test_any_request_in_either_era_gets_a_spec_shaped_answer(
    fuzz_proxy: str, http: httpx.Client, sent: tuple[dict[str, Any], dict[str, str]]
) -> None:
    message, headers = sent
    checked_answer(message, _post(http, fuzz_proxy, encoded(message), headers))


@FUZZ
@given(body=json_values)
def test_any_json_value_as_a_body_gets_a_spec_shaped_answer(
    fuzz_proxy: str, http: httpx.Client, body: Any
) -> None:
    checked_answer(body, _post(http, fuzz_proxy, encoded(body)))


@FUZZ
@given(body=st.binary(max_size=300))
def test_any_bytes_as_a_body_get_a_spec_shaped_answer(
    fuzz_proxy: str, http: httpx.Client, body: bytes
) -> None:
    try:
        sent = orjson.loads(body)
    except orjson.JSONDecodeError:
        sent = None
    checked_answer(sent, _post(http, fuzz_proxy, body))


def _decoded(value: str | None) -> str | None:
    try:
        return None if value is None else decode_header_value(value)
    except JsonRpcError:
        return None


@FUZZ
@given(
    method=st.sampled_from(("tools/list", "server/discover", "tools/call")),
    header=st.sampled_from(("MCP-Protocol-Version", "Mcp-Method", "Mcp-Name")),
    value=st.none() | header_texts | versions | base64_headers | st.just("=?base64?c2VhcmNoX3Rvb2xz?="),
)
def test_a_modern_request_is_served_exactly_when_its_headers_match_its_body(
    fuzz_proxy: str, http: httpx.Client, method: str, header: str, value: str | None
) -> None:
    params: dict[str, Any] = {"_meta": modern_meta()}
    headers = {"MCP-Protocol-Version": MODERN_VERSION, "Mcp-Method": method}
    if method == "tools/call":
        params.update(name=SEARCH, arguments={"query": "current time"})
        headers["Mcp-Name"] = SEARCH
    headers[header] = value  # type: ignore[assignment]
    headers = {name: text for name, text in headers.items() if text is not None}
    message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    body = checked_answer(message, _post(http, fuzz_proxy, encoded(message), headers))
    matching = (
        headers.get("MCP-Protocol-Version") == MODERN_VERSION
        and headers.get("Mcp-Method") == method
        and (method != "tools/call" or _decoded(headers.get("Mcp-Name")) == SEARCH)
    )
    assert body is not None
    if matching:
        assert "result" in body, body
    else:
        assert body["error"]["code"] == HEADER_MISMATCH, body


def test_an_invalid_request_with_a_valid_id_is_answered_with_that_id(
    fuzz_proxy: str, http: httpx.Client
) -> None:
    for message in (
        {"jsonrpc": "1.0", "id": 7, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": "seven", "method": 7},
        {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": [1]},
    ):
        body = checked_answer(message, _post(http, fuzz_proxy, encoded(message)))
        assert body is not None and body["id"] == message["id"] and "error" in body
