"""An upstream that fails in any way gives the caller a clear error, never a crash, a 500 or a traceback;
and a catalog listed before keeps serving while the upstream is broken."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from tests.conftest import running_proxy, running_upstream
from toolsearch.testing import free_port, serve_app

from .rpc import LEAK_MARKERS, call_error, call_json, call_tool, post, request
from .upstreams import (
    ScriptedUpstream,
    hanging_up_socket,
    http_error,
    malformed_json,
    sse_cut,
    sse_drip,
    sse_endless_line,
    tool,
)

TOOLS = [tool("clock_now", "Current time in a timezone."), tool("clock_zones", "List the known timezones.")]
UPSTREAM_METHODS = ("server/discover", "initialize", "tools/list", "tools/call")


@contextmanager
def proxied(upstream: ScriptedUpstream, **settings: Any) -> Iterator[str]:
    with serve_app(upstream) as base, running_proxy(f"{base}/mcp", **settings) as proxy:
        yield proxy


def _break(upstream: ScriptedUpstream, fault: Any, methods: tuple[str, ...] = UPSTREAM_METHODS) -> None:
    for method in methods:
        upstream.faults[method] = fault


def test_a_call_slower_than_the_upstream_timeout_fails_with_a_timeout_error(catalog_tools) -> None:
    async def slow(name: str, arguments: dict[str, Any]) -> None:
        import anyio

        await anyio.sleep(2.0)

    with (
        running_upstream(catalog_tools, on_call=slow) as (url, _),
        running_proxy(url, upstream_timeout=0.5) as proxy,
    ):
        text = call_error(
            proxy, "call_read_tool", {"name": "time_get_current_time", "arguments": {"timezone": "UTC"}}
        )
    assert "did not answer tools/call in time" in text


def test_an_upstream_that_keeps_a_stream_open_without_answering_times_out() -> None:
    upstream = ScriptedUpstream(TOOLS)
    with proxied(upstream, upstream_timeout=1.0) as proxy:
        call_json(proxy, "search_tools", {"query": "time"})
        upstream.faults["tools/call"] = sse_drip(0.1)
        text = call_error(proxy, "call_read_tool", {"name": "clock_now"})
    assert "did not answer tools/call in time" in text


def test_a_refused_connection_is_reported_as_an_unreachable_upstream() -> None:
    with running_proxy(f"http://127.0.0.1:{free_port()}/mcp") as proxy:
        text = call_error(proxy, "search_tools", {"query": "time"})
        listed = post(proxy, request("tools/list")[0]).json()
    assert "could not be listed from the upstream" in text
    assert "unreachable" in text
    assert len(listed["result"]["tools"]) == 5


def test_an_upstream_that_hangs_up_without_answering_gives_a_clear_error() -> None:
    with hanging_up_socket() as url, running_proxy(url) as proxy:
        text = call_error(proxy, "search_tools", {"query": "time"})
    assert "could not be listed from the upstream" in text


@pytest.mark.parametrize("status", [500, 502, 503])
def test_an_upstream_5xx_is_reported_with_its_status(status: int) -> None:
    upstream = ScriptedUpstream(TOOLS)
    _break(upstream, http_error(status))
    with proxied(upstream) as proxy:
        text = call_error(proxy, "search_tools", {"query": "time"})
    assert f"HTTP {status}" in text


def test_a_5xx_while_probing_does_not_pin_a_modern_upstream_to_the_legacy_era() -> None:
    upstream = ScriptedUpstream(TOOLS, modern_only=True)
    _break(upstream, http_error(503))
    with proxied(upstream) as proxy:
        call_error(proxy, "search_tools", {"query": "time"})
        upstream.faults.clear()
        answer = call_json(proxy, "search_tools", {"query": "time"})
    assert answer["total"] == len(TOOLS)


def test_a_5xx_on_a_call_is_an_error_result_naming_the_tool() -> None:
    upstream = ScriptedUpstream(TOOLS)
    with proxied(upstream) as proxy:
        call_json(proxy, "search_tools", {"query": "time"})
        upstream.faults["tools/call"] = http_error(500, b"<html>Internal Server Error</html>", "text/html")
        text = call_error(proxy, "call_read_tool", {"name": "clock_now"})
    assert "clock_now could not be called" in text
    assert "HTTP 500" in text


def test_malformed_json_from_the_upstream_listing_is_a_clear_error() -> None:
    upstream = ScriptedUpstream(TOOLS)
    upstream.faults["tools/list"] = malformed_json()
    with proxied(upstream) as proxy:
        text = call_error(proxy, "search_tools", {"query": "time"})
    assert "no JSON-RPC response" in text


@pytest.mark.parametrize(
    ("sse", "fault"),
    [(False, malformed_json), (True, sse_cut)],
    ids=["malformed-json", "sse-stream-cut-mid-call"],
)
def test_a_broken_answer_to_an_upstream_call_is_a_clear_error(sse: bool, fault: Any) -> None:
    upstream = ScriptedUpstream(TOOLS, sse=sse)
    with proxied(upstream) as proxy:
        call_json(proxy, "search_tools", {"query": "time"})
        upstream.faults["tools/call"] = fault()
        text = call_error(proxy, "call_read_tool", {"name": "clock_now"})
    assert "clock_now could not be called" in text


def test_an_sse_stream_cut_in_the_middle_of_a_listing_is_a_clear_error() -> None:
    upstream = ScriptedUpstream(TOOLS, sse=True)
    upstream.faults["tools/list"] = sse_cut()
    with proxied(upstream) as proxy:
        text = call_error(proxy, "search_tools", {"query": "time"})
    assert "could not be listed from the upstream" in text


def test_an_sse_line_that_never_ends_stops_at_the_response_size_limit() -> None:
    upstream = ScriptedUpstream(TOOLS, sse=True)
    with proxied(upstream, max_upstream_response_bytes=1024 * 1024) as proxy:
        call_json(proxy, "search_tools", {"query": "time"})
        upstream.faults["tools/call"] = sse_endless_line()
        text = call_error(proxy, "call_read_tool", {"name": "clock_now"})
    assert "larger than 1048576 bytes" in text


def test_sse_json_holding_unicode_line_separators_is_read_whole() -> None:
    description = "Splits\u2028lines\u2029and\x85paragraphs."
    upstream = ScriptedUpstream([*TOOLS, tool("text_split", description)], sse=True)
    with proxied(upstream) as proxy:
        answer = call_json(proxy, "search_tools", {"query": "text_split"})
    assert answer["total"] == 3
    assert answer["results"][0]["tools"][0]["name"] == "text_split"


@pytest.mark.parametrize("line_end", ["\r\n", "\r", "\n"], ids=["crlf", "cr", "lf"])
def test_sse_lines_ending_in_any_way_and_sent_byte_by_byte_are_read(line_end: str) -> None:
    upstream = ScriptedUpstream(TOOLS, sse=True, sse_line_end=line_end, sse_chunk=1)
    with proxied(upstream) as proxy:
        answer = call_json(proxy, "search_tools", {"query": "timezones"})
        called = call_tool(proxy, "call_read_tool", {"name": "clock_now"})
    assert answer["total"] == len(TOOLS)
    assert called["content"][0]["text"] == "called clock_now"


def test_a_stale_catalog_keeps_serving_while_the_upstream_is_down() -> None:
    upstream = ScriptedUpstream(TOOLS)
    with proxied(upstream, catalog_ttl=0.2) as proxy:
        before = call_json(proxy, "search_tools", {"query": "timezones"})
        _break(upstream, http_error(503))
        requests_before = upstream.received.total()
        time.sleep(0.3)
        during = call_json(proxy, "search_tools", {"query": "timezones"})
        deadline = time.monotonic() + 10
        while upstream.received.total() == requests_before:
            assert time.monotonic() < deadline, "no background refresh reached the upstream"
            time.sleep(0.05)
        after = call_json(proxy, "search_tools", {"query": "timezones"})
        described = call_json(proxy, "describe_tool", {"names": ["clock_zones"]})
    assert before == during == after
    assert described["tools"][0]["name"] == "clock_zones"


def test_a_broken_upstream_never_turns_into_an_http_500() -> None:
    upstream = ScriptedUpstream(TOOLS)
    _break(upstream, http_error(500))
    with proxied(upstream) as proxy:
        for method, params in [
            ("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}}),
            ("tools/list", {}),
            ("tools/call", {"name": "clock_now", "arguments": {}}),
            ("tools/call", {"name": "search_tools", "arguments": {"query": "x"}}),
        ]:
            response = post(proxy, request(method, params)[0])
            assert response.status_code == 200, response.text
            assert not LEAK_MARKERS.search(response.text)
        health = httpx.get(proxy.removesuffix("/mcp") + "/healthz")
    assert health.status_code == 200
