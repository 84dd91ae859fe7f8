"""The final report (Markdown) of a consensus research run (KATASHIRO WFL-005).

Sections: executive summary; key findings of every iteration; claims with confidence and their
sources (reliability shown); disputed figures with both sides; methodology. Every citation printed
here passed verification (research/evidence.py): claims whose citations all failed are left out and
counted in the methodology, and sources are numbered once for the whole report. Every label is in
the report's language (the topic's; data/research/messages.yaml), and a disputed figure is named by
its human label (research/labels.py), never by its claim key.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from core.messages import Lang, catalogue, format_number, language_of
from nlp.conflicts import Conflict, identifiers
from nlp.values import fold
from research.evidence import Citation, EvidencedClaim
from research.labels import attribute_label, period_label, report_language, subject_label
from research.models import SourceReference
from research.result_labels import DisputeLabel

if TYPE_CHECKING:
    from research.result import ConsensusResearchResult

MAX_CLAIMS = 25
MAX_NEW_FINDINGS = 8  # per iteration: what it added
MAX_CITES = 6  # citations printed per claim; the JSON result lists them all


class SourceNumbers:
    """Source numbers in order of first citation; the reference list prints them in that order."""

    def __init__(self, sources: list[SourceReference], lang: Lang = "ja") -> None:
        self._by_url = {s.url: s for s in sources}
        self.order: list[str] = []
        self.lang: Lang = lang

    def cite(self, url: str) -> str:
        if url not in self.order:
            self.order.append(url)
        return f"[{self.order.index(url) + 1}]"

    def cite_all(self, citations: list[Citation]) -> str:
        shown = "".join(self.cite(c.url) for c in citations[:MAX_CITES])
        if len(citations) > MAX_CITES:
            shown += catalogue("research").text("cites.more", self.lang, n=len(citations) - MAX_CITES)
        return shown

    def source(self, url: str) -> SourceReference | None:
        return self._by_url.get(url)


class Labels:
    """The research catalogue in one language: ``t(key, **fields)`` and numbers as people read them."""

    def __init__(self, lang: Lang) -> None:
        self.lang: Lang = lang
        self.c = catalogue("research")

    def __call__(self, key: str, **fields: object) -> str:
        return self.c.text(key, self.lang, **fields)

    def number(self, value: float, digits: int) -> str:
        return format_number(value, self.lang, digits)


def heading_for(context: str | None, lang: Lang) -> str:
    """The subject a claim's document gives it, as the report may show it: whole when it is in the
    report's language; else only the names it holds (an English manual's "autovacuum_naptime (integer)"
    gives ``autovacuum_naptime`` in a Japanese report; "Where things stand" gives nothing), so that no
    heading of another language reads as one of the report's own labels."""
    if not context:
        return ""
    if language_of(context, lang) == lang:
        return context
    return " › ".join(identifiers(context))


def _claim_line(claim: EvidencedClaim, refs: SourceNumbers, t: Labels, superseded: set[str]) -> str:
    against = (
        t("claims.against", n=claim.contradicting_origins, cites=refs.cite_all(claim.contradicting))
        if claim.contradicting
        else ""
    )
    # an outdated figure is disputed too; saying which dispute is more use to the reader
    mark = t("claims.superseded") if claim.claim_id in superseded else t("claims.disputed") if claim.disputed else ""
    heading = heading_for(claim.context, t.lang)
    context = f"*{heading}*: " if heading else ""  # the subject its document gives it
    return t(
        "claims.line",
        context=context,
        text=claim.text,
        cites=refs.cite_all(claim.supporting),
        mark=mark,
        confidence=t.number(claim.confidence, 2),
        origins=claim.independent_origins,
        against=against,
    )


def distinct_claims(claims: list[EvidencedClaim]) -> list[EvidencedClaim]:
    """Each figure of a key shown once: a claim whose every figure was already shown for its key (by a
    more confident claim, in either language: 52.4% in an English and a Japanese page) is left out;
    the first stands for them. Claims without a key are all kept."""
    seen: set[tuple[str, str]] = set()
    kept = []
    for c in claims:
        figures = {(c.key or "", fold(v)) for v in c.values}
        if c.key and figures and figures <= seen:
            continue
        seen |= figures
        kept.append(c)
    return kept


