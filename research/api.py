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
from research.result import ConsensusResearchResult
from research.settings import RESEARCH_OPTIONS


async def aresearch(
    topic: str,
    *,
    config: Path | None = None,
    events: EventSink | None = None,
    address: str | None = None,
    agent_timeout_ms: int | None = None,
    **options: Any,
) -> ConsensusResearchResult:
    """Run a consensus research; ``options`` are the keywords of ``RESEARCH_OPTIONS`` (``agent_count``,
    ``iteration_count``, ``max_results_per_agent``, ``provider``, ``corpus`` ...; the agent timeout
    also in the spec's milliseconds). Raises :class:`core.errors.MagiError` subclasses with a clear message."""
    given = RESEARCH_OPTIONS.from_keywords(options)
    if agent_timeout_ms is not None:
        given = given.with_value("timeout", agent_timeout_ms / 1000, "agent_timeout_ms")
    settings = RESEARCH_OPTIONS.apply(load_settings(config), given)
    topic = preflight(topic, settings)  # bad options or topic fail before Ray starts
    async with ray_runtime(settings, address=address) as runtime:
        return await run_research(topic, settings, runtime, events or ListSink())


def research(topic: str, **options: Any) -> ConsensusResearchResult:
    """:func:`aresearch` for synchronous callers (not from inside a running event loop)."""
    return asyncio.run(aresearch(topic, **options))


__all__ = ["aresearch", "research"]
