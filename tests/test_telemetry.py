"""Traces and metrics: the caller's trace continues through the proxy to the upstream, metrics are
served as Prometheus text, and neither ever carries a token, query, argument or result."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.conftest import call_json, call_text, connect, running_upstream
from toolsearch.settings import Settings
from toolsearch.telemetry import Telemetry
from toolsearch.testing import serve_app
from toolsearch.transport.http import create_app

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"
SECRET_TOKEN = "tok-SECRET-telemetry"
SECRET_QUERY = "QUERY-SECRET-lunar calendar"
SECRET_ARGUMENT = "ARG-SECRET-Pacific/Auckland"
SECRET_RESULT = "RESULT-SECRET-result"


class Observed:
    def __init__(
        self, spans: InMemorySpanExporter, metrics: InMemoryMetricReader, telemetry: Telemetry
    ) -> None:
        self.spans_exporter = spans
        self.metrics_reader = metrics
        self.telemetry = telemetry

    def spans(self) -> list[ReadableSpan]:
        self.telemetry.flush()
        return list(self.spans_exporter.get_finished_spans())

    def metrics_json(self) -> str:
        return self.metrics_reader.get_metrics_data().to_json()


@pytest.fixture(scope="module")
def traced(catalog_tools) -> Iterator[tuple[str, str, Any, Observed]]:
    async def on_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": SECRET_RESULT}]}

    spans, metrics = InMemorySpanExporter(), InMemoryMetricReader()
    telemetry = Telemetry(span_exporter=spans, metric_reader=metrics, use_environment=False)
    with (
        running_upstream(catalog_tools, on_call=on_call) as (upstream_url, upstream),
        serve_app(create_app(Settings(upstream=upstream_url), telemetry)) as base,
    ):
        yield f"{base}/mcp", base, upstream, Observed(spans, metrics, telemetry)


async def _exercise(url: str) -> None:
    async with connect(url, SECRET_TOKEN, traceparent=TRACEPARENT) as client:
        await call_json(client, "search_tools", {"query": SECRET_QUERY})
        await call_text(
            client,
            "call_read_tool",
            {"name": "time_get_current_time", "arguments": {"timezone": SECRET_ARGUMENT}},
        )


async def test_request_span_continues_the_callers_trace(traced) -> None:
    url, _, _, observed = traced
    await _exercise(url)
    server_spans = [s for s in observed.spans() if s.name == "tools/call call_read_tool"]
    assert server_spans
    span = server_spans[-1]
    assert format(span.context.trace_id, "032x") == TRACE_ID
    assert span.attributes["mcp.method.name"] == "tools/call"
    assert span.attributes["gen_ai.tool.name"] == "call_read_tool"


async def test_upstream_call_is_a_child_span_that_the_upstream_continues(traced) -> None:
    url, _, upstream, observed = traced
    await _exercise(url)
    client_spans = [
        s for s in observed.spans() if s.name == "tools/call" and s.attributes.get("gen_ai.tool.name")
    ]
    span = client_spans[-1]
    assert span.attributes["gen_ai.tool.name"] == "time_get_current_time"
    sent = upstream.requests_for("tools/call")[-1].headers["traceparent"]
    assert sent == f"00-{TRACE_ID}-{format(span.context.span_id, '016x')}-01"


async def test_search_has_its_own_span(traced) -> None:
    url, _, _, observed = traced
    await _exercise(url)
    assert any(s.name == "search" for s in observed.spans())


async def test_metrics_count_requests_by_method_meta_tool_and_outcome(traced) -> None:
    url, base, _, _ = traced
    await _exercise(url)
    text = httpx.get(f"{base}/metrics").text
    assert (
        'mcp_server_operation_duration_seconds_count{gen_ai_tool_name="search_tools",mcp_method_name="tools/call"'
        in text
    )
    assert "toolsearch_search_duration_seconds_bucket" in text
    assert "mcp_client_operation_duration_seconds_count" in text
    assert (
        'toolsearch_catalog_lookups_total{otel_scope_name="toolsearch",otel_scope_schema_url="",otel_scope_version="0.1.0",toolsearch_catalog_result="hit"}'
        in text
    )
    assert (
        'toolsearch_catalog_refreshes_total{otel_scope_name="toolsearch",otel_scope_schema_url="",otel_scope_version="0.1.0",toolsearch_outcome="ok"}'
        in text
    )
    assert "toolsearch_store_errors_total" in text


async def test_spans_and_metrics_never_carry_tokens_queries_arguments_or_results(traced) -> None:
    url, base, _, observed = traced
    await _exercise(url)
    exported = orjson.dumps([orjson.loads(span.to_json()) for span in observed.spans()]).decode()
    exported += observed.metrics_json() + httpx.get(f"{base}/metrics").text
    for secret in (SECRET_TOKEN, "SECRET-lunar", SECRET_ARGUMENT, SECRET_RESULT):
        assert secret not in exported
