"""Hypothesis strategies for the JSON-RPC endpoint and the meta-tools, the profile that bounds them, and
the checks every answer must pass.

Profiles: `fuzz` (200 examples a test) by default, `ci` (100 examples, derandomized) when the `CI`
environment variable is set, or any profile named by `HYPOTHESIS_PROFILE`. Examples are not stored
(`database=None`): a failure prints the example and how to reproduce it.
"""

from __future__ import annotations

import base64
import json
import os
from typing import Any

import httpx
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from toolsearch.mcp.jsonrpc import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from toolsearch.mcp.protocol import (
    CLIENT_CAPABILITIES_META,
    PROTOCOL_VERSION_META,
    SUPPORTED_VERSIONS,
)
from toolsearch.testing import recorded_tools

from .rpc import LEAK_MARKERS

settings.register_profile(
    "fuzz",
    max_examples=200,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("ci", settings.get_profile("fuzz"), max_examples=100, derandomize=True)
FUZZ = settings(
    settings.get_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "fuzz"))
)
"""Decorate each fuzz test with it (not loaded globally, so other tests keep hypothesis's defaults)."""

SPEC_CODES = {PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, HEADER_MISMATCH}
SPEC_CODES.add(UNSUPPORTED_PROTOCOL_VERSION)
FUZZ_SERVERS = ("time", "github", "yfinance")
"""The recorded servers whose tools the fuzzed proxy's upstream lists."""
FUZZ_TOOL_NAMES = tuple(tool["name"] for tool in recorded_tools(list(FUZZ_SERVERS)))
METHODS = ("initialize", "server/discover", "tools/list", "tools/call", "ping", "resources/list")

# JSON

texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
"""Any text JSON can carry (lone surrogates cannot be encoded)."""
json_scalars = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | texts
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(texts, children, max_size=4),
    max_leaves=12,
)
json_objects = st.dictionaries(texts, json_values, max_size=5)

# Headers

header_texts = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=30).map(str.strip)
"""What an HTTP header value can be (printable ASCII; surrounding spaces are not kept on the wire)."""


def _base64_sentinel(text: str) -> str:
    return "=?base64?" + base64.b64encode(text.encode()).decode() + "?="


base64_headers = (
    texts.map(_base64_sentinel)
    | st.just("=?base64?!!not base64!!?=")
    | st.just("=?base64?" + base64.b64encode(b"\xff\xfe").decode() + "?=")
)
versions = (
    st.sampled_from(SUPPORTED_VERSIONS) | st.sampled_from(("2024-11-05", "2030-01-01", "")) | header_texts
)


def valid_id(message: Any) -> Any:
    """The request id the answer must echo: a string or (64-bit) integer `id`, else None."""
    request_id = message.get("id") if isinstance(message, dict) else None
    if isinstance(request_id, bool) or not isinstance(request_id, str | int):
        return None
    if isinstance(request_id, int) and not -(2**63) <= request_id < 2**64:
        return None  # parsed as a float on the other side
    return request_id


def encoded(value: Any) -> bytes:
    """JSON bytes of `value`, integers of any size included (orjson stops at 64 bits)."""
    return json.dumps(value, ensure_ascii=False).encode()


# Checks


def checked_answer(sent: Any, response: httpx.Response) -> dict[str, Any] | None:
    """Assert `response` is a spec-shaped answer to `sent` (no 500, no traceback, JSON-RPC framing,
    the request's valid id echoed); return the JSON-RPC message, or None for a 202 (no body)."""
    assert response.status_code in (200, 202, 400, 404, 413), (response.status_code, response.text)
    assert not LEAK_MARKERS.search(response.text), response.text
    if response.status_code == 202:
        assert response.content == b""
        assert isinstance(sent, dict) and ("id" not in sent or "method" not in sent), sent
        return None
    body = response.json()
    assert isinstance(body, dict) and body.get("jsonrpc") == "2.0", body
    assert ("result" in body) != ("error" in body), body
    if "error" in body:
        error = body["error"]
        assert error.get("code") in SPEC_CODES, error
        assert isinstance(error.get("message"), str) and error["message"], error
    else:
        assert response.status_code == 200
        assert isinstance(body["result"], dict), body
    assert body.get("id") == valid_id(sent), (sent, body)
    return body


def checked_tool_result(result: dict[str, Any]) -> bool:
    """Assert `result` is a spec-shaped `tools/call` result; whether it is an error."""
    content = result.get("content")
    assert isinstance(content, list), result
    for item in content:
        assert isinstance(item, dict) and isinstance(item.get("type"), str), item
        if item["type"] == "text":
            assert isinstance(item.get("text"), str), item
    assert result.get("isError", False) in (True, False), result
    return bool(result.get("isError"))


def modern_meta(version: Any = SUPPORTED_VERSIONS[0]) -> dict[str, Any]:
    return {PROTOCOL_VERSION_META: version, CLIENT_CAPABILITIES_META: {}}
