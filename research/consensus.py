"""One iteration's consensus (KATASHIRO WFL-002/003): conflicts and scores per report, then the best one.

Each report is judged on the sources it cites: the claims of those pages are compared with each other
(:func:`nlp.conflicts.detect_conflicts`), so a report that leans on pages disagreeing among
themselves loses consistency. Reliability and coverage come from :mod:`research.scoring`. A finding is
*unverified* when no other independent page among all pages read in the iteration states an agreeing
figure for the same claim key (or it has no key to compare by).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from functools import lru_cache

from core.messages import Lang, catalogue
from nlp.claims import Claim
from nlp.conflicts import Conflict, SourcedClaim, claim_key, detect_conflicts, is_standing, sourced
from nlp.context import PageContext, claim_context
from nlp.values import values_agree
from research.evidence import SourceDocument
from research.labels import report_language
from research.models import AgentReport, Finding, SourceReference
from research.reliability import origin_of
from research.retrieval import question_coverage
from research.scoring import EPSILON, ReportScore, facets_for, flag_for_review, score_report, select_best


@dataclass(frozen=True)
class IterationScoring:
    scores: list[ReportScore]
    selected: AgentReport
    reason: str  # for people, in the report's language: agents by number, no report ids
    flagged_for_review: bool
    detail: str = ""  # select_best's own reason, with report ids: for the log


_CRITERIA = (
    ("consistency_score", "consistency"),
    ("coverage_score", "coverage"),
    ("relevance_score", "relevance"),
    ("overall_score", "overall"),
)


def explain_selection(scores: Sequence[ReportScore], best_id: str, agent_of: Mapping[str, int], lang: Lang) -> str:
    """Why ``best_id`` was chosen, in ``lang``, naming agents by number: the criteria in the order
    :func:`~research.scoring.select_best` applies them (consistency, coverage, answer relevance, overall
    score), each until one report is ahead, with the runner-up, and a report with a higher overall score
    that the order passed over."""
    c = catalogue("research")
    best = next(s for s in scores if s.report_id == best_id)
    pool, parts = list(scores), []
    for key, name in _CRITERIA:
        criterion = c.text(f"criterion.{name}", lang)
        value = getattr(best, key)
        top = [s for s in pool if getattr(s, key) >= max(getattr(t, key) for t in pool) - EPSILON]
        if len(top) == 1:
            others = sorted((s for s in pool if s is not best), key=lambda s: (-getattr(s, key), s.report_id))
            runner = (
                c.text(
                    "select.runner", lang, agent=agent_of[others[0].report_id], value=f"{getattr(others[0], key):.3f}"
                )
                if others
                else ""
            )
            parts.append(c.text("select.highest", lang, criterion=criterion, value=f"{value:.3f}", runner=runner))
            break
        parts.append(c.text("select.tie", lang, n=len(top), criterion=criterion, value=f"{value:.3f}"))
        pool = top
    else:
        parts.append(c.text("select.first", lang, agent=agent_of[best_id]))
    reason = c.text(
        "select.reason",
        lang,
        agent=agent_of[best_id],
        n=len(scores),
        parts=c.text("select.separator", lang).join(parts),
        overall=f"{best.overall_score:.3f}",
    )
    rival = max(scores, key=lambda s: (s.overall_score, s.report_id))
    if rival.overall_score > best.overall_score + EPSILON:
        reason += c.text(
            "select.rival",
            lang,
            agent=agent_of[rival.report_id],
            overall=f"{rival.overall_score:.3f}",
            consistency=f"{rival.consistency_score:.3f}",
        )
    return reason


def _published(source: SourceReference) -> date | None:
    try:
        return date.fromisoformat(source.published[:10]) if source.published else None
    except ValueError:
        return None


@lru_cache(maxsize=64)
def _page_context(text: str) -> PageContext:
    return PageContext(text)


@lru_cache(maxsize=16384)
def _context_at(text: str, sentence: str, start: int) -> str:
    """A claim's context, once per claim: every report citing its page asks again, every iteration."""
    return claim_context(_page_context(text), sentence, start)


