"""OpenTelemetry set-up and trace context helpers.

A tracer provider is always installed, so every session has a trace id to
record. Spans are exported over OTLP only when the standard ``OTEL_*``
variables ask for it; with none set nothing is sent and nothing complains.
"""

from __future__ import annotations

import os

from opentelemetry import propagate, trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

_configured = False


def tracer() -> trace.Tracer:
    return trace.get_tracer("butler")


def _otlp_exporter() -> SpanExporter | None:
    if not (
        os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    ):
        return None
    if os.environ.get("OTEL_TRACES_EXPORTER", "otlp") == "none":
        return None
    protocol = os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # type: ignore[assignment]
            OTLPSpanExporter,
        )
    return OTLPSpanExporter()


def setup_telemetry(service_name: str, extra: SpanProcessor | None = None) -> TracerProvider | None:
    """Install the tracer provider once per process; export where configured.

    ``extra`` adds a span processor (tests use an in-memory exporter).
    Returns None when a provider was already installed.
    """
    global _configured
    if _configured:
        return None
    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", service_name)})
    provider = TracerProvider(resource=resource)
    exporter = _otlp_exporter()
    if exporter is not None:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    if extra is not None:
        provider.add_span_processor(extra)
    trace.set_tracer_provider(provider)
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
