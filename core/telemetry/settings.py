"""Settings sections ``logging:`` and ``telemetry:`` (the one declaration of these options; the CLI's
``--log-format`` and Serve's logging config are derived from them)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, field_validator

from core.settings import Section


class LoggingSettings(Section):
    """How every process of the cluster logs: the CLI, Serve replicas, actors and batch jobs."""

    name: ClassVar[str] = "logging"

    format: Literal["text", "json"] = Field(
        "text",
        description="Log lines as text, or as one JSON object each (time, level, logger, requestId, system, "
        "node, message) for a log collector.",
    )
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        "INFO", description="Log level of services (Serve replicas, actors, jobs); the CLI logs errors unless -v."
    )


class TelemetrySettings(Section):
    """Traces (OpenTelemetry) of the cluster's work; metrics always go to Ray's Prometheus exporter."""

    name: ClassVar[str] = "telemetry"

    enabled: bool = Field(
        True,
        description="Record metrics and carry request ids into actors. Off only to measure what telemetry "
        "costs (benchmarks/telemetry_overhead.py); read from MAGI_TELEMETRY_ENABLED by every process at start.",
    )
    otlp_endpoint: str | None = Field(
        None,
        description="Send OpenTelemetry spans to this OTLP/HTTP collector, e.g. http://127.0.0.1:4318/v1/traces "
        "(unset: tracing off, at no cost).",
    )

    @field_validator("otlp_endpoint")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL of an OTLP/HTTP collector (…/v1/traces)")
        return value or None


__all__ = ["LoggingSettings", "TelemetrySettings"]
