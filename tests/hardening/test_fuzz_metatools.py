"""Property-based fuzzing of the meta-tools' arguments, and of direct calls of catalog tools: whatever
the arguments, in either era, the answer is a spec-shaped tool result (an `isError` one for bad
arguments), never a JSON-RPC error, a 500 or a traceback."""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from toolsearch.mcp.jsonrpc import INVALID_PARAMS
from toolsearch.metatools.call_rules import MAX_QUERY_CHARS
from toolsearch.metatools.definitions import CALL_READ, CALL_READ_BATCH, CALL_WRITE, DESCRIBE, SEARCH

from .fuzzing import (
    FUZZ,
    FUZZ_TOOL_NAMES,
    checked_answer,
    checked_tool_result,
    encoded,
    json_objects,
    json_values,
    texts,
)
from .rpc import request

queries = (
    st.sampled_from(("current time", "create an issue", "stock price", "github pull requests", "search"))
    | texts
    | st.integers(MAX_QUERY_CHARS - 5, MAX_QUERY_CHARS + 5).map(lambda size: "x" * size)
)
tool_names = st.sampled_from(FUZZ_TOOL_NAMES) | texts | st.integers(200, 5000).map(lambda size: "x" * size)
tool_arguments = json_objects | json_objects.map(lambda value: encoded(value).decode()) | json_values


def _typed_or_not(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Values of the right type, or any JSON value."""
    return strategy | strategy | json_values


def _object(**properties: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Objects with any of `properties` (each of its type or not), now and then an unknown one."""
    known = {name: _typed_or_not(strategy) for name, strategy in properties.items()}
    expected = st.fixed_dictionaries({}, optional=known)
    return expected | expected | st.fixed_dictionaries({"unexpected": json_values}, optional=known)


calls = st.lists(_object(name=tool_names, arguments=tool_arguments), max_size=12)
ARGUMENTS = {
    SEARCH: _object(
        query=queries,
        queries=st.lists(queries, max_size=7),
        limit=st.integers(-3, 30) | st.integers(0, 30).map(float) | st.floats(0, 30),
        schemas=st.booleans(),
    ),
    DESCRIBE: _object(names=st.lists(tool_names, max_size=12)),
    CALL_READ: _object(name=tool_names, arguments=tool_arguments),
    CALL_WRITE: _object(name=tool_names, arguments=tool_arguments),
    CALL_READ_BATCH: _object(calls=calls),
}


def _call(http: httpx.Client, url: str, name: Any, arguments: Any, modern: bool) -> dict[str, Any]:
    message, headers = request("tools/call", {"name": name, "arguments": arguments}, modern=modern)
    sent = {"Authorization": "Bearer fuzz", "Content-Type": "application/json", **headers}
    body = checked_answer(message, http.post(url, content=encoded(message), headers=sent))
    assert body is not None
    return body


@pytest.mark.parametrize("tool", list(ARGUMENTS))
@FUZZ
@given(data=st.data())
def test_any_arguments_of_a_meta_tool_get_a_tool_result(
    fuzz_proxy: str, http: httpx.Client, tool: str, data: st.DataObject
) -> None:
    arguments = data.draw(ARGUMENTS[tool] | tool_arguments, label="arguments")
    body = _call(http, fuzz_proxy, tool, arguments, data.draw(st.booleans(), label="modern"))
    assert "result" in body, body
    if not checked_tool_result(body["result"]) and tool in (SEARCH, DESCRIBE):
        answer = orjson.loads(body["result"]["content"][0]["text"])
        assert isinstance(answer, dict)


@FUZZ
@given(name=tool_names, arguments=tool_arguments, modern=st.booleans())
@example(name=CALL_WRITE, arguments={}, modern=False)  # a meta-tool's name is a known tool's
def test_any_direct_call_gets_a_tool_result_or_invalid_params_for_an_unknown_tool(
    fuzz_proxy: str, http: httpx.Client, name: str, arguments: Any, modern: bool
) -> None:
    body = _call(http, fuzz_proxy, name, arguments, modern)
    if name not in FUZZ_TOOL_NAMES and name not in ARGUMENTS:
        assert body["error"]["code"] == INVALID_PARAMS
        return
    assert "result" in body, body
    checked_tool_result(body["result"])
