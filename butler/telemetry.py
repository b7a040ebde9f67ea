"""OpenTelemetry set-up, trace context helpers and the butler's metrics.

A tracer provider is always installed, so every session has a trace id to
record. Spans and metrics are exported over OTLP only when the standard
``OTEL_*`` variables ask for it (``OTEL_EXPORTER_OTLP_ENDPOINT`` and
friends); with none set nothing is sent and nothing complains.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from opentelemetry import metrics, propagate, trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

if TYPE_CHECKING:
    from opentelemetry.sdk.metrics.export import MetricReader

_configured = False


def tracer() -> trace.Tracer:
    return trace.get_tracer("butler")


def _exporting(signal: str) -> bool:
    """Whether OTLP export of ``signal`` (traces, metrics) is asked for."""
    endpoint = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or os.environ.get(
        f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT"
    )
    return bool(endpoint) and os.environ.get(f"OTEL_{signal.upper()}_EXPORTER", "otlp") != "none"


def _grpc() -> bool:
    return os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf") == "grpc"


def _span_processor() -> SpanProcessor | None:
    if not _exporting("traces"):
        return None
    if _grpc():
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # type: ignore[assignment]
            OTLPSpanExporter,
        )
    return BatchSpanProcessor(OTLPSpanExporter())


def _metric_reader() -> MetricReader | None:
    if not _exporting("metrics"):
        return None
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

    if _grpc():
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter
    else:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import (  # type: ignore[assignment]
            OTLPMetricExporter,
        )
    return PeriodicExportingMetricReader(OTLPMetricExporter())


def setup_telemetry(
    service_name: str,
    extra: SpanProcessor | None = None,
    extra_reader: MetricReader | None = None,
) -> TracerProvider | None:
    """Install the tracer and meter providers once per process; export where configured.

    ``extra`` and ``extra_reader`` add a span processor and a metric reader
    (tests use in-memory ones). Returns None when already installed.
    """
    global _configured
    if _configured:
        return None
    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", service_name)})
    provider = TracerProvider(resource=resource)
    for processor in (_span_processor(), extra):
        if processor is not None:
            provider.add_span_processor(processor)
    trace.set_tracer_provider(provider)
    readers = [r for r in (_metric_reader(), extra_reader) if r is not None]
    if readers:  # with none, the API's no-op meter serves, and a start skips the metrics SDK
        from opentelemetry.sdk.metrics import MeterProvider

        metrics.set_meter_provider(MeterProvider(resource=resource, metric_readers=readers))
    _configured = True
    return provider


def current_traceparent() -> str | None:
    """The W3C ``traceparent`` of the active span, or None without one."""
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return carrier.get("traceparent")


def trace_id_of(span: trace.Span) -> str | None:
    context = span.get_span_context()
    if not context.is_valid:
        return None
    return format(context.trace_id, "032x")


@dataclass
class SessionMetrics:
    """The spawner's instruments: sessions, duration, tokens and queue depth."""

    sessions: metrics.Counter
    duration: metrics.Histogram
    tokens: metrics.Counter

    @classmethod
    def create(cls, queue_depth: Callable[[], int], butler: str) -> SessionMetrics:
        meter = metrics.get_meter("butler")

        def observe(_: metrics.CallbackOptions) -> list[metrics.Observation]:
            return [metrics.Observation(queue_depth(), {"butler": butler})]

        meter.create_observable_gauge(
            "butler.sessions.queued",
            [observe],
            unit="{session}",
            description="Triggers waiting for a session slot",
        )
        return cls(
            sessions=meter.create_counter(
                "butler.sessions", unit="{session}", description="Sessions by final status"
            ),
            duration=meter.create_histogram(
                "butler.session.duration", unit="ms", description="Session run time"
            ),
            tokens=meter.create_counter(
                "butler.session.tokens", unit="{token}", description="Tokens by kind"
            ),
        )
