"""Consensus research engine (KATASHIRO v1.2.0): iterations of N independent agents, scored, one kept.

Per iteration: N ResearchAgent actors run in parallel (all settle, like Promise.allSettled) on the
same :class:`IterationContext`. An agent's actor lives on into the next iteration (it keeps no
research state between runs; a new process costs seconds) unless it failed; then a fresh one
replaces it. Their reports are scored (research/consensus.py) and the best is the iteration's
consensus, which feeds the next iteration's context (research/iteration.py). One run shares one
Collector (each URL fetched and analysed once) and one NLP pool; agents share nothing else.

Failures (ERR-001/002): an agent that raises, dies or times out is recorded with its error, duration
and last stage (a timed-out agent is first cancelled, asked for its snapshot, then killed); the
iteration goes on with the others. When more than half fail, the iteration runs once more (failed
agents replaced); when that fails too, :class:`ResearchError` goes to the caller with every
completed iteration and every failure in ``partial``.

The engine talks to actors only through :class:`core.runtime.Runtime`: in-process in unit tests, Ray
actors everywhere else.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from actors.collection import CollectionStats
from actors.collector import Collector
from actors.nlp_pool import NlpPool
from core.errors import first_line
from core.events import Event, EventSink
from core.llm.cost import UsageMeter
from core.llm.factory import make_llm
from core.messages import Lang, catalogue
from core.runtime import Handle, Outcome, Runtime, current_node_id
from core.settings import Settings
from core.validation import clean_text
from nlp.conflicts import detect_conflicts
from nlp.settings import NlpSettings
from research.agent import ResearchAgent
from research.charts import chart_refs, drawable
from research.consensus import index_claims, score_iteration, sourced_claims, unconfirmed
from research.errors import ResearchError
from research.events import (
    AgentCompleted,
    AgentStarted,
    ConsensusSelected,
    IterationCompleted,
    IterationStarted,
    ResearchCompleted,
    ResearchFailed,
    ResearchStarted,
    ScoringCompleted,
    StageProgress,
)
from research.evidence import SourceDocument, build_evidence
from research.iteration import IterationContext, initial_context, next_context, should_stop_early
from research.labels import report_language
from research.llm_agent import combine_usage
from research.metrics import AGENT_FAILURES
from research.models import AgentReport, AgentSnapshot, SourceReference
from research.reliability import reliability_for
from research.report import dispute_labels, render_final_report
from research.result import (
    AgentFailure,
    ConsensusResearchConfig,
    ConsensusResearchResult,
    IterationResult,
    ResultMetadata,
    SearchConfig,
    source_overlap,
)
from research.settings import ResearchSettings
from research.strategies import strategy_for
from research.summary import write_summary
from research.superseded import superseded_claims
from scrapers.search.factory import open_search, uses_local_corpus
from scrapers.settings import SearchSettings

log = logging.getLogger(__name__)
MAX_TOPIC_CHARS = 500
SNAPSHOT_TIMEOUT_S = 2.0
RESEARCH_SHARE = 90.0  # progress % the iterations cover; the final report takes the rest
COLLECTOR_RESTARTS = 3  # its node may die; pages and analyses are in the store's caches
# An agent whose node dies starts again on another and runs its search again (it holds nothing else).
AGENT_RESTARTS = 1
SUMMARY_ROLE = "research.summary"  # LLM role of the executive summary (model/params: llm.models, llm.params)


def validate_topic(topic: str, what: str = "the research topic") -> str:
    """The topic as researched (core.validation.clean_text); an InputError names what is wrong."""
    return clean_text(
        topic, what, max_chars=MAX_TOPIC_CHARS, example='pass a topic, e.g. magi research "中小企業の価格転嫁"'
    )


def root_cause(exc: BaseException) -> BaseException:
    """The agent's own exception behind Ray's wrapper, for a one-line message."""
    cause = getattr(exc, "cause", None)
    return cause if isinstance(cause, BaseException) else exc


def preflight(topic: str, settings: Settings) -> str:
    """Check the topic and the search setup before any agent (or Ray) starts; returns the clean topic."""
    cleaned = validate_topic(topic)
    open_search(settings)
    return cleaned


def agent_name(run_id: str, iteration: int, agent_id: int, attempt: int = 1) -> str:
    """The Ray actor name of one agent run, e.g. ``research-3f2a-i1-a2-t1``."""
    return f"research-{run_id}-i{iteration}-a{agent_id}-t{attempt}"


def build_config(topic: str, research: ResearchSettings, search: SearchSettings) -> ConsensusResearchConfig:
    """The spec's config of a run, from the two sections that hold its options."""
    return ConsensusResearchConfig(
        topic=topic,
        agent_count=research.agents,
        iteration_count=research.iterations,
        agent_timeout_ms=int(research.agent_timeout_s * 1000),
        conflict_threshold=research.conflict_threshold,
        search_config=SearchConfig(provider=search.provider, max_results_per_agent=research.results_per_agent),
    )


