"""Research engine (walking skeleton): N independent agents in parallel, one report kept.

The full consensus workflow (conflicts, scoring, iterations) builds on this. The engine talks to
agents only through :class:`core.runtime.Runtime`, so it runs in-process in tests and on Ray.
"""

from __future__ import annotations

import logging
import time
import uuid
from datetime import UTC, datetime
from typing import Any

from actors.collector import CollectionStats, Collector
from actors.nlp_pool import NlpPool
from actors.research_agent import ResearchAgent
from core.errors import InputError, ResearchError, first_line
from core.events import AgentCompleted, AgentStarted, EventSink, ResearchCompleted, ResearchFailed, ResearchStarted
from core.models import AgentReport, AgentStrategy
from core.runtime import Outcome, Runtime
from core.settings import Settings
from research.result import AgentFailure, ResearchResult
from research.strategies import strategy_for
from scrapers.search.factory import open_search

log = logging.getLogger(__name__)
MAX_TOPIC_CHARS = 500


def validate_topic(topic: str) -> str:
    cleaned = " ".join(topic.split())
    if not cleaned:
        raise InputError("the research topic is empty; pass a topic, e.g. magi research \"中小企業の価格転嫁\"")
    if len(cleaned) > MAX_TOPIC_CHARS:
        raise InputError(f"the research topic has {len(cleaned)} characters; keep it under {MAX_TOPIC_CHARS}")
    return cleaned


def root_cause(exc: BaseException) -> BaseException:
    """The agent's own exception behind Ray's wrapper, for a one-line message."""
    cause = getattr(exc, "cause", None)
    return cause if isinstance(cause, BaseException) else exc


def select_report(reports: list[AgentReport]) -> tuple[AgentReport, str]:
    """Skeleton rule: most distinct sources, then most findings, then lowest agent id."""
    best = max(reports, key=lambda r: (len({s.url for s in r.sources}), len(r.findings), -r.agent_id))
    reason = (f"agent {best.agent_id} cited the most distinct sources ({len(best.sources)}) "
              f"with {len(best.findings)} findings, among {len(reports)} successful reports")
    return best, reason


def preflight(topic: str, settings: Settings) -> str:
    """Check the topic and the search setup before any agent (or Ray) starts; returns the clean topic."""
    cleaned = validate_topic(topic)
    open_search(settings)
    return cleaned


def _run_agents(topic: str, settings: Settings, runtime: Runtime, events: EventSink, run_id: str,
                strategies: dict[int, AgentStrategy]) -> tuple[list[Outcome[Any]], CollectionStats | None]:
    """Start the NLP pool, the collector and the agents; wait for the agents; always clean up."""
    sink = runtime.event_sink(events)
    # The NLP pool holds the CPUs (one worker each); agents and the collector mostly wait on I/O.
    pool = NlpPool.start(runtime, settings.nlp_workers or max(1, int(runtime.total_cpus())))
    collector = runtime.spawn(Collector, settings, pool, num_cpus=0)
    handles: list[Any] = []
    try:
        calls = []
        for agent_id, strategy in strategies.items():
            handles.append(runtime.spawn(ResearchAgent, agent_id, strategy, settings, collector, sink, run_id,
                                         num_cpus=0))
            events.emit(AgentStarted(run_id=run_id, iteration=1, agent_id=agent_id, strategy=strategy.model_dump()))
            calls.append(runtime.call(handles[-1], "run", topic, 1))
        outcomes = runtime.gather(calls, timeout_s=settings.research_agent_timeout_s)
        for handle in handles:  # stop stragglers first, so no agent event follows the engine's
            runtime.kill(handle)
        runtime.flush_events()
        stats, _closed = runtime.gather([runtime.call(collector, "stats"), runtime.call(collector, "aclose")], 30)
        return outcomes, stats.value
    finally:
        for handle in [*handles, collector, *pool.workers]:
            runtime.kill(handle)


def run_research(topic: str, settings: Settings, runtime: Runtime, events: EventSink,
                 *, run_id: str | None = None) -> ResearchResult:
    topic = preflight(topic, settings)
    run_id = run_id or uuid.uuid4().hex[:12]
    started_at, started = datetime.now(UTC), time.perf_counter()
    config: dict[str, Any] = {
        "agentCount": settings.research_agents, "iterationCount": 1,
        "agentTimeoutMs": int(settings.research_agent_timeout_s * 1000),
        "searchConfig": {"provider": settings.search_provider,
                         "maxResultsPerAgent": settings.research_results_per_agent},
    }
    events.emit(ResearchStarted(run_id=run_id, topic=topic, config=config, progress=0))
    agent_ids = list(range(1, settings.research_agents + 1))
    strategies = {i: strategy_for(i) for i in agent_ids}
    started_agents = time.perf_counter()
    outcomes, collection = _run_agents(topic, settings, runtime, events, run_id, strategies)
    elapsed_ms = int((time.perf_counter() - started_agents) * 1000)
    reports: list[AgentReport] = []
    failures: list[AgentFailure] = []
    for i, outcome in zip(agent_ids, outcomes, strict=True):
        if isinstance(outcome.value, AgentReport):
            reports.append(outcome.value)
            events.emit(AgentCompleted(run_id=run_id, iteration=1, agent_id=i, success=True,
                                       duration_ms=outcome.value.duration_ms))
            continue
        cause = root_cause(outcome.error) if outcome.error else TimeoutError("timed out")
        message = first_line(cause)
        log.warning("agent %d failed after %d ms: %s", i, elapsed_ms, message)
        failures.append(AgentFailure(agent_id=i, error=message, timed_out=outcome.timed_out,
                                     error_type=type(cause).__name__))
        events.emit(AgentCompleted(run_id=run_id, iteration=1, agent_id=i, success=False,
                                   duration_ms=elapsed_ms, error=message))
    if not reports:
        first = failures[0].error if failures else "no agent ran"
        error = ResearchError(f"all {len(agent_ids)} research agents failed; first error: {first}")
        events.emit(ResearchFailed(run_id=run_id, error=str(error)))
        raise error
    selected, reason = select_report(reports)
    log.info("run %s: %s", run_id, reason)
    result = ResearchResult.build(
        run_id=run_id, topic=topic, config=config, started_at=started_at,
        duration_ms=int((time.perf_counter() - started) * 1000),
        selected=selected, reason=reason, reports=reports, failures=failures, collection=collection,
    )
    events.emit(ResearchCompleted(run_id=run_id, progress=100))
    return result
