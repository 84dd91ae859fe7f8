"""Standalone use from Python (KATASHIRO NFR-003): one call with the spec's option names.

    from research.api import research
    result = research("中小企業の価格転嫁の現状", iteration_count=3)
    print(result.final_report)

``research`` uses Ray when it is already initialised (a notebook, a job), else starts a local Ray
for the call and stops it afterwards; ``aresearch`` is the same for callers already inside an event
loop. Options left out come from ``config`` (or ``magi.yaml``) and ``MAGI_*`` as for the CLI.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from core.events import EventSink, ListSink
from core.runtime import ray_runtime
from core.settings import load_settings
from research.engine import preflight, run_research
from research.options import ResearchOptions, apply_options
from research.result import ConsensusResearchResult

# The spec's option name -> ours, so an error names the argument the caller passed.
API_NAMES = {
    "research.agents": "agent_count",
    "research.iterations": "iteration_count",
    "research.agent_timeout_s": "agent_timeout_ms",
    "research.conflict_threshold": "conflict_threshold",
    "research.results_per_agent": "max_results_per_agent",
    "search.provider": "provider",
    "search.corpus_dir": "corpus",
}


async def aresearch(
    topic: str,
    *,
    agent_count: int | None = None,
    iteration_count: int | None = None,
    agent_timeout_ms: int | None = None,
    conflict_threshold: float | None = None,
    provider: Any = None,
    max_results_per_agent: int | None = None,
    corpus: Path | None = None,
    config: Path | None = None,
    events: EventSink | None = None,
    address: str | None = None,
) -> ConsensusResearchResult:
    """Run a consensus research; raises :class:`core.errors.MagiError` subclasses with a clear message."""
    options = ResearchOptions.model_construct(
        agents=agent_count,
        iterations=iteration_count,
        timeout_s=agent_timeout_ms / 1000 if agent_timeout_ms is not None else None,
        conflict_threshold=conflict_threshold,
        results_per_agent=max_results_per_agent,
        provider=provider,
        corpus=corpus,
    )
    settings = apply_options(load_settings(config), options, origin="argument", names=API_NAMES)
    topic = preflight(topic, settings)  # bad options or topic fail before Ray starts
    async with ray_runtime(settings, address=address) as runtime:
        return await run_research(topic, settings, runtime, events or ListSink())


def research(topic: str, **options: Any) -> ConsensusResearchResult:
    """:func:`aresearch` for synchronous callers (not from inside a running event loop)."""
    return asyncio.run(aresearch(topic, **options))


__all__ = ["aresearch", "research"]
