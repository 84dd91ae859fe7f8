"""OpenTelemetry spans around the work that crosses a boundary: HTTP requests, actor calls, LLM calls,
tool calls, fetches, store transactions.

Off until :func:`configure_tracing` is given an OTLP endpoint (``telemetry.otlp_endpoint``) or a test
installs an exporter (:func:`use_exporter`, e.g. the SDK's ``InMemorySpanExporter``): while off,
:func:`span` is one flag test and an empty context manager, and nothing of the SDK is imported.

Each span carries the request id (``magi.request_id``). Across processes the trace context travels
with the request id (core/telemetry/context.py: ``carried``/``adopted``), as W3C ``traceparent``; a
callee whose process has no tracer yet starts one for the endpoint the caller named, so an actor on
another node reports into the same trace without being configured by hand.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, nullcontext
from typing import Any

log = logging.getLogger(__name__)
TRACER_NAME = "magi"
_state: dict[str, Any] = {"tracer": None, "provider": None, "endpoint": None}


def tracing_on() -> bool:
    return _state["tracer"] is not None


def configure_tracing(otlp_endpoint: str | None, service: str = "magi") -> None:
    """Send spans to the OTLP/HTTP collector at ``otlp_endpoint`` (``http://host:4318/v1/traces``);
    None leaves tracing as it is (off unless configured before). Once per process."""
    if not otlp_endpoint or _state["endpoint"] == otlp_endpoint:
        return
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    # Sent every half second: an actor that is killed after its work loses at most that much.
    _install(BatchSpanProcessor(OTLPSpanExporter(endpoint=otlp_endpoint), schedule_delay_millis=500), service)
    _state["endpoint"] = otlp_endpoint


def use_exporter(exporter: Any, service: str = "magi") -> None:
    """Send spans synchronously to ``exporter`` (tests: ``InMemorySpanExporter``)."""
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    _install(SimpleSpanProcessor(exporter), service)


def _install(processor: Any, service: str) -> None:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider

    provider = _state["provider"]
    if provider is None:
        provider = TracerProvider(resource=Resource.create({"service.name": service}))
        _state["provider"] = provider
        _state["tracer"] = provider.get_tracer(TRACER_NAME)
    provider.add_span_processor(processor)


def stop_tracing() -> None:
    """Flush and turn tracing off in this process (tests; the end of a command)."""
    provider = _state["provider"]
    if provider is not None:
        provider.shutdown()
    _state.update(tracer=None, provider=None, endpoint=None)


def flush() -> None:
    """Send every finished span now (before a process or a test ends)."""
    provider = _state["provider"]
    if provider is not None:
        provider.force_flush()


def span(name: str, **attributes: object) -> Any:
    """A span named ``name`` (``llm.call``, ``actor.call`` ...) with ``attributes`` and the request id,
    as a context manager; an empty one while tracing is off."""
    tracer = _state["tracer"]
    if tracer is None:
        return nullcontext()
    return _span(tracer, name, attributes)


@contextmanager
def _span(tracer: Any, name: str, attributes: Mapping[str, object]) -> Iterator[Any]:
    from core.telemetry.request_id import current_request_id

    attrs = {f"magi.{k}": v if isinstance(v, (str, bool, int, float)) else str(v) for k, v in attributes.items()}
    rid = current_request_id()
    if rid:
        attrs["magi.request_id"] = rid
    with tracer.start_as_current_span(name, attributes=attrs) as current:
        yield current


def inject() -> dict[str, str]:
    """The current trace context as W3C headers (empty while tracing is off), plus the endpoint the
    callee should report to."""
    if _state["tracer"] is None:
        return {}
    from opentelemetry import propagate

    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    if _state["endpoint"]:
        carrier["magi-otlp-endpoint"] = _state["endpoint"]
    return carrier


@contextmanager
def extracted(carrier: Mapping[str, str]) -> Iterator[None]:
    """Run the block as a child of the caller's span (see :func:`inject`)."""
    if not carrier:
        yield
        return
    endpoint = carrier.get("magi-otlp-endpoint")
    if endpoint and _state["endpoint"] is None:
        configure_tracing(endpoint)
    if _state["tracer"] is None:
        yield
        return
    from opentelemetry import context, propagate

    token = context.attach(propagate.extract(dict(carrier)))
    try:
        yield
    finally:
        context.detach(token)


def current_trace_id() -> str | None:
    """The hex id of the trace this code runs in (for log lines), or None."""
    if _state["tracer"] is None:
        return None
    from opentelemetry import trace

    ctx = trace.get_current_span().get_span_context()
    return format(ctx.trace_id, "032x") if ctx.is_valid else None


__all__ = [
    "TRACER_NAME",
    "configure_tracing",
    "current_trace_id",
    "extracted",
    "flush",
    "inject",
    "span",
    "stop_tracing",
    "tracing_on",
    "use_exporter",
]
