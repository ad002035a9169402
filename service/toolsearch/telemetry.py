"""OpenTelemetry traces and metrics, named after the OpenTelemetry MCP semantic conventions.

Spans and metrics carry method names, tool names, outcomes, counts and durations: never a token,
query, argument or result. Traces are exported over OTLP when the standard `OTEL_EXPORTER_OTLP_*`
variables name an endpoint (otherwise no span is recorded, and a caller's `traceparent` is passed
upstream as it came); metrics are always served as Prometheus text on `/metrics`, and exported over
OTLP too when configured.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Final

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.metrics import Histogram, Meter, Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from prometheus_client import CollectorRegistry, generate_latest

from toolsearch import __version__

METHOD: Final = "mcp.method.name"
TOOL: Final = "gen_ai.tool.name"
REQUEST_ID: Final = "jsonrpc.request.id"
ERROR_TYPE: Final = "error.type"
OUTCOME: Final = "toolsearch.outcome"
CATALOG_RESULT: Final = "toolsearch.catalog.result"

_PROPAGATOR = TraceContextTextMapPropagator()
_LATENCY_BUCKETS: Final = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
_EMBEDDING_BUCKETS: Final = (0.1, 0.5, 1, 5, 15, 30, 60, 120, 300, 600)
_RANK_BUCKETS: Final = (0, 1, 2, 3, 4, 5, 8, 10, 15, 25)


def _otlp_configured(kind: str) -> bool:
    return bool(
        os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or os.environ.get(f"OTEL_EXPORTER_OTLP_{kind}_ENDPOINT")
    )


def _tracer_provider(
    resource: Resource, span_exporter: SpanExporter | None, use_environment: bool
) -> TracerProvider | None:
    """The provider exporting spans to `span_exporter`, else over OTLP when configured; None (no
    span recorded) otherwise."""
    if span_exporter is None and use_environment and _otlp_configured("TRACES"):
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        span_exporter = OTLPSpanExporter()
    if span_exporter is None:
        return None
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(span_exporter))
    return provider


def _meter_provider(
    resource: Resource, registry: CollectorRegistry, metric_reader: MetricReader | None, use_environment: bool
) -> MeterProvider:
    """Metrics read as Prometheus text from `registry`, by `metric_reader` too, and exported over OTLP
    when configured."""
    from opentelemetry.exporter.prometheus import PrometheusMetricReader

    readers: list[MetricReader] = [PrometheusMetricReader(registry=registry)]
    if metric_reader is not None:
        readers.append(metric_reader)
    if use_environment and _otlp_configured("METRICS"):
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

        readers.append(PeriodicExportingMetricReader(OTLPMetricExporter()))
    return MeterProvider(resource=resource, metric_readers=readers)


def _latency_histogram(meter: Meter, name: str, description: str) -> Histogram:
    return meter.create_histogram(
        name, unit="s", description=description, explicit_bucket_boundaries_advisory=_LATENCY_BUCKETS
    )


class Telemetry:
    """One process's tracer and instruments. `Telemetry()` reads the standard OTEL_* variables;
    tests pass an in-memory span exporter and metric reader instead."""

    def __init__(
        self,
        *,
        span_exporter: SpanExporter | None = None,
        metric_reader: MetricReader | None = None,
        use_environment: bool = True,
    ) -> None:
        resource = Resource.create({"service.name": "toolsearch", "service.version": __version__})
        self._tracer_provider = _tracer_provider(resource, span_exporter, use_environment)
        self.tracer: trace.Tracer = (
            self._tracer_provider.get_tracer("toolsearch", __version__)
            if self._tracer_provider is not None
            else trace.NoOpTracer()
        )
        self.registry = CollectorRegistry()
        self._meter_provider = _meter_provider(resource, self.registry, metric_reader, use_environment)
        self._meter = self._meter_provider.get_meter("toolsearch", __version__)
        self._request_instruments(self._meter)
        self._outcome_instruments(self._meter)

    def _request_instruments(self, meter: Meter) -> None:
        self.server_duration = _latency_histogram(
            meter, "mcp.server.operation.duration", "MCP requests served, by method, meta-tool and outcome."
        )
        self.client_duration = _latency_histogram(
            meter, "mcp.client.operation.duration", "Requests to the upstream MCP server."
        )
        self.upstream_errors = meter.create_counter(
            "toolsearch.upstream.errors",
            description="Upstream requests that failed, by method and error type.",
        )
        self.search_duration = _latency_histogram(
            meter, "toolsearch.search.duration", "search_tools ranking time per query."
        )
        self.catalog_lookups = meter.create_counter(
            "toolsearch.catalog.lookups", description="Catalog lookups by result: hit, stale or miss."
        )
        self.catalog_refreshes = meter.create_counter(
            "toolsearch.catalog.refreshes", description="Upstream listings of a catalog, by outcome."
        )
        self.catalog_listing_duration = _latency_histogram(
            meter, "toolsearch.catalog.listing.duration", "Time to list a caller's catalog from the upstream."
        )
        self.suspicious_tools = meter.create_counter(
            "toolsearch.tools.suspicious",
            description="Flagged tools in catalog listings, by reason (integrity.REASONS).",
        )
        self.tool_changes = meter.create_counter(
            "toolsearch.tools.changed",
            description="Listed tools whose definition changed since pinned, by action: recorded or "
            "quarantined.",
        )

    def _outcome_instruments(self, meter: Meter) -> None:
        """What callers do with search answers (outcomes.py): counts and ranks, never a tool's name."""
        self.search_followed = meter.create_histogram(
            "toolsearch.search.followed",
            unit="{rank}",
            description="Searches followed by a call: the called tool's rank in the answer (1 = best), "
            "by outcome (followed: it was shown; not_in_results: it was not, recorded as 0).",
            explicit_bucket_boundaries_advisory=_RANK_BUCKETS,
        )
        self.search_retried = meter.create_counter(
            "toolsearch.search.retried", description="Searches followed by another search before any call."
        )
        self.search_unfollowed = meter.create_counter(
            "toolsearch.search.unfollowed", description="Searches followed by no call within the window."
        )
        self.search_abstained = meter.create_counter(
            "toolsearch.search.abstained", description="Searches answered: no tool matches this request well."
        )
        self.search_empty = meter.create_counter(
            "toolsearch.search.empty", description="Searches answered with no tool at all."
        )
        self.call_without_search = meter.create_counter(
            "toolsearch.call.without_search",
            description="Calls of a tool that no search showed the caller within the window.",
        )
        self.learning_contributions = meter.create_counter(
            "toolsearch.learning.contributions",
            description="With --learning: request vectors taught to a tool a search did not rank first "
            "(a caller once per tool).",
        )
        self.call_unknown_tool = meter.create_counter(
            "toolsearch.call.unknown_tool",
            description="Calls of a name the catalog lacks, by outcome: typo (one tool meant) or missing.",
        )
        # Outcome counters start at 0, so that rates, dashboards and alerts have a series before the first.
        zeroed = (self.search_retried, self.search_unfollowed, self.search_abstained, self.search_empty)
        for counter in (*zeroed, self.call_without_search):
            counter.add(0)
        for reason in ("typo", "missing"):
            self.call_unknown_tool.add(0, {OUTCOME: reason})

    def observe_embedding(self, pending: Callable[[], int]) -> Callable[[float, bool], None]:
        """Report how many catalogs wait to be embedded (`pending`); the callable returned records
        each finished embedding's seconds and success."""
        self._meter.create_observable_gauge(
            "toolsearch.embedding.pending",
            callbacks=[lambda _options: [Observation(pending())]],
            description="Catalogs searched with BM25 while they wait to be embedded.",
        )
        duration = self._meter.create_histogram(
            "toolsearch.embedding.duration",
            unit="s",
            description="Time to embed a catalog for hybrid search, by outcome.",
            explicit_bucket_boundaries_advisory=_EMBEDDING_BUCKETS,
        )

        def record(seconds: float, succeeded: bool) -> None:
            duration.record(seconds, {"toolsearch.outcome": "ok" if succeeded else "error"})

        return record

    def observe_store_errors(self, failures: Callable[[], int]) -> None:
        """Report the shared store's failed operations, as the store counts them."""
        self._meter.create_observable_counter(
            "toolsearch.store.errors",
            callbacks=[lambda _options: [Observation(failures())]],
            description="Failed operations on the shared catalog store (Redis).",
        )

    @staticmethod
    def extract(headers: Mapping[str, str]) -> Context:
        """The caller's trace context (W3C `traceparent`/`tracestate`), to continue its trace."""
        return _PROPAGATOR.extract(carrier=dict(headers))

    @staticmethod
    def inject(headers: dict[str, str]) -> None:
        """Write the current trace context into upstream request headers."""
        _PROPAGATOR.inject(carrier=headers)

    @contextmanager
    def span(
        self,
        name: str,
        *,
        kind: SpanKind = SpanKind.INTERNAL,
        context: Context | None = None,
        attributes: Mapping[str, Any] | None = None,
    ) -> Iterator[Span]:
        with self.tracer.start_as_current_span(
            name, context=context, kind=kind, attributes=attributes, record_exception=False
        ) as span:
            yield span

    @staticmethod
    def fail(span: Span, error_type: str) -> None:
        span.set_attribute(ERROR_TYPE, error_type)
        span.set_status(Status(StatusCode.ERROR))

    def prometheus_text(self) -> bytes:
        return generate_latest(self.registry)

    def flush(self) -> None:
        """Export what is buffered now (spans are batched)."""
        if self._tracer_provider is not None:
            self._tracer_provider.force_flush()
        self._meter_provider.force_flush()

    def shutdown(self) -> None:
        if self._tracer_provider is not None:
            self._tracer_provider.shutdown()
        self._meter_provider.shutdown()


def elapsed(started: float) -> float:
    """Seconds since `started` (a `time.perf_counter()` reading)."""
    return time.perf_counter() - started