class _StageTracker:
    """Passes events on and remembers each agent's last stage, for failure and timeout logs."""

    def __init__(self, sink: EventSink) -> None:
        self._sink = sink
        self.last: dict[tuple[int, int], str] = {}

    def emit(self, event: Event) -> None:
        if isinstance(event, StageProgress):
            self.last[(event.iteration, event.agent_id)] = f"{event.stage} {event.done}/{event.total}"
        self._sink.emit(event)


@dataclass
class _Attempt:
    reports: list[AgentReport] = field(default_factory=list)
    failures: list[AgentFailure] = field(default_factory=list)
    lost: BaseException | None = None  # an agent's process or node that died (a cluster fault, not the run's)


class _Run:
    """One research run: its actors, its iterations, and everything needed for the partial result."""

    def __init__(self, topic: str, settings: Settings, runtime: Runtime, events: EventSink, run_id: str) -> None:
        self.topic, self.settings, self.runtime, self.events, self.run_id = topic, settings, runtime, events, run_id
        research = ResearchSettings.of(settings)
        self.config = build_config(topic, research, SearchSettings.of(settings))
        self.agent_timeout_s = research.agent_timeout_s
        self.tracker = _StageTracker(events)
        self.iterations: list[IterationResult] = []
        self.failed_attempts: list[_Attempt] = []
        self.documents: dict[str, SourceDocument] = {}
        self.collector: Handle[Collector] | None = None
        self.agents: dict[int, Handle[ResearchAgent]] = {}
        self._agent_events: EventSink | None = None  # one event channel for all of the run's agents

    def agent_events(self) -> EventSink:
        """The sink the run's agents emit into: one for the run (on Ray each sink is a queue actor,
        i.e. a process to start; one per agent cost a process each on the run's critical path)."""
        if self._agent_events is None:
            self._agent_events = self.runtime.event_sink(self.tracker)
        return self._agent_events

    def progress(self, iteration: int, fraction: float) -> float:
        done = (iteration - 1 + fraction) / self.config.iteration_count
        return round(min(RESEARCH_SHARE, RESEARCH_SHARE * done), 1)

    # --- agents ---------------------------------------------------------------------------

    def _agent(self, agent_id: int, iteration: int, attempt: int) -> Handle[ResearchAgent]:
        """The agent's actor: kept across iterations (agents hold no research state between runs, and a
        new process costs seconds), replaced after it failed, timed out or died."""
        if agent_id not in self.agents:
            self.agents[agent_id] = self.runtime.spawn(
                ResearchAgent,
                agent_id,
                strategy_for(agent_id),
                self.settings,
                self.collector,
                self.agent_events(),
                self.run_id,
                num_cpus=0,
                max_concurrency=4,
                name=agent_name(self.run_id, iteration, agent_id, attempt),
                restarts=AGENT_RESTARTS,
            )
        return self.agents[agent_id]

    def retire(self, agent_ids: list[int]) -> None:
        for i in agent_ids:
            handle = self.agents.pop(i, None)
            if handle is not None:
                self.runtime.kill(handle)

    async def run_agents(self, context: IterationContext, attempt: int) -> _Attempt:
        """Run N agents, let all settle within the timeout, record each outcome; failed agents are retired."""
        ids = list(range(1, self.config.agent_count + 1))
        handles = {i: self._agent(i, context.iteration, attempt) for i in ids}
        started = time.perf_counter()
        outcomes: list[Outcome[Any]] = []
        try:
            calls = []
            for i in ids:
                self.events.emit(
                    AgentStarted(
                        run_id=self.run_id,
                        iteration=context.iteration,
                        agent_id=i,
                        strategy=strategy_for(i).model_dump(by_alias=True),
                        progress=self.progress(context.iteration, 0),
                    )
                )
                calls.append(handles[i].call(ResearchAgent.run, self.topic, context.brief(i, self.config.agent_count)))
            outcomes = await self.runtime.gather(calls, timeout_s=self.agent_timeout_s)
            elapsed_ms = int((time.perf_counter() - started) * 1000)
            snapshots = await self._snapshots(handles, outcomes)
        finally:  # stop stragglers before the engine emits its own events
            self.retire([i for i, o in zip(ids, outcomes, strict=False) if not o.ok] if outcomes else ids)
        await self.runtime.flush_events()
        result = _Attempt()
        for done, (i, outcome) in enumerate(zip(ids, outcomes, strict=True), start=1):
            fraction = 0.8 * done / len(ids)
            if isinstance(outcome.value, AgentReport):
                result.reports.append(outcome.value)
                self.events.emit(
                    AgentCompleted(
                        run_id=self.run_id,
                        iteration=context.iteration,
                        agent_id=i,
                        success=True,
                        duration_ms=outcome.value.duration_ms,
                        progress=self.progress(context.iteration, fraction),
                    )
                )
                continue
            failure = self._failure(i, context.iteration, attempt, outcome, elapsed_ms, snapshots.get(i))
            result.failures.append(failure)
            if outcome.error is not None and self.runtime.lost(outcome.error):
                result.lost = outcome.error
            self.events.emit(
                AgentCompleted(
                    run_id=self.run_id,
                    iteration=context.iteration,
                    agent_id=i,
                    success=False,
                    duration_ms=failure.duration_ms,
                    error=failure.error,
                    progress=self.progress(context.iteration, fraction),
                )
            )
        return result

    async def _snapshots(
        self, handles: dict[int, Handle[ResearchAgent]], outcomes: list[Outcome[AgentReport]]
    ) -> dict[int, AgentSnapshot]:
        """Ask each timed-out (already cancelled) agent how far it got, briefly."""
        late = [i for i, o in zip(handles, outcomes, strict=True) if o.timed_out]
        if not late:
            return {}
        answers = await self.runtime.gather([handles[i].call(ResearchAgent.snapshot) for i in late], SNAPSHOT_TIMEOUT_S)
        return {i: a.value for i, a in zip(late, answers, strict=True) if isinstance(a.value, AgentSnapshot)}

    def _failure(
        self,
        agent_id: int,
        iteration: int,
        attempt: int,
        outcome: Outcome[Any],
        elapsed_ms: int,
        snapshot: AgentSnapshot | None,
    ) -> AgentFailure:
        cause = root_cause(outcome.error) if outcome.error else TimeoutError("no result")
        stage = self.tracker.last.get((iteration, agent_id))
        if snapshot is not None:
            stage = f"{snapshot.stage} {snapshot.stage_done}/{snapshot.stage_total}"
        message = first_line(cause)
        AGENT_FAILURES.inc(stage=(stage or "starting").split()[0])
        if outcome.timed_out:
            message = f"timed out after {self.agent_timeout_s:g} s in stage {stage or 'starting'}"
        log.warning(
            "run %s iteration %d agent %d failed after %d ms (last stage: %s): %s",
            self.run_id,
            iteration,
            agent_id,
            elapsed_ms,
            stage or "none",
            message,
        )
        return AgentFailure(
            agent_id=agent_id,
            iteration=iteration,
            attempt=attempt,
            error=message,
            error_type=type(cause).__name__,
            timed_out=outcome.timed_out,
            duration_ms=elapsed_ms,
            last_stage=stage,
            partial=snapshot,
        )

    # --- iterations -----------------------------------------------------------------------

    async def run_iteration(self, context: IterationContext) -> IterationResult:
        started = time.perf_counter()
        self.events.emit(
            IterationStarted(
                run_id=self.run_id,
                iteration=context.iteration,
                context=context.model_dump(mode="json", by_alias=True),
                progress=self.progress(context.iteration, 0),
            )
        )
        attempt = await self.run_agents(context, 1)
        failures, retried = list(attempt.failures), False
        if self._majority_failed(attempt):
            self.failed_attempts.append(attempt)
            log.warning(
                "run %s iteration %d: %d of %d agents failed; retrying the iteration once",
                self.run_id,
                context.iteration,
                len(attempt.failures),
                self.config.agent_count,
            )
            retried, attempt = True, await self.run_agents(context, 2)
            failures += attempt.failures
            if self._majority_failed(attempt):
                self.failed_attempts.append(attempt)
                first = attempt.failures[0].error
                raise ResearchError(
                    f"iteration {context.iteration}: {len(attempt.failures)} of {self.config.agent_count} agents "
                    f"failed twice (first error: {first}); partial results are kept with the run",
                    partial=self.partial(),
                ) from attempt.lost  # a lost node shows in the chain: a batch job may run the topic again
        await self._read_documents(attempt.reports)
        reports = [self._with_reliability(r) for r in attempt.reports]
        # CPU-bound: off the event loop, which also serves progress events (and HTTP in a Serve replica).
        scoring = await asyncio.to_thread(
            score_iteration, self.topic, reports, self.documents, self.config.conflict_threshold
        )
        it = context.iteration
        self.events.emit(
            ScoringCompleted(
                run_id=self.run_id,
                iteration=it,
                progress=self.progress(it, 0.9),
                scores=[s.model_dump(mode="json", by_alias=True) for s in scoring.scores],
            )
        )
        self.events.emit(
            ConsensusSelected(
                run_id=self.run_id,
                iteration=it,
                reason=scoring.reason,
                selected_agent_id=scoring.selected.agent_id,
                progress=self.progress(it, 0.95),
            )
        )
        log.info("run %s iteration %d: %s", self.run_id, it, scoring.detail)
        duration_ms = int((time.perf_counter() - started) * 1000)
        self.events.emit(
            IterationCompleted(
                run_id=self.run_id,
                iteration=it,
                duration_ms=duration_ms,
                retried=retried,
                progress=self.progress(it, 1),
            )
        )
        return IterationResult(
            iteration=it,
            agent_reports=reports,
            scores=scoring.scores,
            consensus_report=scoring.selected.content,
            selection_reason=scoring.reason,
            duration_ms=duration_ms,
            selected_agent_id=scoring.selected.agent_id,
            selected_report_id=scoring.selected.report_id,
            context=context,
            agent_failures=failures,
            retried=retried,
            flagged_for_review=scoring.flagged_for_review,
            source_overlap=round(source_overlap(reports), 3),
        )

    def _with_reliability(self, report: AgentReport) -> AgentReport:
        """The report with each source's reliability score filled in (the spec's SourceReference field)."""
        sources = [self.documents[s.url].source if s.url in self.documents else s for s in report.sources]
        return report.model_copy(update={"sources": sources})

    def _majority_failed(self, attempt: _Attempt) -> bool:
        return not attempt.reports or len(attempt.failures) * 2 > self.config.agent_count

    async def _read_documents(self, reports: list[AgentReport]) -> None:
        """Fetch the text and claims of newly cited pages from the collector (already collected there),
        then bring every page's original up to date (:meth:`_refresh_originals`)."""
        refs = {s.url: s for r in reports for s in r.sources if s.url not in self.documents}
        assert self.collector is not None
        if refs:
            [outcome] = await self.runtime.gather([self.collector.call(Collector.read, list(refs))], 60)
            for url, item in (outcome.value or {}).items():
                if item.page is None or item.analysis is None:
                    continue
                ref = refs[url].model_copy(update={"duplicate_of": item.duplicate_of})
                ref = ref.model_copy(update={"reliability_score": round(reliability_for(ref), 3)})
                self.documents[url] = SourceDocument(source=ref, text=item.page.text, claims=item.analysis.claims)
        await self._refresh_originals()

    async def _refresh_originals(self) -> None:
        """Syndicated copies are found by their text (scrapers/near_duplicates.py) as pages arrive, and a
        copy read before its original looked like an original when it was read: ask the collector which
        page each one copies now, so that a copy and its original are one source in every count."""
        if not self.documents:
            return
        assert self.collector is not None
        [outcome] = await self.runtime.gather([self.collector.call(Collector.originals, sorted(self.documents))], 60)
        for url, original in (outcome.value or {}).items():
            doc = self.documents.get(url)
            if doc is not None and doc.source.duplicate_of != original:
                source = doc.source.model_copy(update={"duplicate_of": original})
                source = source.model_copy(update={"reliability_score": round(reliability_for(source), 3)})
                self.documents[url] = doc.model_copy(update={"source": source})

    def next_context(self, done: IterationResult) -> IterationContext:
        single = [f.key for f in unconfirmed(done.consensus, index_claims(self.documents)) if f.key]
        return next_context(
            self.topic,
            done.iteration + 1,
            done.consensus,
            done.consensus_score,
            sorted(self.documents),
            list(dict.fromkeys(single)),
        )

    def partial(self) -> dict[str, Any]:
        """Everything produced so far, JSON-ready (kept with a failed run for debugging)."""
        return {
            "runId": self.run_id,
            "topic": self.topic,
            "config": self.config.model_dump(mode="json", by_alias=True),
            "iterations": [it.model_dump(mode="json", by_alias=True) for it in self.iterations],
            "failedAttempts": [
                {
                    "reports": [r.model_dump(mode="json", by_alias=True) for r in a.reports],
                    "failures": [f.model_dump(mode="json", by_alias=True) for f in a.failures],
                }
                for a in self.failed_attempts
            ],
        }


