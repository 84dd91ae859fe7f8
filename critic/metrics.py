"""Metrics of the idea critic (core/telemetry/metrics.py)."""

from core.telemetry.metrics import MetricSet

METRICS = MetricSet("critic")
EVALUATIONS = METRICS.counter("evaluations", "Ideas judged, by status (ok, cached, failed, timeout).", ("status",))
CACHE_HITS = METRICS.counter("cache_hits", "Ideas taken from the evaluation cache (no LLM call).")
OVER_BUDGET = METRICS.counter("over_budget", "Evaluations that used more tokens than critic.token_budget.")

__all__ = ["CACHE_HITS", "EVALUATIONS", "OVER_BUDGET"]
