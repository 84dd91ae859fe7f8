"""Metrics of council deliberations (core/telemetry/metrics.py)."""

from core.telemetry.metrics import MetricSet

METRICS = MetricSet("council")
DELIBERATIONS = METRICS.counter("deliberations", "Deliberations finished, by decision.", ("decision",))
PHASE_SECONDS = METRICS.histogram("phase_seconds", "Wall time of one phase's sage calls, by phase.", ("phase",))
SAGE_FAILURES = METRICS.counter("sage_failures", "Sage answers missing, by phase and kind.", ("phase", "kind"))
UNARGUED_FLIPS = METRICS.counter("unargued_flips", "Final votes changed from the blind one without a new argument.")

__all__ = ["DELIBERATIONS", "PHASE_SECONDS", "SAGE_FAILURES", "UNARGUED_FLIPS"]