def _stop_reason(consistencies: list[float], lang: Lang) -> str:
    """Why the run stopped before its last iteration, in the report's language."""
    steps = ", ".join(f"{c:.3f}" for c in consistencies[-3:])
    return catalogue("research").text("stop.flat", lang, steps=steps)


def start_pool(runtime: Runtime, nlp: NlpSettings) -> NlpPool:
    """The NLP pool of a run: ``nlp.workers`` workers, else one per CPU of the cluster."""
    return NlpPool.start(runtime, nlp.workers or max(1, int(runtime.total_cpus())))


async def run_research(
    topic: str,
    settings: Settings,
    runtime: Runtime,
    events: EventSink,
    *,
    run_id: str | None = None,
    pool: NlpPool | None = None,
) -> ConsensusResearchResult:
    """Run the whole workflow; raises :class:`ResearchError` (with ``partial``) when an iteration cannot finish.

    ``pool``: an NLP pool the caller keeps between runs (the Serve replica does): it is used and left
    running; without one the run starts its own and stops it at the end.
    """
    topic = await asyncio.to_thread(preflight, topic, settings)
    run = _Run(topic, settings, runtime, events, run_id or uuid.uuid4().hex[:12])
    started_at, started = datetime.now(UTC), time.perf_counter()
    events.emit(
        ResearchStarted(
            run_id=run.run_id, topic=topic, progress=0, config=run.config.model_dump(mode="json", by_alias=True)
        )
    )
    # The NLP pool holds the CPUs (one worker each); agents and the collector mostly wait on I/O.
    own_pool = pool is None
    if pool is None:
        pool = start_pool(runtime, NlpSettings.of(settings))
    # The collector reads the local corpus (for itself and for the agents' searches), so it runs on this
    # node, the one where the folder was named and checked; agents and NLP workers may go anywhere.
    here = current_node_id() if uses_local_corpus(SearchSettings.of(settings)) else None
    run.collector = collector = runtime.spawn(
        Collector, settings, pool, num_cpus=0, node_id=here, restarts=COLLECTOR_RESTARTS
    )
    stopped_early: str | None = None
    try:
        context = initial_context()
        while True:
            done = await run.run_iteration(context)
            run.iterations.append(done)
            consistencies = [it.consensus_score.consistency_score for it in run.iterations]
            if done.iteration >= run.config.iteration_count:
                break
            if should_stop_early(consistencies):
                stopped_early = _stop_reason(consistencies, report_language(run.topic))
                log.info("run %s: stopping after iteration %d: %s", run.run_id, done.iteration, stopped_early)
                break
            context = run.next_context(done)
        [stats] = await runtime.gather([collector.call(Collector.stats)], 30)
        await runtime.gather([collector.call(Collector.aclose)], 30)
        result = await _finish(run, started_at, started, stopped_early, stats.value)
    except ResearchError as exc:
        events.emit(ResearchFailed(run_id=run.run_id, error=str(exc)))
        raise
    except Exception as exc:
        error = ResearchError(f"research run failed: {first_line(exc, 300)}", partial=run.partial())
        events.emit(ResearchFailed(run_id=run.run_id, error=str(error)))
        raise error from exc
    finally:
        run.retire(list(run.agents))
        if own_pool:
            for worker in pool.workers:
                runtime.kill(worker)
        runtime.kill(collector)
        await runtime.flush_events()
    events.emit(
        ResearchCompleted(
            run_id=run.run_id,
            progress=100,
            iterations=len(result.iterations),
            overall_score=round(result.final_score.overall_score, 3),
            claims=len(result.claims),
            disputed=len(result.disputed),
        )
    )
    return result


