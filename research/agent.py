"""ResearchAgent: one independent research cycle, search -> collect (fetch, extract, analyse) -> report.

A plain class; engines make it a Ray actor where they spawn it. Agents keep no shared research
state: each searches with its own strategy and writes its own report. Fetching and analysis go
through the run's :class:`Collector`, which does each URL once however many agents ask for it.
A source that fails is recorded in the report and skipped.

From the second iteration on, the :class:`AgentBrief` adds focus queries (gaps, disputed figures) and
lists the sources read before, which rank after new ones so each iteration widens the evidence.
The agent keeps a :class:`AgentSnapshot` of how far it got; the engine reads it when the agent times
out, before it is killed.
"""

from __future__ import annotations

import logging
import math
import re
import time
import uuid
from collections import Counter, defaultdict
from datetime import UTC, datetime

from actors.collection import Collected
from actors.collector import Collector
from core.events import EventSink
from core.llm.base import LLMClient
from core.llm.cost import UsageMeter
from core.llm.factory import make_llm
from core.messages import catalogue
from core.runtime import Handle
from core.settings import Settings
from nlp.entities import Entity
from nlp.glossary import cross_language_query
from research.answering import PageToRank, select_findings
from research.events import StageProgress
from research.labels import report_language
from research.llm_agent import AGENT_ROLE, PageForReading, failure, plan, read_notes, write_report
from research.metrics import STAGE_SECONDS
from research.models import (
    AgentBrief,
    AgentReport,
    AgentSnapshot,
    AgentStrategy,
    EntityMention,
    Finding,
    SourceReference,
)
from research.question import parse_question
from research.retrieval import (
    PAGE_SHARE,
    PASSAGES_PER_PAGE,
    feedback_query,
    sub_questions,
)
from research.settings import ResearchSettings
from scrapers.errors import SearchError
from scrapers.search import SearchProvider, SearchResult
from scrapers.search.factory import open_search, uses_local_corpus
from scrapers.settings import SearchSettings

MAX_FINDINGS, MAX_FINDINGS_PER_SOURCE = 15, 3
PREFERRED_BONUS, COVERED_PENALTY = 0.5, 0.6  # ranking: preferred source types up, already-read sources down
MAX_FOCUS_QUERIES = 4
MAX_LLM_PAGES = 6  # pages whose best passages the model reads for notes
SIDE_QUERY_WEIGHT = 0.5  # hits of modifier, focus and cross-language queries count half an own sub-question's

log = logging.getLogger(__name__)


class CollectorSearch:
    """Search through the run's collector: a local corpus is read on the collector's node, which has the
    folder, while this agent may run on any node of the cluster."""

    name = "local"

    def __init__(self, collector: Handle[Collector]) -> None:
        self._collector = collector

    async def search(
        self,
        query: str,
        *,
        max_results: int = 10,
        time_range: str | None = None,
        region: str | None = None,
    ) -> list[SearchResult]:
        return await self._collector.call(Collector.search, query, max_results=max_results, time_range=time_range)