def _with_context(items: list[SourcedClaim], text: str) -> list[SourcedClaim]:
    """A standing fact (a default, a limit: :func:`~nlp.conflicts.is_standing`) carries what its document
    makes it about (heading, defined term, antecedent): "The default is 50 tuples." names its parameter
    only there, and conflicts compare only figures about the same parameter."""
    out = []
    for item in items:
        c = item.claim
        if c.values and c.attribute and is_standing(c.attribute):
            item = item.model_copy(update={"context": _context_at(text, c.text, c.start)})
        out.append(item)
    return out


def sourced_claims(
    report_id: str | None, sources: Sequence[SourceReference], documents: Mapping[str, SourceDocument]
) -> list[SourcedClaim]:
    """The claims of the given pages, each with its page, date, type, origin and (standing facts) context."""
    items: list[SourcedClaim] = []
    for s in sources:
        doc = documents.get(s.url)
        if doc is not None:
            page = sourced(
                doc.claims,
                s.url,
                report_id=report_id,
                published=_published(s),
                source_type=s.source_type,
                duplicate_of=s.duplicate_of,
            )
            items += _with_context(page, doc.text)
    return items


def _agreeing_origins(finding: Finding, claims_by_key: Mapping[str, list[tuple[str, Claim]]]) -> set[str]:
    """Origins whose claims under the finding's key state a figure agreeing with one of the finding's."""
    own = [c for _, c in claims_by_key.get(finding.key or "", []) if c.text == finding.text]
    mine = [v for c in own for v in c.values]
    return {
        origin
        for origin, c in claims_by_key.get(finding.key or "", [])
        if any(values_agree(a, b) for a in mine for b in c.values)
    }


def unconfirmed(report: AgentReport, claims_by_key: Mapping[str, list[tuple[str, Claim]]]) -> list[Finding]:
    """The report's findings no second origin confirms (see the module docstring)."""
    origin = {s.url: origin_of(s) for s in report.sources}
    return [
        f
        for f in report.findings
        if not f.key or not _agreeing_origins(f, claims_by_key) - {origin.get(f.source, f.source)}
    ]


def index_claims(documents: Mapping[str, SourceDocument]) -> dict[str, list[tuple[str, Claim]]]:
    """Claim key -> (origin, claim) for every page read."""
    index: dict[str, list[tuple[str, Claim]]] = {}
    for doc in documents.values():
        for c in doc.claims:
            key = claim_key(c)
            if key:
                index.setdefault(key, []).append((origin_of(doc.source), c))
    return index


RELEVANCE_FINDINGS = 5  # the findings a reader sees first: they must answer the question


def score_iteration(
    topic: str, reports: Sequence[AgentReport], documents: Mapping[str, SourceDocument], conflict_threshold: float
) -> IterationScoring:
    """Score every report, pick the consensus by the spec's rule, flag when all are too conflicted."""
    per_report = {r.report_id: sourced_claims(r.report_id, r.sources, documents) for r in reports}
    keys_seen = {k for items in per_report.values() for i in items for k in (i.claim.subject, i.claim.attribute) if k}
    facets = facets_for(topic, keys_seen)
    index = index_claims(documents)
    scores = []
    for r in reports:
        items = per_report[r.report_id]
        conflicts: list[Conflict] = detect_conflicts(items)
        claim_keys = {k for i in items for k in (i.claim.subject, i.claim.attribute) if k}
        scores.append(
            score_report(
                r.report_id,
                conflicts=conflicts,
                claim_count=sum(1 for i in items if claim_key(i.claim)),
                sources=r.sources,
                text=r.findings,
                facets=facets,
                claim_keys=claim_keys,
                unverified_count=len(unconfirmed(r, index)),
                relevance=question_coverage(topic, [f.text for f in r.findings[:RELEVANCE_FINDINGS]]),
            )
        )
    best_id, detail = select_best(scores)
    selected = next(r for r in reports if r.report_id == best_id)
    agent_of = {r.report_id: r.agent_id for r in reports}
    reason = explain_selection(scores, best_id, agent_of, report_language(topic))
    return IterationScoring(
        scores, selected, reason, flag_for_review(scores, conflict_threshold), f"agent {selected.agent_id}'s {detail}"
    )


__all__ = [
    "RELEVANCE_FINDINGS",
    "IterationScoring",
    "explain_selection",
    "index_claims",
    "score_iteration",
    "sourced_claims",
    "unconfirmed",
]