def dispute_labels(result: ConsensusResearchResult) -> list[DisputeLabel]:
    """Each disputed figure in the report's words (what it is, when, the kind of dispute, the suggested
    reading), in ``result.disputed`` order: the report and the research page say the same."""
    lang = report_language(result.metadata.topic)
    t = Labels(lang)
    refs = SourceNumbers(result.sources, lang)
    out = []
    for d in result.disputed:
        kind = f"conflict.{d.type}"
        out.append(
            DisputeLabel(
                conflict_id=d.conflict_id,
                label=f"{subject_label(d.subject, lang)} / {attribute_label(d.attribute, lang)}",
                when=period_label(d.when, lang) if d.when else None,
                kind=t(kind) if kind in t.c.messages else d.type,
                reading=reading_text(d, refs, t) or None,
            )
        )
    return out


def render_final_report(result: ConsensusResearchResult) -> str:
    lang = report_language(result.metadata.topic)
    t = Labels(lang)
    refs = SourceNumbers(result.sources, lang)
    lines = [f"# {result.metadata.topic}", "", t("summary.title"), "", result.executive_summary.text.strip(), ""]
    summary = result.executive_summary
    if summary.written_by == "llm":
        lines += [t("summary.llm", kept=summary.sentences_kept, removed=len(summary.sentences_removed)), ""]

    lines += [t("findings.title"), ""]
    by_iteration: dict[int, list[EvidencedClaim]] = defaultdict(list)
    for claim in distinct_claims(result.claims):
        for number in claim.iterations:
            by_iteration[number].append(claim)
    for iteration in result.iterations:
        lines += [t("findings.iteration", n=iteration.iteration, agent=iteration.selected_agent_id), ""]
        found = by_iteration.get(iteration.iteration, [])
        new = [c for c in found if min(c.iterations) == iteration.iteration]
        lines += [f"- {c.text} {refs.cite_all(c.supporting)}" for c in new[:MAX_NEW_FINDINGS]]
        if len(found) > len(new):
            lines.append(t("findings.again", n=len(found) - len(new)))
        lines += [] if found else [t("findings.none")]
        lines.append("")

    lines += [t("claims.title"), ""]
    superseded = set(result.superseded)
    claim_lines = [_claim_line(c, refs, t, superseded) for c in distinct_claims(result.claims)[:MAX_CLAIMS]]
    lines += claim_lines or [t("claims.none")]
    lines.append("")

    lines += [t("disputed.title"), ""]
    if not result.disputed:
        lines += [t("disputed.none"), ""]
    for n, (d, words) in enumerate(zip(result.disputed, dispute_labels(result), strict=True), start=1):
        lines += [
            t(
                "disputed.item",
                n=n,
                type=words.kind,
                label=words.label,
                when=f", {words.when}" if words.when else "",
                severity=d.severity,
                confidence=t.number(d.confidence, 2),
            ),
            f"   - {d.statement1.value}: {d.statement1.text} {refs.cite(d.statement1.source)}",
            f"   - {d.statement2.value}: {d.statement2.text} {refs.cite(d.statement2.source)}",
        ]
        if words.reading:
            lines.append(t("disputed.reading", text=words.reading))
    lines.append("")

    if result.charts or result.warnings:
        lines += [t("charts.title"), ""]
        for chart in result.charts:
            points = t("charts.separator").join(
                f"{p.period} {p.figure}{refs.cite(p.source) if p.source else ''}" for p in chart.points
            )
            lines += [f"![{chart.title}](charts/{chart.file})", "", t("charts.figures", points=points), ""]
        lines += [f"> {warning}" for warning in result.warnings]
        lines.append("")
    lines += _methodology(result, t)
    lines += ["", t("sources.title"), ""]
    for n, url in enumerate(refs.order, start=1):
        ref = refs.source(url)
        if ref is None:
            lines.append(f"{n}. <{url}>")
            continue
        date = f", {ref.published}" if ref.published else ""
        reliability = t.number(ref.reliability_score, 2) if ref.reliability_score is not None else "?"
        kind = ref.source_type if ref.source_type and f"source.{ref.source_type}" in t.c.messages else "unknown"
        lines.append(
            t(
                "sources.line",
                n=n,
                title=ref.title,
                url=ref.url,
                type=t(f"source.{kind}"),
                date=date,
                reliability=reliability,
            )
        )
    return "\n".join(lines) + "\n"


