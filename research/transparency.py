"""The transparency report (KATASHIRO OBS-002), as JSON for machines and Markdown for people.

It explains the run rather than its topic: what each agent was asked and did (queries, sources,
failures), how every report was scored (the arithmetic), why each consensus was chosen, which
sources back each claim, which citations were dropped, and how each conflict was read.

The Markdown is for a person: written in the report's language (the topic's) from the research
catalogue (data/research/messages.yaml), agents named by number and sources by the numbers of its own
source list; report and claim ids, the score arithmetic over facet keys and the English resolutions stay
in the JSON, which machines read.
"""

from __future__ import annotations

import json
import re
from typing import Any

from core.messages import Lang, catalogue, format_number
from research.labels import period_label, report_language, series_label
from research.models import AgentStrategy
from research.report import Labels, SourceNumbers, reading_text
from research.result import ConsensusResearchResult, IterationResult


def transparency_data(result: ConsensusResearchResult) -> dict[str, Any]:
    iterations = []
    for it in result.iterations:
        agents = [
            {
                "agentId": r.agent_id,
                "reportId": r.report_id,
                "focus": r.strategy.focus,
                "queries": r.queries,
                "decisions": r.decisions,
                "sources": [s.url for s in r.sources],
                "findings": len(r.findings),
                "failedSources": [f.model_dump(by_alias=True) for f in r.failures],
                "durationMs": r.duration_ms,
            }
            for r in it.agent_reports
        ]
        iterations.append(
            {
                "iteration": it.iteration,
                "context": {
                    "unresolvedQuestions": it.context.unresolved_questions,
                    "areasToDeepen": it.context.areas_to_deepen,
                    "focusQueries": it.context.focus_queries,
                    "coveredSources": len(it.context.covered_sources),
                },
                "agents": agents,
                "agentFailures": [f.model_dump(mode="json", by_alias=True) for f in it.agent_failures],
                "scores": [
                    {
                        "reportId": s.report_id,
                        "consistency": s.consistency_score,
                        "reliability": s.source_reliability_score,
                        "coverage": s.coverage_score,
                        "overall": s.overall_score,
                        "conflicts": len(s.conflicts),
                        "unverified": s.unverified_count,
                        "arithmetic": s.arithmetic,
                    }
                    for s in it.scores
                ],
                "selectedAgentId": it.selected_agent_id,
                "selectionReason": it.selection_reason,
                "retried": it.retried,
                "flaggedForReview": it.flagged_for_review,
                "sourceOverlap": it.source_overlap,
                "durationMs": it.duration_ms,
            }
        )
    return {
        "runId": result.run_id,
        "topic": result.metadata.topic,
        "config": result.metadata.config.model_dump(by_alias=True),
        "iterations": iterations,
        "stoppedEarly": result.stopped_early,
        "claims": [
            {
                "claimId": c.claim_id,
                "text": c.text,
                "confidence": c.confidence,
                "confidenceArithmetic": c.confidence_arithmetic,
                "supporting": [s.url for s in c.supporting],
                "contradicting": [s.url for s in c.contradicting],
                "independentOrigins": c.independent_origins,
            }
            for c in result.claims
        ],
        "conflictResolutions": [
            {
                "conflictId": d.conflict_id,
                "type": d.type,
                "key": d.statement2.key,
                "statement1": {"value": d.statement1.value, "source": d.statement1.source},
                "statement2": {"value": d.statement2.value, "source": d.statement2.source},
                "severity": d.severity,
                "confidence": d.confidence,
                "resolution": d.resolution,
                "status": "unresolved: both sides shown in the report",
            }
            for d in result.disputed
        ],
        "citationCheck": result.citation_check.model_dump(by_alias=True),
        "summary": {
            "writtenBy": result.executive_summary.written_by,
            "sentencesKept": result.executive_summary.sentences_kept,
            "sentencesRemoved": result.executive_summary.sentences_removed,
            "note": result.executive_summary.note,
        },
    }


def transparency_json(result: ConsensusResearchResult) -> str:
    return json.dumps(transparency_data(result), ensure_ascii=False, indent=2)


