"""Every limit is explicit: past it, the caller gets an answer that names the limit (README, "Limits").

Tested elsewhere: the request body by Content-Length and the default batch size (tests/test_transport.py,
tests/test_calls.py), the upstream call timeout (test_upstream_faults.py).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from pydantic import ValidationError

from tests.conftest import running_proxy
from toolsearch.metatools.call_rules import MAX_QUERY_CHARS
from toolsearch.settings import Settings
from toolsearch.testing import serve_app

from .rpc import call_error, call_json, call_tool, request
from .upstreams import ScriptedUpstream, tool

CATALOG = [tool(f"files_tool_{i:02d}", f"Read files, variant {i}.") for i in range(40)]


@contextmanager
def serving(tools: list[dict[str, Any]], **settings: Any) -> Iterator[tuple[str, ScriptedUpstream]]:
    upstream = ScriptedUpstream(tools)
    with serve_app(upstream) as base, running_proxy(f"{base}/mcp", **settings) as proxy:
        yield proxy, upstream


@pytest.fixture(scope="module")
def proxy() -> Iterator[str]:
    with serving(CATALOG) as (url, _):
        yield url


def _found(answer: dict[str, Any]) -> list[str]:
    return [found["name"] for result in answer["results"] for found in result["tools"]]


# Requests


def test_a_chunked_body_over_the_request_limit_gets_413_naming_the_limit() -> None:
    message, _ = request("tools/list")

    def chunks() -> Iterator[bytes]:
        yield b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"pad": "'
        for _ in range(8):
            yield b"x" * 1024
        yield b'"}}'

    with serving(CATALOG, max_request_bytes=4096) as (url, _):
        response = httpx.post(url, content=chunks(), headers={"Content-Type": "application/json"})
        small = httpx.post(url, json=message)
    assert response.status_code == 413
    assert "the limit is 4096 bytes (--max-request-bytes)" in response.json()["error"]["message"]
    assert small.status_code == 200


def test_a_query_at_the_length_limit_is_searched(proxy: str) -> None:
    answer = call_json(proxy, "search_tools", {"query": "read files " + "x" * (MAX_QUERY_CHARS - 11)})
    assert answer["total"] == len(CATALOG)


def test_a_query_over_the_length_limit_is_refused_naming_the_limit(proxy: str) -> None:
    text = call_error(proxy, "search_tools", {"queries": ["read files", "x" * (MAX_QUERY_CHARS + 1)]})
    assert f"at most {MAX_QUERY_CHARS} characters" in text


def test_five_queries_are_searched_at_once(proxy: str) -> None:
    answer = call_json(proxy, "search_tools", {"queries": ["read files"] * 5, "limit": 1})
    assert len(answer["results"]) == 5


def test_a_sixth_query_is_refused_showing_the_limit(proxy: str) -> None:
    text = call_error(proxy, "search_tools", {"queries": ["read files"] * 6})
    assert "at /queries: " in text
    assert '"maxItems":5' in text


def test_a_search_returns_at_most_25_results_those_past_the_budget_counted(proxy: str) -> None:
    answer = call_json(proxy, "search_tools", {"query": "read files", "limit": 25})
    left_out = re.match(r"(\d+) more results? ", answer["results"][0].get("more", ""))
    assert len(_found(answer)) + (int(left_out[1]) if left_out else 0) == 25


def test_a_limit_over_25_is_refused_naming_the_maximum(proxy: str) -> None:
    text = call_error(proxy, "search_tools", {"query": "read files", "limit": 26})
    assert "26 is greater than the maximum of 25" in text


def test_an_integral_float_limit_is_taken_as_an_integer(proxy: str) -> None:
    answer = call_json(proxy, "search_tools", {"query": "read files", "limit": 3.0})
    assert len(_found(answer)) == 3


def test_describe_takes_at_most_ten_names(proxy: str) -> None:
    names = [f"files_tool_{i:02d}" for i in range(11)]
    assert len(call_json(proxy, "describe_tool", {"names": names[:10]})["tools"]) == 10
    text = call_error(proxy, "describe_tool", {"names": names})
    assert '"maxItems":10' in text


def test_a_configured_batch_limit_is_advertised_and_enforced() -> None:
    calls = [{"name": "files_tool_00", "arguments": {}}] * 4
    with serving(CATALOG, max_batch_calls=3) as (url, _):
        listed = httpx.post(url, json=request("tools/list")[0]).json()["result"]["tools"]
        within = call_tool(url, "call_read_tools", {"calls": calls[:3]})
        beyond = call_error(url, "call_read_tools", {"calls": calls})
    batch = next(t for t in listed if t["name"] == "call_read_tools")
    assert batch["inputSchema"]["properties"]["calls"]["maxItems"] == 3
    assert "Call up to 3 read-only tools" in batch["description"]
    assert not within.get("isError")
    assert '"maxItems":3' in beyond


# Upstream responses


def _sized_result(size: int):
    def answer(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return {"result": {"content": [{"type": "text", "text": "x" * size}]}}

    return answer


@contextmanager
def _answering_with(size: int) -> Iterator[str]:
    """A proxy limiting upstream responses to 100,000 bytes, in front of an upstream whose every
    call answers `size` characters of text."""
    upstream = ScriptedUpstream(CATALOG, on_call=_sized_result(size))
    with (
        serve_app(upstream) as base,
        running_proxy(f"{base}/mcp", max_upstream_response_bytes=100_000) as url,
    ):
        yield url


def test_an_upstream_result_over_the_response_limit_is_refused_naming_the_limit() -> None:
    with _answering_with(200_000) as url:
        text = call_error(url, "call_read_tool", {"name": "files_tool_00"})
    assert "larger than 100000 bytes" in text


def test_an_upstream_result_within_the_response_limit_passes() -> None:
    with _answering_with(50_000) as url:
        result = call_tool(url, "call_read_tool", {"name": "files_tool_00"})
    assert len(result["content"][0]["text"]) == 50_000


def test_a_listing_page_over_the_response_limit_is_a_clear_error() -> None:
    with serving(CATALOG, max_upstream_response_bytes=2048) as (url, _):
        text = call_error(url, "search_tools", {"query": "read files"})
    assert "could not be listed from the upstream (upstream response is larger than 2048 bytes)" in text


# Size of the catalog


def test_a_listing_of_20000_tools_is_cut_to_the_catalog_limit_with_one_warning(caplog) -> None:
    tools = [tool(f"bulk_tool_{i:05d}", f"Bulk tool number {i}.") for i in range(20_000)]
    with caplog.at_level(logging.WARNING, logger="toolsearch"), serving(tools) as (proxy, _):
        answer = call_json(proxy, "search_tools", {"query": "bulk_tool_09999"})
        beyond = call_json(proxy, "describe_tool", {"names": ["bulk_tool_10000"]})
    assert answer["total"] == 10_000
    assert _found(answer)[0] == "bulk_tool_09999"
    assert beyond["tools"] == []
    warnings = [r for r in caplog.records if "--max-catalog-tools" in r.getMessage()]
    assert len(warnings) == 1


def test_listing_stops_asking_for_pages_once_the_catalog_limit_is_reached() -> None:
    tools = [tool(f"bulk_tool_{i:03d}") for i in range(200)]
    upstream = ScriptedUpstream(tools, page_size=20)
    with serve_app(upstream) as base, running_proxy(f"{base}/mcp", max_catalog_tools=50) as proxy:
        answer = call_json(proxy, "search_tools", {"query": "bulk"})
    assert answer["total"] == 50
    assert upstream.received["tools/list"] == 3


def test_a_cursor_that_never_ends_is_followed_for_max_list_pages_pages() -> None:
    upstream = ScriptedUpstream(CATALOG[:1], page_size=1, endless_cursor=True)
    with serve_app(upstream) as base, running_proxy(f"{base}/mcp", max_list_pages=7) as proxy:
        answer = call_json(proxy, "search_tools", {"query": "files"})
    assert answer["total"] == 1
    assert upstream.received["tools/list"] == 7


@pytest.mark.parametrize(
    "setting",
    [
        {"max_request_bytes": 100},
        {"max_upstream_response_bytes": 100},
        {"max_catalog_tools": 0},
        {"max_list_pages": 0},
        {"max_batch_calls": 101},
        {"upstream_timeout": 0},
    ],
    ids=lambda setting: next(iter(setting)),
)
def test_a_limit_outside_its_range_is_refused_at_startup(setting: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        Settings(upstream="http://127.0.0.1:1/mcp", **setting)
