"""Metrics of research runs (core/telemetry/metrics.py); the collector's pages are in actors/metrics.py."""

from core.telemetry.metrics import MetricSet

METRICS = MetricSet("research")
RUNS = METRICS.counter("runs", "Research runs by state reached (accepted, running, completed, failed).", ("state",))
QUEUE_DEPTH = METRICS.gauge("queue_depth", "Runs waiting on this replica.")
STAGE_SECONDS = METRICS.histogram("agent_stage_seconds", "Time an agent spent in one stage, by stage.", ("stage",))
AGENT_FAILURES = METRICS.counter("agent_failures", "Agents failed or timed out, by the stage they were in.", ("stage",))

__all__ = ["AGENT_FAILURES", "QUEUE_DEPTH", "RUNS", "STAGE_SECONDS"]
