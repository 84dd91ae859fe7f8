"""Metrics of the sessions (virtual actors) every conversational system keeps (core/telemetry/metrics.py)."""

from core.telemetry.metrics import MetricSet

METRICS = MetricSet("sessions")
ACTIVE = METRICS.gauge("active", "Sessions held in memory by this process.")
ACTIVATIONS = METRICS.counter("activations", "Sessions activated (brought into memory from the store).")
PASSIVATIONS = METRICS.counter("passivations", "Sessions passivated (released from memory after idling).")
CONFLICTS = METRICS.counter("revision_conflicts", "Saves that lost a revision race and were retried.")

__all__ = ["ACTIVATIONS", "ACTIVE", "CONFLICTS", "PASSIVATIONS"]
