"""ResearchAgent: one independent research cycle, search -> fetch -> extract -> entities -> report.

A plain class; engines make it a Ray actor where they spawn it. Agents share nothing: each has
its own search provider, fetcher and NLP pipelines, so one failing cannot disturb another.
A source that fails to fetch or extract is recorded in the report and skipped.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter, defaultdict
from datetime import UTC, datetime

from core.errors import ExtractionError, FetchError, SearchError
from core.events import EventSink, StageProgress
from core.models import AgentReport, AgentStrategy, EntityMention, Finding, SourceFailure, SourceReference
from core.settings import Settings
from nlp.entities import Entity, extract_entities_batch
from nlp.findings import is_fact_bearing, relevance, split_sentences, topic_terms
from nlp.language import detect_language
from scrapers.extract import ExtractedPage, extract_page
from scrapers.fetch import Fetcher
from scrapers.search import SearchProvider, SearchResult
from scrapers.search.factory import open_search

STAGES = ("search", "fetch", "extract", "entities", "report")
MAX_ENTITY_CHARS = 4000  # per page: enough for the lead facts, bounded GiNZA cost
MAX_FINDINGS, MAX_FINDINGS_PER_SOURCE = 15, 3
FETCH_CONCURRENCY = 8


class ResearchAgent:
    def __init__(self, agent_id: int, strategy: AgentStrategy, settings: Settings,
                 events: EventSink | None = None, run_id: str = "") -> None:
        self.agent_id = agent_id
        self.strategy = strategy
        self.settings = settings
        self._events = events
        self._run_id = run_id
        self._iteration = 1
        self.last_stage = "created"

    def _progress(self, stage: str, done: int, total: int) -> None:
        self.last_stage = stage
        if self._events is not None:
            self._events.emit(StageProgress(run_id=self._run_id, iteration=self._iteration,
                                            agent_id=self.agent_id, stage=stage, done=done, total=total))

    async def run(self, topic: str, iteration: int = 1) -> AgentReport:
        self._iteration = iteration
        started = time.perf_counter()
        search = open_search(self.settings)
        failures: list[SourceFailure] = []
        self._progress("search", 0, 1)
        results, queries = await self._search(search.provider, topic)
        self._progress("search", 1, 1)
        fetcher = Fetcher(local=search.resolver)
        try:
            pages = await self._fetch_and_extract(fetcher, results, failures)
        finally:
            await fetcher.aclose()
        if not pages:
            raise SearchError(f"agent {self.agent_id}: none of the {len(results)} search results could be read")
        entities = self._entities(pages)
        self._progress("report", 0, 1)
        by_url = {r.url: r for r in results}
        sources = [
            SourceReference(url=p.url, title=p.title, fetched_at=datetime.now(UTC),
                            source_type=by_url[p.url].source_type, lang=p.lang,
                            published=p.published or (str(by_url[p.url].published or "") or None))
            for p in pages
        ]
        findings = self._findings(topic, pages, entities, by_url)
        mentions = _mentions(pages, entities)
        report = AgentReport(
            agent_id=self.agent_id, report_id=str(uuid.uuid4()), strategy=self.strategy,
            content=render_agent_report(topic, self.strategy, findings, mentions, sources),
            sources=sources, generated_at=datetime.now(UTC),
            duration_ms=int((time.perf_counter() - started) * 1000),
            queries=queries, findings=findings, entities=mentions, failures=failures,
        )
        self._progress("report", 1, 1)
        return report

    async def _search(self, provider: SearchProvider, topic: str) -> tuple[list[SearchResult], list[str]]:
        """One query per modifier plus the bare topic; merged by URL, preferred source types first."""
        wanted = self.settings.research_results_per_agent
        queries = [topic] + [f"{topic} {m}" for m in self.strategy.query_modifiers]
        time_range = None if self.strategy.time_range == "all" else self.strategy.time_range
        best: dict[str, tuple[float, SearchResult]] = {}
        for query in queries:
            hits = await provider.search(query, max_results=wanted, time_range=time_range)
            if time_range and len(hits) < wanted // 2:  # too narrow: widen rather than starve
                hits += await provider.search(query, max_results=wanted)
            for hit in hits:
                score = 1.0 / hit.rank + (0.5 if hit.source_type in self.strategy.preferred_sources else 0.0)
                if hit.url not in best or best[hit.url][0] < score:
                    best[hit.url] = (score, hit)
        if not best:
            raise SearchError(f"no search results for {topic!r} from provider {self.settings.search_provider}")
        ranked = sorted(best.values(), key=lambda pair: -pair[0])
        return [hit for _, hit in ranked[:wanted]], queries

    async def _fetch_and_extract(self, fetcher: Fetcher, results: list[SearchResult],
                                 failures: list[SourceFailure]) -> list[ExtractedPage]:
        gate = asyncio.Semaphore(FETCH_CONCURRENCY)
        done = 0

        async def one(result: SearchResult) -> ExtractedPage | None:
            nonlocal done
            async with gate:
                try:
                    page = await fetcher.fetch(result.url)
                except FetchError as exc:
                    failures.append(SourceFailure(url=result.url, stage="fetch", kind=exc.kind, message=str(exc)))
                    return None
                finally:
                    done += 1
                    self._progress("fetch", done, len(results))
            try:
                extracted = extract_page(page.content, url=result.url, content_type=page.content_type)
            except ExtractionError as exc:
                failures.append(SourceFailure(url=result.url, stage="extract", kind="no_text", message=str(exc)))
                return None
            if extracted.lang is None:
                extracted.lang = result.lang or detect_language(extracted.text)
            return extracted

        pages = await asyncio.gather(*(one(r) for r in results))
        self._progress("extract", len(results), len(results))
        return [p for p in pages if p is not None]

    def _entities(self, pages: list[ExtractedPage]) -> list[list[Entity]]:
        """Entities per page, one batched pipeline call per language."""
        out: list[list[Entity]] = [[] for _ in pages]
        by_lang: dict[str, list[int]] = defaultdict(list)
        for i, page in enumerate(pages):
            by_lang[page.lang if page.lang in ("ja", "en") else detect_language(page.text)].append(i)
        done = 0
        for lang, indexes in by_lang.items():
            if lang not in ("ja", "en"):
                continue
            texts = [pages[i].text[:MAX_ENTITY_CHARS] for i in indexes]
            for i, ents in zip(indexes, extract_entities_batch(texts, lang=lang), strict=True):
                out[i] = ents
            done += len(indexes)
            self._progress("entities", done, len(pages))
        return out

    def _findings(self, topic: str, pages: list[ExtractedPage], entities: list[list[Entity]],
                  by_url: dict[str, SearchResult]) -> list[Finding]:
        terms = topic_terms(topic)
        candidates: list[Finding] = []
        for page, ents in zip(pages, entities, strict=True):
            preferred = by_url[page.url].source_type in self.strategy.preferred_sources
            for sentence in split_sentences(page.text[:MAX_ENTITY_CHARS]):
                inside = [e.text for e in ents if e.start >= sentence.start and e.end <= sentence.end]
                if not is_fact_bearing(sentence.text, len(inside)):
                    continue
                score = relevance(sentence.text, terms) + 0.05 * min(len(inside), 4) + (0.2 if preferred else 0)
                candidates.append(Finding(text=sentence.text, source=page.url, entities=inside, score=score))
        candidates.sort(key=lambda f: -f.score)
        per_source: Counter[str] = Counter()
        findings: list[Finding] = []
        for finding in candidates:
            if per_source[finding.source] < MAX_FINDINGS_PER_SOURCE:
                per_source[finding.source] += 1
                findings.append(finding)
            if len(findings) == MAX_FINDINGS:
                break
        return findings


def _mentions(pages: list[ExtractedPage], entities: list[list[Entity]]) -> list[EntityMention]:
    counts: Counter[tuple[str, str, str]] = Counter()
    sources: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    for page, ents in zip(pages, entities, strict=True):
        for e in ents:
            key = (e.text, e.label, e.lang)
            counts[key] += 1
            sources[key].add(page.url)
    return [
        EntityMention(text=t, label=label, lang=lang, count=n, sources=sorted(sources[(t, label, lang)]))
        for (t, label, lang), n in counts.most_common()
    ]


def render_agent_report(topic: str, strategy: AgentStrategy, findings: list[Finding],
                        mentions: list[EntityMention], sources: list[SourceReference]) -> str:
    """The agent's report in Markdown, findings cited by source number."""
    number = {s.url: i for i, s in enumerate(sources, start=1)}
    lines = [f"# {topic}", "", f"Agent {strategy.agent_id} — {strategy.focus or 'general research'}", "",
             "## Key findings", ""]
    lines += [f"- {f.text} [{number[f.source]}]" for f in findings] or ["- (no fact-bearing sentences found)"]
    lines += ["", "## Entities", ""]
    by_label: dict[str, list[str]] = defaultdict(list)
    for m in mentions:
        if len(by_label[m.label]) < 12:
            by_label[m.label].append(m.text)
    lines += [f"- **{label}**: {', '.join(names)}" for label, names in sorted(by_label.items())]
    lines += ["", "## Sources", ""]
    lines += [f"{number[s.url]}. [{s.title}]({s.url}) — {s.source_type or 'unknown type'}"
              + (f", {s.published}" if s.published else "") for s in sources]
    return "\n".join(lines) + "\n"
