"""Telemetry in core: metrics (Ray's metrics API, kept in memory too), the request id in a context
variable, one logging set-up, OpenTelemetry spans. Each concern is one module; the names a system
uses are re-exported here."""

from core.telemetry.context import (
    HEADER,
    accept_request_id,
    adopted,
    carried,
    current_request_id,
    new_request_id,
    request_scope,
)
from core.telemetry.logs import scrubbed, setup_logging
from core.telemetry.metrics import Counter, Gauge, Histogram, MetricSet
from core.telemetry.tracing import configure_tracing, span

__all__ = [
    "HEADER",
    "Counter",
    "Gauge",
    "Histogram",
    "MetricSet",
    "accept_request_id",
    "adopted",
    "carried",
    "configure_tracing",
    "current_request_id",
    "new_request_id",
    "request_scope",
    "scrubbed",
    "setup_logging",
    "span",
]
