"""Metrics of the shared collector: pages by outcome and cache hits (counted under research, its user)."""

from core.telemetry.metrics import MetricSet

METRICS = MetricSet("research")
PAGES = METRICS.counter(
    "pages_fetched", "Pages asked of the collector, by outcome (fetched, cached, a failure).", ("outcome",)
)
CACHE_HITS = METRICS.counter("cache_hits", "Answers served from a cache, by cache (page, analysis).", ("cache",))

__all__ = ["CACHE_HITS", "PAGES"]
