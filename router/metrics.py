"""Metrics of the Engineer Cafe router (core/telemetry/metrics.py)."""

from core.telemetry.metrics import MetricSet
from router.models import RouteResult

METRICS = MetricSet("router")
ROUTES = METRICS.counter("routes", "Questions routed, by agent and language.", ("agent", "language"))
ABSTENTIONS = METRICS.counter("abstentions", "Questions no rule was confident about (sent to a general agent).")
INHERITED = METRICS.counter("follow_ups_inherited", "Follow-ups that took the session's previous request type.")


def count_route(result: RouteResult) -> None:
    """Count one routed question (once per question a caller asked, not per retry of its turn)."""
    ROUTES.inc(agent=result.agent, language=result.language)
    if result.debug_info.classification.abstained:
        ABSTENTIONS.inc()
    if result.debug_info.classification.inherited:
        INHERITED.inc()


__all__ = ["ABSTENTIONS", "INHERITED", "ROUTES", "count_route"]