def _source_words(kind: str | None, published: object, t: Labels) -> str:
    """「公的機関の出典（2024-11-29）」: a source named by its type and date, in the report's language."""
    kind = kind if kind and f"source.{kind}" in t.c.messages else "unknown"
    if published:
        return t("reading.source_dated", type=t(f"source.{kind}"), date=published)
    return t("reading.source", type=t(f"source.{kind}"))


def reading_text(conflict: Conflict, refs: SourceNumbers, t: Labels) -> str:
    """The suggested reading of a dispute, worded from its data (:class:`nlp.conflicts.Reading`) in the
    report's language; the English ``resolution`` only when a conflict carries no reading."""
    reading = conflict.reading
    if reading is None:
        return conflict.resolution or ""
    win, lose = (
        (conflict.statement2, conflict.statement1)
        if reading.preferred == 2
        else (conflict.statement1, conflict.statement2)
    )
    source = _source_words(reading.source_type, reading.published, t)
    if reading.kind == "superseded":
        old, new = conflict.statement2, conflict.statement1
        return t(
            "reading.superseded",
            old=old.value,
            old_when=period_label(old.key.rsplit("@", 1)[-1], t.lang),
            new=new.value,
            new_when=period_label(new.key.rsplit("@", 1)[-1], t.lang),
            source=source,
        )
    if reading.kind == "check_wording":
        return t("reading.check_wording", figure=conflict.statement1.value, source=source)
    agree = t("reading.agreeing", n=reading.agreeing) if reading.agreeing else ""
    text = t("reading.prefer", source=source, figure=win.value, agree=agree)
    other = refs.source(lose.source)
    other_type = other.source_type if other and other.source_type else None
    note = reading.note or "differs"
    return text + t(f"reading.note_{note}", figure=lose.value, source=_source_words(other_type, None, t))


def _provider(name: str, t: Labels) -> str:
    """A search provider as people call it (ローカルのコーパス, DuckDuckGo); an unknown one as configured."""
    return t(f"provider.{name}") if f"provider.{name}" in t.c.messages else f"`{name}`"


def _methodology(result: ConsensusResearchResult, t: Labels) -> list[str]:
    config = result.metadata.config
    failures = result.agent_failures
    check = result.citation_check
    score = result.final_score
    lines = [
        t("method.title"),
        "",
        t(
            "method.run",
            started=f"{result.metadata.started_at:%Y-%m-%d %H:%M:%S}",
            seconds=t.number(result.total_duration_ms / 1000, 1),
            done=len(result.iterations),
            planned=config.iteration_count,
            agents=config.agent_count,
            runs=result.total_agent_runs,
            failed=len(failures),
        ),
        t(
            "method.search",
            provider=_provider(config.search_config.provider, t),
            results=config.search_config.max_results_per_agent,
            timeout=f"{config.agent_timeout_ms / 1000:g}",
        ),
        t("method.scoring"),
        t(
            "method.final",
            consistency=t.number(score.consistency_score, 3),
            reliability=t.number(score.source_reliability_score, 3),
            coverage=t.number(score.coverage_score, 3),
            overall=t.number(score.overall_score, 3),
        ),
        t("method.citations", passed=check.passed, checked=check.checked, dropped=len(check.dropped)),
        t("method.confidence"),
    ]
    if result.stopped_early:
        lines.append(t("method.stopped", why=result.stopped_early))
    for it in result.iterations:
        lines.append(
            t(
                "method.iteration",
                n=it.iteration,
                retry=t("method.retry") if it.retried else "",
                overlap=t.number(it.source_overlap, 2),
                flag=t("method.flag") if it.flagged_for_review else "",
            )
        )
    for f in failures:
        lines.append(t("method.failure", agent=f.agent_id, n=f.iteration, attempt=f.attempt, error=f.error))
    if result.collection is not None:
        stats = result.collection
        lines.append(
            t(
                "method.collection",
                unique=stats.unique_urls,
                requested=stats.urls_requested,
                fetches=stats.fetches,
                analyses=stats.analyses,
                dupes=stats.near_duplicates,
            )
        )
    return lines


__all__ = [
    "MAX_CITES",
    "MAX_CLAIMS",
    "MAX_NEW_FINDINGS",
    "Labels",
    "SourceNumbers",
    "dispute_labels",
    "distinct_claims",
    "heading_for",
    "reading_text",
    "render_final_report",
]
