"""OpenTelemetry tracing: on only when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set (OTLP over
HTTP/protobuf); otherwise nothing is instrumented and nothing is exported.

On, it traces Django's requests, psycopg's statements and, through the Temporal SDK's
``TracingInterceptor`` on the client (and so on the workers made from it), the workflow and
each activity. A run is accepted into the ``run_starts`` outbox and started later by a
worker's dispatcher, in another process: the request's W3C ``traceparent`` is stored with
the run (:func:`traceparent`) and the dispatcher starts the workflow inside it
(:func:`attached`), so one trace goes from ``POST /api/runs`` through every stage to the PR.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider

# OpenTelemetry is imported only when tracing is on: importing it costs every process a
# few hundred milliseconds.
ENDPOINT = "OTEL_EXPORTER_OTLP_ENDPOINT"
_provider: TracerProvider | None = None


def setup(service_name: str = "amtp") -> TracerProvider | None:
    """Start tracing in this process if ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set (once; before
    Django loads its middleware). ``OTEL_SERVICE_NAME`` overrides ``service_name``."""
    global _provider
    if _provider is not None or not os.environ.get(ENDPOINT):
        return _provider
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.instrumentation.django import DjangoInstrumentor
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    named = {} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": service_name}
    provider = TracerProvider(resource=Resource.create(named))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    DjangoInstrumentor().instrument(tracer_provider=provider)
    PsycopgInstrumentor().instrument(tracer_provider=provider, skip_dep_check=True)
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        trace.set_tracer_provider(provider)  # for other libraries; AMTP passes its own
    _provider = provider
    return provider


def shutdown() -> None:
    """Export what is left and stop tracing (tests; a process exit flushes by itself)."""
    global _provider
    if _provider is None:
        return
    from opentelemetry.instrumentation.django import DjangoInstrumentor
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor

    DjangoInstrumentor().uninstrument()
    PsycopgInstrumentor().uninstrument()
    _provider.shutdown()
    _provider = None


def enabled() -> bool:
    return _provider is not None


def temporal_interceptors() -> list:
    """The Temporal client's interceptors: the tracing one when tracing is on."""
    if _provider is None:
        return []
    from temporalio.contrib.opentelemetry import TracingInterceptor

    return [TracingInterceptor(tracer=_provider.get_tracer("amtp.temporal"))]


def traceparent() -> str:
    """The current span's W3C ``traceparent``, or "" when nothing is traced."""
    if _provider is None:
        return ""
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    carrier: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(carrier)
    return carrier.get("traceparent", "")


@contextlib.contextmanager
def attached(parent: str) -> Iterator[None]:
    """Run the block inside the trace ``parent`` (a stored ``traceparent``; "" or a malformed
    one: no parent)."""
    if _provider is None or not parent:
        yield
        return
    from opentelemetry import context
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    token = context.attach(TraceContextTextMapPropagator().extract({"traceparent": parent}))
    try:
        yield
    finally:
        context.detach(token)


def trace_id(parent: str) -> str:
    """The trace id (32 hex digits) of a ``traceparent``, or ""."""
    parts = parent.split("-")
    return parts[1] if len(parts) == 4 and len(parts[1]) == 32 else ""