class ResearchAgent:
    def __init__(
        self,
        agent_id: int,
        strategy: AgentStrategy,
        settings: Settings,
        collector: Handle[Collector],
        events: EventSink | None = None,
        run_id: str = "",
    ) -> None:
        self.agent_id = agent_id
        self.strategy = strategy
        self.settings = settings
        self._collector = collector
        self._events = events
        self._run_id = run_id
        self._started = time.perf_counter()
        self._snapshot = AgentSnapshot(agent_id=agent_id, iteration=1)
        self._stage_started = self._started
        self._decisions: list[str] = []  # why it searched and kept what it did, for the transparency report

    def _progress(self, stage: str, done: int, total: int) -> None:
        if done == 0 or stage != self._snapshot.stage:
            self._stage_started = time.perf_counter()
        elif done >= total:
            STAGE_SECONDS.observe(time.perf_counter() - self._stage_started, stage=stage)
        self._snapshot.stage, self._snapshot.stage_done, self._snapshot.stage_total = stage, done, total
        if self._events is not None:
            self._events.emit(
                StageProgress(
                    run_id=self._run_id,
                    iteration=self._snapshot.iteration,
                    agent_id=self.agent_id,
                    stage=stage,
                    done=done,
                    total=total,
                )
            )

    def snapshot(self) -> AgentSnapshot:
        """Where the agent is now (the engine asks a timed-out agent before killing it)."""
        elapsed = int((time.perf_counter() - self._started) * 1000)
        return self._snapshot.model_copy(update={"elapsed_ms": elapsed})

    async def run(self, topic: str, brief: AgentBrief | None = None) -> AgentReport:
        brief = brief or AgentBrief()
        self._snapshot = AgentSnapshot(agent_id=self.agent_id, iteration=brief.iteration)
        self._decisions = []
        started = self._started = time.perf_counter()
        log.info("agent %d starts iteration %d of run %s", self.agent_id, brief.iteration, self._run_id)
        meter = UsageMeter()
        llm = make_llm(self.settings.llm, role=AGENT_ROLE, meter=meter)
        planned: list[str] = []
        if llm is not None:
            try:
                planned = await plan(llm, topic, self.strategy.reading)
            except Exception as exc:  # a failed model call never fails the agent: it reads offline
                self._decisions.append(failure("planning", exc, report_language(topic)))
        queries = self._snapshot.queries = list(dict.fromkeys([*self.queries(topic, brief), *planned]))
        self._progress("search", 0, 1)
        provider = (
            CollectorSearch(self._collector)
            if uses_local_corpus(SearchSettings.of(self.settings))
            else open_search(self.settings).provider
        )
        results = await self._search(provider, topic, queries, set(brief.covered_sources))
        self._snapshot.urls = [r.url for r in results]
        self._progress("search", 1, 1)
        self._progress("fetch", 0, len(results))
        collected: list[Collected] = await self._collector.call(
            Collector.collect, [r.url for r in results], {r.url: r.lang for r in results if r.lang}
        )
        self._progress("entities", len(results), len(results))
        failures = [c.failure for c in collected if c.failure is not None]
        usable = [c for c in collected if c.page is not None and c.analysis is not None]
        if not usable:
            raise SearchError(f"agent {self.agent_id}: none of the {len(results)} search results could be read")
        self._progress("report", 0, 1)
        by_url = {r.url: r for r in results}
        sources = [_source(c, by_url[c.url]) for c in usable]
        findings = self._findings(topic, usable, by_url, brief)
        mentions = _mentions(usable)
        content = render_agent_report(topic, self.strategy, findings, mentions, sources)
        dropped = 0
        if llm is not None:
            findings, dropped, written = await self._with_llm(llm, topic, usable, findings, sources)
            content = written or render_agent_report(topic, self.strategy, findings, mentions, sources)
        report = AgentReport(
            agent_id=self.agent_id,
            report_id=str(uuid.uuid4()),
            strategy=self.strategy,
            content=content,
            llm_usage=meter.summary() if llm is not None else None,
            quotes_dropped=dropped,
            sources=sources,
            generated_at=datetime.now(UTC),
            duration_ms=int((time.perf_counter() - started) * 1000),
            queries=queries,
            findings=findings,
            entities=mentions,
            failures=failures,
            decisions=self._decisions,
        )
        self._progress("report", 1, 1)
        return report

    def queries(self, topic: str, brief: AgentBrief) -> list[str]:
        """The agent's sub-questions (research/retrieval.py: the question, its rarest terms, or the question
        to expand from feedback), then one query per strategy modifier in iteration 1 (the first modifier
        later: the agent's angle) and the brief's focus queries. A cross-language query (glossary-built)
        joins from iteration 1 for cross-language strategies."""
        modifiers = self.strategy.query_modifiers if brief.iteration == 1 else self.strategy.query_modifiers[:1]
        focus = [f"{topic} {q}" for q in brief.focus_queries[:MAX_FOCUS_QUERIES]]
        other = None
        if self.strategy.cross_language or brief.iteration > 1:
            other = cross_language_query(topic, "en" if topic.isascii() else "ja")
        own = sub_questions(topic, self.strategy.reading)
        return list(
            dict.fromkeys([*own, topic, *focus, *(f"{topic} {m}" for m in modifiers), *([other] if other else [])])
        )

    async def _search(
        self, provider: SearchProvider, topic: str, queries: list[str], covered: set[str]
    ) -> list[SearchResult]:
        """Each query's hits merged by URL: higher ranks, the agent's own sub-questions, preferred source
        types and unread sources first. The agent reads its reading's share of the page budget."""
        budget = ResearchSettings.of(self.settings).results_per_agent
        reading = self.strategy.reading
        own = set(sub_questions(topic, reading))
        time_range = None if self.strategy.time_range == "all" else self.strategy.time_range
        best: dict[str, tuple[float, SearchResult]] = {}
        widened = 0
        expanded: str | None = None
        for query in queries:
            hits = await provider.search(query, max_results=budget, time_range=time_range)
            if time_range and len(hits) < budget // 2:  # too narrow: widen rather than starve
                widened += 1
                hits += await provider.search(query, max_results=budget)
            weight = 1.0 if query in own else SIDE_QUERY_WEIGHT
            if reading == "feedback" and query == topic and expanded is None:
                expanded = feedback_query(topic, hits)
                if expanded:  # the expanded question leads: its hits replace the question's own ranks
                    hits = await provider.search(expanded, max_results=budget) or hits
            self._merge(best, hits, weight, covered)
        if not best:
            name = SearchSettings.of(self.settings).provider
            raise SearchError(f"no search results for {topic!r} from provider {name}")
        ranked = [hit for _, hit in sorted(best.values(), key=lambda pair: -pair[0])]
        # the reading's share of the budget, or of what the search found when that is less (a small
        # manual): agents then still read different pages
        wanted = max(2, math.ceil(min(budget, len(ranked)) * PAGE_SHARE[reading]))
        if reading == "keywords" and len(ranked) > wanted:
            # breadth: past the first few, take every other hit, so this agent reaches further down the list
            head = max(1, wanted // 3)
            ranked = ranked[:head] + ranked[head::2] + ranked[head + 1 :: 2]
        chosen = ranked[:wanted]
        preferred = self.strategy.preferred_sources
        lang, c = report_language(topic), catalogue("research")
        types = "、".join(c.text(f"source.{t}", lang) for t in preferred) if lang == "ja" else ", ".join(preferred)
        self._decisions += [
            c.text(
                "decision.searched",
                lang,
                reading=c.text(f"reading.name.{reading}", lang),
                queries=len(queries),
                own=len(own),
                expansion=c.text("decision.expansion", lang, terms=expanded) if expanded else "",
                found=len(ranked),
                kept=len(chosen),
                budget=budget,
            ),
            c.text(
                "decision.preferred",
                lang,
                n=sum(h.source_type in preferred for h in chosen),
                types=types or c.text("decision.no_types", lang),
                bonus=PREFERRED_BONUS,
            ),
        ]
        if covered:
            self._decisions.append(
                c.text(
                    "decision.covered",
                    lang,
                    n=sum(h.url in covered for h in ranked),
                    penalty=COVERED_PENALTY,
                    kept=sum(h.url in covered for h in chosen),
                )
            )
        if widened:
            self._decisions.append(
                c.text("decision.widened", lang, range=c.text(f"range.{self.strategy.time_range}", lang), n=widened)
            )
        return chosen

    def _merge(
        self, best: dict[str, tuple[float, SearchResult]], hits: list[SearchResult], weight: float, covered: set[str]
    ) -> None:
        for hit in hits:
            score = (
                weight / hit.rank
                + (PREFERRED_BONUS if hit.source_type in self.strategy.preferred_sources else 0)
                - (COVERED_PENALTY if hit.url in covered else 0)
            )
            if hit.url not in best or best[hit.url][0] < score:
                best[hit.url] = (score, hit)

    async def _with_llm(
        self,
        llm: LLMClient,
        topic: str,
        usable: list[Collected],
        findings: list[Finding],
        sources: list[SourceReference],
    ) -> tuple[list[Finding], int, str | None]:
        """The model's verified notes lead the findings; its report replaces the rendered one when valid."""
        by_page: dict[str, list[Finding]] = defaultdict(list)
        for f in findings:
            by_page[f.source].append(f)
        pages = [
            PageForReading(url=c.url, title=c.page.title, text=c.page.text, passages=[f.text for f in by_page[c.url]])
            for c in usable
            if c.page is not None and by_page[c.url]
        ][:MAX_LLM_PAGES]
        dropped = 0
        try:
            notes = await read_notes(llm, topic, pages)
        except Exception as exc:  # a failed model call never fails the agent: it reads offline
            self._decisions.append(failure("reading", exc, report_language(topic)))
            return findings, 0, None
        dropped = notes.dropped
        noted = [
            Finding(
                text=note.quote,
                source=url,
                entities=[],
                score=2.0,
                key=None,
                values=[note.figure] if note.figure else [],
            )
            for note, url in notes.kept
        ]
        seen = {f.text for f in noted}
        merged = (noted + [f for f in findings if f.text not in seen])[:MAX_FINDINGS]
        self._decisions.append(
            catalogue("research").text(
                "decision.llm_notes",
                report_language(topic),
                kept=len(notes.kept),
                dropped=dropped,
                reasons=f": {'; '.join(notes.reasons[:3])}" if notes.reasons else "",
            )
        )
        number = {s.url: i for i, s in enumerate(sources, start=1)}
        quoted: dict[str, list[str]] = defaultdict(list)
        for f in merged:
            quoted[f.source].append(f.text)
        cited = [(s.title, quoted[s.url]) for s in sources if quoted[s.url]]
        renumber = [number[s.url] for s in sources if quoted[s.url]]
        try:
            written = await write_report(llm, topic, cited)
        except Exception as exc:
            self._decisions.append(failure("report_writing", exc, report_language(topic)))
            return merged, dropped, None
        if written is None:
            self._decisions.append(catalogue("research").text("decision.llm_cited", report_language(topic)))
            return merged, dropped, None
        # the model numbered the cited sources 1..n; the report lists every source, so map back
        text = re.sub(r"\[(\d+)\]", lambda m: f"[{renumber[int(m.group(1)) - 1]}]", written)
        listing = "\n".join(f"{i}. [{s.title}]({s.url})" for i, s in enumerate(sources, start=1))
        return merged, dropped, f"# {topic}\n\n{text}\n## Sources\n\n{listing}\n"

    def _findings(
        self, topic: str, usable: list[Collected], by_url: dict[str, SearchResult], brief: AgentBrief | None = None
    ) -> list[Finding]:
        """The sentences that best answer the question (research/answering.py), at most a few per page
        (the reading decides how many), preferred source types and new findings first."""
        brief = brief or AgentBrief()
        reading = self.strategy.reading
        known = set(brief.known_findings)
        queries = list(dict.fromkeys([topic, *sub_questions(topic, reading), *brief.focus_queries]))
        pages = [
            PageToRank(url=item.url, title=item.page.title, text=item.page.text, claims=item.analysis.claims)
            for item in usable
            if item.page is not None and item.analysis is not None
        ]
        preferred = [u for u, hit in by_url.items() if hit.source_type in self.strategy.preferred_sources]
        per_page = PASSAGES_PER_PAGE[reading]
        findings, candidates = select_findings(
            parse_question(topic),
            pages,
            queries,
            preferred=preferred,
            known=sorted(known),
            per_page=per_page,
            limit=MAX_FINDINGS,
        )
        new = sum(1 for f in findings if f.text not in known)
        self._decisions.append(
            catalogue("research").text(
                "decision.candidates",
                report_language(topic),
                candidates=candidates,
                pages=len(usable),
                queries=len(queries),
                kept=len(findings),
                per_page=per_page,
                new=new,
            )
        )
        return findings


def _source(item: Collected, hit: SearchResult) -> SourceReference:
    assert item.page is not None
    return SourceReference(
        url=item.url,
        title=item.page.title,
        fetched_at=datetime.now(UTC),
        source_type=hit.source_type,
        lang=item.page.lang,
        published=item.page.published or (str(hit.published) if hit.published else None),
        duplicate_of=item.duplicate_of,
    )


def _mentions(usable: list[Collected]) -> list[EntityMention]:
    counts: Counter[tuple[str, str, str]] = Counter()
    sources: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    for item in usable:
        entities: list[Entity] = item.analysis.entities if item.analysis else []
        for e in entities:
            key = (e.text, e.label, e.lang)
            counts[key] += 1
            sources[key].add(item.url)
    return [
        EntityMention(text=t, label=label, lang=lang, count=n, sources=sorted(sources[(t, label, lang)]))
        for (t, label, lang), n in counts.most_common()
    ]


def render_agent_report(
    topic: str,
    strategy: AgentStrategy,
    findings: list[Finding],
    mentions: list[EntityMention],
    sources: list[SourceReference],
) -> str:
    """The agent's report in Markdown, findings cited by source number."""
    number = {s.url: i for i, s in enumerate(sources, start=1)}
    lines = [
        f"# {topic}",
        "",
        f"Agent {strategy.agent_id} — {strategy.focus or 'general research'}",
        "",
        "## Key findings",
        "",
    ]
    lines += [f"- {f.text} [{number[f.source]}]" for f in findings] or ["- (no fact-bearing sentences found)"]
    lines += ["", "## Entities", ""]
    by_label: dict[str, list[str]] = defaultdict(list)
    for m in mentions:
        if len(by_label[m.label]) < 12:
            by_label[m.label].append(m.text)
    lines += [f"- **{label}**: {', '.join(names)}" for label, names in sorted(by_label.items())]
    lines += ["", "## Sources", ""]
    lines += [
        f"{number[s.url]}. [{s.title}]({s.url}) — {s.source_type or 'unknown type'}"
        + (f", {s.published}" if s.published else "")
        for s in sources
    ]
    return "\n".join(lines) + "\n"


__all__ = [
    "MAX_FOCUS_QUERIES",
    "CollectorSearch",
    "ResearchAgent",
    "render_agent_report",
]
