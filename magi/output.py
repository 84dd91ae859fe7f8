"""Render a deliberation (or a series of runs) as JSON data or as Markdown for people.

JSON is the :class:`~magi.models.Deliberation` in camelCase: ``decision``, ``exitCode``, ``votes``
(blind and final per sage), ``conditions`` (merged, de-duplicated, attributed), ``thinking``,
``debate`` (per round, per sage), ``conformity``, ``failures``, ``usage`` (per sage and phase, with
cost) and ``usageTotal``, ``timings``, ``dissent``, plus the transcripts. Markdown shows the same,
the minority positions in their own "Dissent" section.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pydantic import Field

from core.models import CamelModel
from magi.models import SAGES, Deliberation, SageName, Vote
from magi.tally import Decision

CAUTION: tuple[Decision, ...] = ("NO_DECISION", "DENY", "CONDITIONAL", "APPROVE")  # ties go to the first
EXIT_OF: dict[Decision, int] = {"APPROVE": 0, "DENY": 1, "CONDITIONAL": 3, "NO_DECISION": 4}


class RunsReport(CamelModel):
    """``--runs K``: K independent deliberations, the decision distribution and the flip rate."""

    decision: Decision
    exit_code: int
    runs: int
    distribution: dict[str, int]
    agreement: float = Field(description="Share of runs that reached the reported decision.")
    flip_rate: float = Field(description="Share of sage votes whose final verdict differs from the blind one.")
    unargued_flips: int = Field(description="Flips without a new argument (flagged in conformity).")
    seeds: list[int]
    deliberations: list[Deliberation]


def summarize_runs(deliberations: list[Deliberation]) -> RunsReport:
    """The majority decision over runs (ties go to the more cautious decision, failing closed)."""
    counts = Counter(d.decision for d in deliberations)
    top = max(counts.values())
    decision = next(d for d in CAUTION if counts.get(d) == top)
    entries = [c for d in deliberations for c in d.conformity if c.blind is not None and c.final is not None]
    flips = sum(1 for c in entries if c.changed)
    return RunsReport(
        decision=decision,
        exit_code=EXIT_OF[decision],
        runs=len(deliberations),
        distribution={d: counts.get(d, 0) for d in reversed(CAUTION)},
        agreement=round(top / len(deliberations), 4),
        flip_rate=round(flips / len(entries), 4) if entries else 0.0,
        unargued_flips=sum(1 for d in deliberations for c in d.conformity if c.flagged),
        seeds=[d.seed for d in deliberations],
        deliberations=deliberations,
    )


def to_json(result: Deliberation | RunsReport) -> dict[str, Any]:
    return result.model_dump(mode="json", by_alias=True)


def _vote(vote: Vote | None) -> str:
    if vote is None:
        return "—"
    return f"{vote.verdict.value} ({vote.confidence:.2f})"


def _name(sage: SageName) -> str:
    return sage.display


def to_markdown(d: Deliberation) -> str:
    lines = [
        f"# MAGI decision: {d.decision}",
        "",
        f"> {d.question.splitlines()[0] if d.question.strip() else ''}",
        "",
        f"- exit code: {d.exit_code}",
        f"- tally: {d.decision_reason}",
        f"- rounds: {d.rounds_run} of {d.rounds_requested}"
        + (f" (stopped early: {d.stopped_early}; {d.llm_calls_saved} LLM calls saved)" if d.stopped_early else ""),
        f"- seed: {d.seed}; threshold: {d.threshold}{' (confidence-weighted)' if d.weighted else ''}",
        "",
        "## Votes",
        "",
        "| sage | blind | final | note |",
        "|---|---|---|---|",
    ]
    flags = {c.sage: c for c in d.conformity}
    for record in d.votes:
        c = flags.get(record.sage)
        note = "abstained: " + (record.abstain_reason or "no valid vote") if record.abstained else ""
        if c is not None and c.flagged:
            note = "⚠ changed without a new argument"
        elif c is not None and c.changed:
            note = "changed, citing: " + "; ".join(c.arguments)
        lines.append(f"| {_name(record.sage)} | {_vote(record.blind)} | {_vote(record.final)} | {note} |")
    if d.conditions:
        lines += ["", "## Conditions", ""]
        lines += [f"- {c.text} ({', '.join(_name(s) for s in c.sages)})" for c in d.conditions]
    if d.dissent:
        lines += ["", "## Dissent", ""]
        lines += [f"- {_name(x.sage)}: {x.verdict.value} — {x.reason}" for x in d.dissent]
    lines += ["", "## Thinking", ""]
    for entry in d.thinking:
        lines += [f"### {_name(entry.sage)}", "", entry.output.analysis, ""]
        lines += [f"- {p}" for p in entry.output.key_points]
        lines += ["", f"Blind vote: {_vote(entry.output.vote)} — {entry.output.vote.reason}", ""]
    for rnd in d.debate:
        lines += [f"## Debate round {rnd.round}", ""]
        for e in rnd.entries:
            seen = ", ".join(f"{p.label} = {_name(p.sage)}" for p in e.peers)
            lines += [f"### {_name(e.sage)} (saw {seen})", ""]
            lines += [f"- rebuttal to {r.peer}: {r.point}" for r in e.turn.rebuttals]
            lines += [f"- addition: {a}" for a in e.turn.additions]
            changed = " (changed)" if e.stance_changed else ""
            lines += [f"- stance: {_vote(e.turn.stance)}{changed} — {e.turn.stance.reason}", ""]
    lines += [
        "## Conformity",
        "",
        "| sage | blind → final | changed | new argument | flagged |",
        "|---|---|---|---|---|",
    ]
    for c in d.conformity:
        arrow = f"{c.blind.value if c.blind else '—'} → {c.final.value if c.final else '—'}"
        lines.append(f"| {_name(c.sage)} | {arrow} | {c.changed} | {c.new_argument} | {'⚠' if c.flagged else ''} |")
    if d.failures:
        lines += ["", "## Failures", ""]
        for f in d.failures:
            where = f"{f.phase}" + (f" round {f.round}" if f.round else "")
            lines.append(f"- {_name(f.sage)} in {where}: {f.kind}: {f.message}")
    if d.context:
        lines += ["", "## Context summaries", ""]
        lines += [f"- {_name(c.sage)} before {c.phase}: {c.turns} turn(s) summarised ({c.method})" for c in d.context]
    total = d.usage_total
    cost = total.cost_usd if total.cost_usd == "unknown" else f"${total.cost_usd:.4f}"
    lines += [
        "",
        "## Usage",
        "",
        f"{total.calls} LLM calls, {total.input_tokens} in / {total.output_tokens} out tokens, cost {cost}",
        "",
    ]
    if d.sages:
        lines += ["| sage | provider | model |", "|---|---|---|"]
        lines += [f"| {_name(m.sage)} | {m.provider or '—'} | {m.model} |" for m in d.sages]
        lines.append("")
    lines += ["| sage | phase | calls | in | out | cost |", "|---|---|---|---|---|---|"]
    for u in d.usage:
        lines.append(
            f"| {_name(u.sage)} | {u.phase} | {u.calls} | {u.input_tokens} | {u.output_tokens} | {u.cost_usd} |"
        )
    t = d.timings
    debate_ms = "+".join(str(x) for x in t.debate_ms) or "0"
    lines += [
        "",
        f"Timings: total {t.total_ms} ms (thinking {t.thinking_ms}, debate {debate_ms}, voting {t.voting_ms})",
    ]
    return "\n".join(lines) + "\n"


def runs_markdown(report: RunsReport) -> str:
    lines = [
        f"# MAGI decision over {report.runs} runs: {report.decision}",
        "",
        f"- exit code: {report.exit_code}",
        "- distribution: " + ", ".join(f"{k} {v}" for k, v in report.distribution.items()),
        f"- agreement: {report.agreement:.0%}; flip rate (blind → final): {report.flip_rate:.0%}; "
        f"unargued flips: {report.unargued_flips}",
        "",
        "| run | seed | decision | votes (final) |",
        "|---|---|---|---|",
    ]
    for i, d in enumerate(report.deliberations, start=1):
        finals = {v.sage: v.final for v in d.votes}
        votes = ", ".join(f"{s.display} {_vote(finals.get(s))}" for s in SAGES)
        lines.append(f"| {i} | {d.seed} | {d.decision} | {votes} |")
    return "\n".join(lines) + "\n"


__all__ = ["CAUTION", "EXIT_OF", "RunsReport", "runs_markdown", "summarize_runs", "to_json", "to_markdown"]
