"""Standalone use from Python (KATASHIRO NFR-003): one call with the spec's option names.

    from research.api import research
    result = research("中小企業の価格転嫁の現状", iteration_count=3)
    print(result.final_report)

It uses Ray when it is already initialised (a notebook, a job), else starts a local Ray for the call
and stops it afterwards. Options left out come from ``config`` (or ``magi.yaml``) and ``MAGI_*`` as for the CLI.
"""

from __future__ import annotations

from pathlib import Path

from core.events import EventSink, ListSink
from core.runtime import ray_runtime
from core.settings import load_settings
from research.engine import preflight, run_research
from research.result import ConsensusResearchResult


def research(topic: str, *, agent_count: int | None = None, iteration_count: int | None = None,
             agent_timeout_ms: int | None = None, conflict_threshold: float | None = None,
             provider: str | None = None, max_results_per_agent: int | None = None, corpus: Path | None = None,
             config: Path | None = None, events: EventSink | None = None,
             address: str | None = None) -> ConsensusResearchResult:
    """Run a consensus research; raises :class:`core.errors.MagiError` subclasses with a clear message."""
    overrides = {
        "research_agents": agent_count, "research_iterations": iteration_count,
        "research_agent_timeout_s": agent_timeout_ms / 1000 if agent_timeout_ms is not None else None,
        "research_conflict_threshold": conflict_threshold, "research_results_per_agent": max_results_per_agent,
        "search_provider": provider or ("local" if corpus else None), "corpus_dir": corpus,
    }
    resolved = load_settings(config, **overrides)  # validated: a bad option names itself
    preflight(topic, resolved)  # bad options or topic fail before Ray starts
    with ray_runtime(resolved, address=address) as runtime:
        return run_research(topic, resolved, runtime, events or ListSink())