_ARITHMETIC_TERMS = (  # longest first, so that "support share" is not read as "support" + "share"
    ("no verified supporting source", "arith.no_support"),
    ("read in the manual's own entry", "arith.reference_entry"),
    ("support share", "arith.support_share"),
    ("agreement", "arith.agreement"),
    ("reliability", "arith.reliability"),
    ("recency", "arith.recency"),
)
_DROP_REASONS = (
    (re.compile(r"^value (?P<figures>.+) not in the page text$"), "drop.value"),
    (re.compile(r"^sentence not in the page text$"), "drop.sentence"),
    (re.compile(r"^page not among the documents read$"), "drop.page"),
)


def confidence_words(arithmetic: str, lang: Lang) -> str:
    """A claim's confidence arithmetic (research/evidence.py writes it in English) in ``lang``, term by term."""
    if lang == "en":
        return arithmetic
    c = catalogue("research")
    for term, key in _ARITHMETIC_TERMS:
        arithmetic = arithmetic.replace(term, c.text(key, lang))
    return arithmetic


def drop_words(reason: str, lang: Lang) -> str:
    """Why a citation was dropped (research/evidence.py's reasons, joined by "; ") in ``lang``."""
    if lang == "en":
        return reason
    c, parts = catalogue("research"), []
    for part in reason.split("; "):
        found = next(((m, key) for pattern, key in _DROP_REASONS if (m := pattern.match(part))), None)
        parts.append(c.text(found[1], lang, **found[0].groupdict()) if found else part)
    return "、".join(parts)


def _seconds(ms: int, lang: Lang) -> str:
    return format_number(ms / 1000, lang, 1)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _reading(strategy: AgentStrategy, t: Labels) -> str:
    """How an agent read, from its strategy's data: the reading's name and the source types it prefers."""
    reading = t(f"reading.name.{strategy.reading}")
    if not strategy.preferred_sources:
        return reading
    types = t("charts.separator").join(t(f"source.{kind}") for kind in strategy.preferred_sources)
    return t("tr.reading_with_types", reading=reading, types=types)


def transparency_markdown(result: ConsensusResearchResult) -> str:
    """The transparency report for people, in the report's language: agents by number, sources by the
    numbers of its own source list, no report or claim ids (transparency.json keeps them for machines)."""
    lang = report_language(result.metadata.topic)
    t = Labels(lang)
    refs = SourceNumbers(result.sources, lang)
    meta = result.metadata
    lines = [
        t("tr.title", topic=meta.topic),
        "",
        t("tr.intro", started=f"{meta.started_at:%Y-%m-%d %H:%M:%S}", seconds=_seconds(result.total_duration_ms, lang)),
        "",
    ]
    for it in result.iterations:
        lines += _iteration(it, t, lang)
    if result.stopped_early:
        lines += [t("tr.stopped", why=result.stopped_early), ""]
    lines += [t("tr.claims"), ""]
    none = t("tr.none")
    for c in result.claims:
        lines.append(
            t(
                "tr.claim",
                text=c.text,
                arithmetic=confidence_words(c.confidence_arithmetic, lang),
                supporting="".join(refs.cite(s.url) for s in c.supporting) or none,
                contradicting="".join(refs.cite(s.url) for s in c.contradicting) or none,
            )
        )
    lines += ["", t("tr.conflicts"), ""]
    for d in result.disputed:
        kind = f"conflict.{d.type}"
        lines.append(
            t(
                "tr.conflict",
                type=t(kind) if kind in t.c.messages else d.type,
                label=series_label(f"{d.subject}/{d.attribute}", lang),
                when=t("question.when", when=period_label(d.when, lang)) if d.when else "",
                first=d.statement1.value,
                first_cite=refs.cite(d.statement1.source),
                second=d.statement2.value,
                second_cite=refs.cite(d.statement2.source),
                severity=d.severity,
                confidence=t.number(d.confidence, 2),
                reading=reading_text(d, refs, t) or none,
            )
        )
    check = result.citation_check
    texts = {c.claim_id: c.text for c in result.claims}
    lines += ["", t("tr.citations"), "", t("tr.citations_passed", checked=check.checked, passed=check.passed)]
    lines += [
        t("tr.dropped", cite=refs.cite(d.url), claim=texts.get(d.claim_id, "…"), reason=drop_words(d.reason, lang))
        for d in check.dropped
    ]
    summary = result.executive_summary
    who = t("tr.summary_llm") if summary.written_by == "llm" else t("tr.summary_extractive")
    lines += ["", t("tr.summary"), "", t("tr.summary_by", who=who)]
    lines += [t("tr.removed", text=s) for s in summary.sentences_removed]
    note = _summary_note(result, t)
    if note:
        lines.append(t("tr.note", text=note))
    lines += ["", t("tr.sources"), ""]
    for n, url in enumerate(refs.order, start=1):
        source = refs.source(url)
        lines.append(t("tr.source", n=n, title=source.title if source else url, url=url))
    return "\n".join(lines) + "\n"


