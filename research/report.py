"""The final report (Markdown) of a consensus research run (KATASHIRO WFL-005).

Sections: executive summary; key findings of every iteration; claims with confidence and their
sources (reliability shown); disputed figures with both sides; methodology. Every citation printed
here passed verification (research/evidence.py): claims whose citations all failed are left out and
counted in the methodology, and sources are numbered once for the whole report.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from nlp.values import fold
from research.evidence import Citation, EvidencedClaim
from research.models import SourceReference

if TYPE_CHECKING:
    from research.result import ConsensusResearchResult

MAX_CLAIMS = 25
MAX_NEW_FINDINGS = 8  # per iteration: what it added
MAX_CITES = 6  # citations printed per claim; the JSON result lists them all


class SourceNumbers:
    """Source numbers in order of first citation; the reference list prints them in that order."""

    def __init__(self, sources: list[SourceReference]) -> None:
        self._by_url = {s.url: s for s in sources}
        self.order: list[str] = []

    def cite(self, url: str) -> str:
        if url not in self.order:
            self.order.append(url)
        return f"[{self.order.index(url) + 1}]"

    def cite_all(self, citations: list[Citation]) -> str:
        shown = "".join(self.cite(c.url) for c in citations[:MAX_CITES])
        return shown + (f" (+{len(citations) - MAX_CITES} more)" if len(citations) > MAX_CITES else "")

    def source(self, url: str) -> SourceReference | None:
        return self._by_url.get(url)


def _claim_line(claim: EvidencedClaim, refs: SourceNumbers) -> str:
    against = (
        f"; contradicted by {claim.contradicting_origins} source(s) {refs.cite_all(claim.contradicting)}"
        if claim.contradicting
        else ""
    )
    mark = " **(disputed)**" if claim.disputed else ""
    context = f"*{claim.context}*: " if claim.context else ""  # the subject its document gives it
    return (
        f"- {context}{claim.text} {refs.cite_all(claim.supporting)}{mark} — confidence {claim.confidence:.2f}, "
        f"{claim.independent_origins} independent source(s){against}"
    )


def distinct_claims(claims: list[EvidencedClaim]) -> list[EvidencedClaim]:
    """One claim per (key, figures): several pages wording the same figure are one claim, the first
    (most confident) one stands for them; claims without a key are all kept."""
    seen: set[tuple[str, tuple[str, ...]]] = set()
    kept = []
    for c in claims:
        identity = (c.key or "", tuple(sorted(fold(v) for v in c.values)))
        if c.key and identity in seen:
            continue
        seen.add(identity)
        kept.append(c)
    return kept


def render_final_report(result: ConsensusResearchResult) -> str:
    refs = SourceNumbers(result.sources)
    config = result.metadata.config
    lines = [f"# {result.metadata.topic}", "", "## Executive summary", "", result.executive_summary.text.strip(), ""]
    summary = result.executive_summary
    if summary.written_by == "llm":
        lines += [
            f"_Written by the LLM from verified claims only; {summary.sentences_kept} sentence(s) kept, "
            f"{len(summary.sentences_removed)} unsupported sentence(s) removed._",
            "",
        ]

    lines += ["## Key findings by iteration", ""]
    by_iteration: dict[int, list[EvidencedClaim]] = defaultdict(list)
    for claim in distinct_claims(result.claims):
        for number in claim.iterations:
            by_iteration[number].append(claim)
    for iteration in result.iterations:
        lines += [f"### Iteration {iteration.iteration} (consensus: agent {iteration.selected_agent_id})", ""]
        found = by_iteration.get(iteration.iteration, [])
        new = [c for c in found if min(c.iterations) == iteration.iteration]
        lines += [f"- {c.text} {refs.cite_all(c.supporting)}" for c in new[:MAX_NEW_FINDINGS]]
        if len(found) > len(new):
            lines.append(f"- ({len(found) - len(new)} finding(s) of earlier iterations confirmed again)")
        lines += [] if found else ["- (no verified findings)"]
        lines.append("")

    lines += ["## Claims, confidence and sources", ""]
    lines += [_claim_line(c, refs) for c in distinct_claims(result.claims)[:MAX_CLAIMS]] or ["- (no verified claims)"]
    lines.append("")

    lines += ["## Disputed figures", ""]
    if not result.disputed:
        lines += ["No conflicting figures were found among the sources read.", ""]
    for n, d in enumerate(result.disputed, start=1):
        when = f", {d.when}" if d.when else ""
        lines += [
            f"{n}. **{d.type}** — {d.subject} / {d.attribute}{when} (severity {d.severity}/5, "
            f"confidence {d.confidence:.2f})",
            f"   - {d.statement1.value}: {d.statement1.text} {refs.cite(d.statement1.source)}",
            f"   - {d.statement2.value}: {d.statement2.text} {refs.cite(d.statement2.source)}",
        ]
        if d.resolution:
            lines.append(f"   - Suggested reading: {d.resolution}")
    lines.append("")

    if result.charts or result.warnings:
        lines += ["## Charts", ""]
        lines += [f"![{c.title}](charts/{c.file})" for c in result.charts]
        lines += [f"> {warning}" for warning in result.warnings]
        lines.append("")
    lines += ["## Methodology", ""]
    failures = result.agent_failures
    check = result.citation_check
    lines += [
        f"- Run `{result.run_id}`, {result.metadata.started_at:%Y-%m-%d %H:%M:%S} UTC, "
        f"{result.total_duration_ms / 1000:.1f} s; {len(result.iterations)} of {config.iteration_count} iteration(s), "
        f"{config.agent_count} agents each, {result.total_agent_runs} agent runs ({len(failures)} failed).",
        f"- Search provider `{config.search_config.provider}`, up to {config.search_config.max_results_per_agent} "
        f"results per agent; agent timeout {config.agent_timeout_ms / 1000:g} s.",
        "- Each iteration's reports were scored: overall = 0.5 × consistency + 0.3 × source reliability + "
        "0.2 × coverage; the most consistent report (coverage breaking ties) became the consensus and its gaps, "
        "open questions and sources seeded the next iteration.",
        f"- Final score: consistency {result.final_score.consistency_score:.3f}, reliability "
        f"{result.final_score.source_reliability_score:.3f}, coverage {result.final_score.coverage_score:.3f}, "
        f"overall {result.final_score.overall_score:.3f}.",
        f"- Citations checked against the cited page's text: {check.passed} of {check.checked} passed; "
        f"{len(check.dropped)} dropped.",
        "- Claim confidence combines independent agreement (near-duplicate pages count once), source "
        "reliability, recency and the weight of contradicting sources (see transparency.md).",
    ]
    if result.stopped_early:
        lines.append(f"- Stopped early: {result.stopped_early}.")
    for it in result.iterations:
        flag = (
            " — flagged for review: every report's conflict rate exceeded the threshold"
            if it.flagged_for_review
            else ""
        )
        retry = " (retried after a majority of agents failed)" if it.retried else ""
        lines.append(
            f"- Iteration {it.iteration}{retry}: {it.selection_reason}; source overlap between agents "
            f"{it.source_overlap:.2f}{flag}."
        )
    for f in failures:
        lines.append(f"- Agent {f.agent_id} (iteration {f.iteration}, attempt {f.attempt}) failed: {f.error}")
    if result.collection is not None:
        stats = result.collection
        lines.append(
            f"- Collection: {stats.unique_urls} distinct URLs for {stats.urls_requested} requests, "
            f"{stats.fetches} fetches, {stats.analyses} analyses, "
            f"{stats.near_duplicates} near-duplicate pages."
        )
    lines += ["", "## Sources", ""]
    for n, url in enumerate(refs.order, start=1):
        ref = refs.source(url)
        if ref is None:
            lines.append(f"{n}. <{url}>")
            continue
        date = f", {ref.published}" if ref.published else ""
        reliability = f"{ref.reliability_score:.2f}" if ref.reliability_score is not None else "?"
        lines.append(
            f"{n}. [{ref.title}]({ref.url}) — {ref.source_type or 'unknown type'}{date}; reliability {reliability}"
        )
    return "\n".join(lines) + "\n"


__all__ = [
    "MAX_CITES",
    "MAX_CLAIMS",
    "MAX_NEW_FINDINGS",
    "SourceNumbers",
    "distinct_claims",
    "render_final_report",
]
