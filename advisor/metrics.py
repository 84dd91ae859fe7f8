"""Metrics of the price pass-through advisor (core/telemetry/metrics.py)."""

from core.telemetry.metrics import MetricSet

METRICS = MetricSet("advisor")
TURNS = METRICS.counter("turns", "Turns answered, by mode.", ("mode",))
TOOL_CALLS = METRICS.counter("tool_calls", "Tool calls, by tool and outcome (ok, failed).", ("tool", "outcome"))
FILES = METRICS.counter("files", "Files generated for users (documents, charts, sheets).")


def count_event(event: object) -> None:
    """Count what one event of a turn says happened (a tool call ended, a file was made)."""
    from advisor.events import FileMade, ToolFinished

    if isinstance(event, ToolFinished):
        TOOL_CALLS.inc(tool=event.name, outcome="ok" if event.ok else "failed")
    elif isinstance(event, FileMade):
        FILES.inc()


__all__ = ["FILES", "TOOL_CALLS", "TURNS", "count_event"]