def _summary_note(result: ConsensusResearchResult, t: Labels) -> str:
    """Why the summary is written as it is: the summarizer's own note in English, else said from the data
    (the note's wording is English; transparency.json keeps it)."""
    summary = result.executive_summary
    if t.lang == "en" or not summary.note:
        return summary.note or ""
    if summary.written_by == "llm":
        return t("tr.note_removed", n=len(summary.sentences_removed))
    return t("tr.note_no_llm") if result.usage is None else t("tr.note_fallback")


def _iteration(it: IterationResult, t: Labels, lang: Lang) -> list[str]:
    """One iteration: what it was told, what each agent searched and decided, the scores and the choice."""
    lines = [t("tr.iteration", n=it.iteration), ""]
    ctx = it.context
    if ctx.focus_queries or ctx.unresolved_questions:
        lines += [t("tr.context"), ""]
        lines += [t("tr.question", text=q) for q in ctx.unresolved_questions]
        lines += [t("tr.area", text=a) for a in ctx.areas_to_deepen]
        lines += [t("tr.focus", text=q) for q in ctx.focus_queries]
        lines += [t("tr.covered", n=len(ctx.covered_sources)), ""]
    agent_of = {r.report_id: r.agent_id for r in it.agent_reports}
    lines += [t("tr.table_head"), "|---|---|---|---|---|---|"]
    for r in it.agent_reports:
        lines.append(
            t(
                "tr.table_row",
                agent=r.agent_id,
                reading=_cell(_reading(r.strategy, t)),
                queries=_cell(" / ".join(r.queries)),
                sources=len(r.sources),
                findings=len(r.findings),
                seconds=_seconds(r.duration_ms, lang),
            )
        )
    lines.append("")
    for r in it.agent_reports:
        lines += [t("tr.decision", agent=r.agent_id, text=d) for d in r.decisions]
    for f in it.agent_failures:
        lines.append(
            t(
                "tr.failure",
                agent=f.agent_id,
                attempt=f.attempt,
                seconds=_seconds(f.duration_ms, lang),
                stage=f.last_stage or t("tr.no_stage"),
                error=f.error,
            )
        )
    lines += ["", t("tr.scores"), ""]
    for s in it.scores:
        lines.append(
            t(
                "tr.score",
                agent=agent_of.get(s.report_id, "?"),
                consistency=f"{s.consistency_score:.3f}",
                reliability=f"{s.source_reliability_score:.3f}",
                coverage=f"{s.coverage_score:.3f}",
                overall=f"{s.overall_score:.3f}",
                relevance=f"{s.relevance_score:.3f}",
                conflicts=len(s.conflicts),
                unverified=s.unverified_count,
            )
        )
    lines += ["", t("tr.selection", reason=it.selection_reason), t("tr.overlap", value=t.number(it.source_overlap, 2))]
    if it.retried:
        lines.append(t("tr.retried"))
    if it.flagged_for_review:
        lines.append(t("tr.flagged"))
    lines.append("")
    return lines


__all__ = [
    "confidence_words",
    "drop_words",
    "transparency_data",
    "transparency_json",
    "transparency_markdown",
]