async def _finish(
    run: _Run, started_at: datetime, started: float, stopped_early: str | None, collection: CollectionStats | None
) -> ConsensusResearchResult:
    """Claims with evidence, disputes, summary and the final report, from every iteration."""
    first_report: dict[str, str] = {}
    for it in run.iterations:
        for r in it.agent_reports:
            for s in r.sources:
                first_report.setdefault(s.url, r.report_id)
    claims_all = [
        c
        for url, doc in run.documents.items()
        for c in sourced_claims(first_report.get(url), [doc.source], run.documents)
    ]
    conflicts = await asyncio.to_thread(detect_conflicts, claims_all)
    findings = [(it.iteration, f) for it in run.iterations for f in it.consensus.findings]
    evidence, check = await asyncio.to_thread(build_evidence, findings, run.documents, conflicts, topic=run.topic)
    verified = [c for c in evidence if c.supporting]
    superseded = superseded_claims(verified, conflicts, run.documents)
    current = [c for c in verified if c.claim_id not in set(superseded)]  # what the summary may state as fact
    meter = UsageMeter()
    llm = make_llm(run.settings.llm, role=SUMMARY_ROLE, meter=meter)
    summary = await write_summary(run.topic, current, llm, lang=_lang(run.topic))
    last = run.iterations[-1]
    charts, chart_warning = drawable(chart_refs(verified, report_language(run.topic), conflicts), _lang(run.topic))
    result = ConsensusResearchResult(
        final_report="",
        iterations=run.iterations,
        total_duration_ms=int((time.perf_counter() - started) * 1000),
        total_agent_runs=sum(len(it.agent_reports) + len(it.agent_failures) for it in run.iterations),
        final_score=last.consensus_score,
        metadata=ResultMetadata(
            topic=run.topic, started_at=started_at, completed_at=datetime.now(UTC), config=run.config
        ),
        run_id=run.run_id,
        executive_summary=summary,
        claims=verified,
        superseded=superseded,
        disputed=conflicts,
        citation_check=check,
        sources=sorted((d.source for d in run.documents.values()), key=_source_order),
        stopped_early=stopped_early,
        collection=collection,
        usage=combine_usage(
            [*(r.llm_usage for it in run.iterations for r in it.agent_reports), meter.summary() if llm else None]
        ),
        charts=charts,
        warnings=[chart_warning] if chart_warning else [],
        llm_quotes_dropped=sum(r.quotes_dropped for it in run.iterations for r in it.agent_reports),
    )
    result.dispute_labels = dispute_labels(result)
    result.final_report = render_final_report(result)
    return result


def _source_order(s: SourceReference) -> tuple[float, str]:
    return (-(s.reliability_score or 0.0), s.url)


def _lang(topic: str) -> str:
    return report_language(topic)


__all__ = [
    "AGENT_RESTARTS",
    "COLLECTOR_RESTARTS",
    "MAX_TOPIC_CHARS",
    "RESEARCH_SHARE",
    "SNAPSHOT_TIMEOUT_S",
    "SUMMARY_ROLE",
    "agent_name",
    "build_config",
    "preflight",
    "root_cause",
    "run_research",
    "start_pool",
    "validate_topic",
]
