"""Render a deliberation (or a series of runs) as JSON data or as Markdown for people.

JSON is the :class:`~magi.models.Deliberation` in camelCase: ``decision``, ``exitCode``, ``votes``
(blind and final per sage), ``conditions`` (merged, de-duplicated, attributed), ``thinking``,
``debate`` (per round, per sage), ``conformity``, ``failures``, ``usage`` (per sage and phase, with
cost) and ``usageTotal``, ``timings``, ``dissent``, plus the transcripts. Markdown shows the same,
the minority positions in their own "Dissent" section.

Markdown is written for the person who asked, in the request's language (labels from
``data/magi/messages.yaml``): the decision, why (the final votes' reasons, attributed), the majority
and the dissent, the conditions with who asked for them; a split with no majority is headlined as a
split and shows every position. Identifiers (APPROVE, True/False) stay in the JSON.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Literal

from pydantic import Field
from pydantic.alias_generators import to_snake

from core.messages import Catalogue, Lang, catalogue, format_number, format_percent
from core.models import CamelModel
from magi.models import SAGES, Deliberation, SageName, Verdict, Vote, VoteRecord

Outcome = Literal["APPROVE", "DENY", "CONDITIONAL", "SPLIT", "NO_DECISION"]
OUTCOMES: tuple[Outcome, ...] = ("APPROVE", "DENY", "CONDITIONAL", "SPLIT", "NO_DECISION")
RunsDecision = Literal["APPROVE", "DENY", "CONDITIONAL", "SPLIT", "NO_DECISION", "NO_MAJORITY"]
# A split exits as a single split deliberation does (3: neither approved nor denied); no outcome shared by
# more than half of the runs is no decision (4). Fail closed: only an approval by a majority exits 0.
EXIT_OF: dict[RunsDecision, int] = {
    "APPROVE": 0,
    "DENY": 1,
    "CONDITIONAL": 3,
    "SPLIT": 3,
    "NO_DECISION": 4,
    "NO_MAJORITY": 4,
}


def outcome_of(d: Deliberation) -> Outcome:
    """What one deliberation came to, a split counted as a split (its ``decision`` field stays CONDITIONAL)."""
    return "SPLIT" if d.split else d.decision


class RunOutcome(CamelModel):
    """One run of several, labelled by its number (1-based) and seed."""

    run: int
    seed: int
    outcome: Outcome
    deliberation_id: str


class RunsReport(CamelModel):
    """``--runs K``: K independent deliberations as a distribution of outcomes, each run labelled."""

    decision: RunsDecision = Field(
        description="The outcome more than half of the runs reached; NO_MAJORITY when no outcome did."
    )
    majority_count: int = Field(description="How many runs reached the reported decision (0 with NO_MAJORITY).")
    majority_needed: int = Field(description="Runs needed for a majority: more than half.")
    exit_code: int
    runs: int
    distribution: dict[Outcome, int] = Field(description="Runs per outcome; a split counts as SPLIT.")
    outcomes: list[RunOutcome]
    agreement: float = Field(description="Share of runs that reached the most frequent outcome.")
    flip_rate: float = Field(description="Share of sage votes whose final verdict differs from the blind one.")
    unargued_flips: int = Field(description="Flips without a new argument (flagged in conformity).")
    seeds: list[int]
    deliberations: list[Deliberation]


def summarize_runs(deliberations: list[Deliberation]) -> RunsReport:
    """The distribution of outcomes over the runs; the reported decision is the outcome of more than half
    of them, else NO_MAJORITY (never the largest minority: 1-1-1 is no decision)."""
    outcomes = [outcome_of(d) for d in deliberations]
    counts = Counter(outcomes)
    runs = len(deliberations)
    needed = runs // 2 + 1
    top = max(counts.values()) if counts else 0
    winner = next((o for o in OUTCOMES if counts.get(o, 0) >= needed), None)
    decision: RunsDecision = winner if winner is not None else "NO_MAJORITY"
    entries = [c for d in deliberations for c in d.conformity if c.blind is not None and c.final is not None]
    flips = sum(1 for c in entries if c.changed)
    return RunsReport(
        decision=decision,
        majority_count=counts.get(winner, 0) if winner is not None else 0,
        majority_needed=needed,
        exit_code=EXIT_OF[decision],
        runs=runs,
        distribution={o: counts.get(o, 0) for o in OUTCOMES},
        outcomes=[
            RunOutcome(run=i, seed=d.seed, outcome=o, deliberation_id=d.id)
            for i, (d, o) in enumerate(zip(deliberations, outcomes, strict=True), start=1)
        ],
        agreement=round(top / runs, 4) if runs else 0.0,
        flip_rate=round(flips / len(entries), 4) if entries else 0.0,
        unargued_flips=sum(1 for d in deliberations for c in d.conformity if c.flagged),
        seeds=[d.seed for d in deliberations],
        deliberations=deliberations,
    )


def to_json(result: Deliberation | RunsReport) -> dict[str, Any]:
    """The record as JSON; a seeded deliberation (``reproducible``) leaves out its wall-clock timings so
    that the same seed and request give the same JSON."""
    if isinstance(result, Deliberation) and result.reproducible:
        return result.model_dump(mode="json", by_alias=True, exclude={"timings"})
    return result.model_dump(mode="json", by_alias=True)


_CAMEL = re.compile(r"[a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+")


def _snake_keys(value: Any) -> Any:
    """``value`` with its camelCase keys in snake_case (the verdicts' and sages' keys are left alone)."""
    if isinstance(value, dict):
        return {(to_snake(k) if _CAMEL.fullmatch(k) else k): _snake_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_snake_keys(v) for v in value]
    return value


def from_json(data: dict[str, Any]) -> Deliberation | RunsReport:
    """What :func:`to_json` wrote, read back (a kept decision reopened); a seeded deliberation's missing
    timings come back empty, as its Markdown never shows them."""
    snake = _snake_keys(data)
    if "deliberations" in snake:
        snake["deliberations"] = [{"timings": {}, **d} for d in snake["deliberations"]]
        return RunsReport.model_validate(snake)
    return Deliberation.model_validate({"timings": {}, **snake})


class _Writer:
    """Labels of one language, and the small phrases every section repeats."""

    def __init__(self, lang: Lang) -> None:
        self.lang: Lang = lang
        self.c: Catalogue = catalogue("magi")

    def t(self, key: str, **fields: object) -> str:
        return self.c.text(key, self.lang, **fields)

    def verdict(self, verdict: Verdict) -> str:
        return self.t(f"verdict.{verdict.value}")

    def vote(self, vote: Vote | None) -> str:
        if vote is None:
            return self.t("vote.none")
        return self.t("vote.cell", verdict=self.verdict(vote.verdict), confidence=self.number(vote.confidence, 2))

    def number(self, value: float, digits: int = 0) -> str:
        return format_number(value, self.lang, digits)

    def position(self, sage: SageName, vote: Vote) -> str:
        return self.t(
            "position",
            sage=sage.display,
            verdict=self.verdict(vote.verdict),
            confidence=self.number(vote.confidence, 2),
            reason=vote.reason,
        )

    def sages(self, sages: list[SageName]) -> str:
        return ("・" if self.lang == "ja" else ", ").join(s.display for s in sages)


def headline(d: Deliberation) -> str:
    """The decision in the reader's words (a split is never called an approval)."""
    w = _Writer(d.language)
    return w.t("decision.split") if d.split else w.t(f"decision.{d.decision}")


def _finals(d: Deliberation) -> dict[SageName, Vote]:
    return {r.sage: r.final for r in d.votes if r.final is not None}


def _rationale(d: Deliberation, w: _Writer) -> list[str]:
    finals = _finals(d)
    lines = [w.t("rationale.title"), ""]
    if d.decision == "NO_DECISION":
        return [*lines, w.t("rationale.no_decision"), ""]
    if d.split:
        lines += [w.t("rationale.split"), ""]
        lines += [w.position(s, v) for s, v in finals.items()]
        return [*lines, ""]
    decided = Verdict(d.decision)
    majority = {s: v for s, v in finals.items() if v.verdict is decided}
    if majority:
        key = "rationale.unanimous" if len(majority) == len(SAGES) else "rationale.majority"
        lines += [w.t(key, n=len(majority), verdict=w.verdict(decided)), ""]
        lines += [w.position(s, v) for s, v in majority.items()]
    else:  # unanimity required and not reached, or a weighted count: show what was voted
        lines += [w.t("rationale.unanimous_rule"), ""]
        lines += [w.position(s, v) for s, v in finals.items()]
    return [*lines, ""]


def _tally_lines(d: Deliberation, w: _Writer) -> list[str]:
    finals = list(_finals(d).values())
    counts = ("・" if w.lang == "ja" else ", ").join(
        w.t("count", verdict=w.verdict(v), n=sum(1 for f in finals if f.verdict is v)) for v in Verdict
    ) or "—"
    rule = "line.rule.weighted" if d.weighted else f"line.rule.{d.threshold}"
    rounds = w.t("line.rounds", run=d.rounds_run, requested=d.rounds_requested)
    if d.stopped_early:
        why = "stopped.unanimous" if "unanimous" in d.stopped_early else "stopped.stable"
        rounds += w.t("line.stopped", why=w.t(why), saved=d.llm_calls_saved)
    return [
        w.t("line.count", counts=counts, valid=len(finals), abstained=len(d.votes) - len(finals)),
        w.t(rule),
        rounds,
        w.t("line.seed", seed=d.seed),
        w.t("line.exit", code=d.exit_code),
    ]


def _change(record: VoteRecord, d: Deliberation, w: _Writer) -> str:
    c = next((x for x in d.conformity if x.sage is record.sage), None)
    if record.abstained:
        return w.t("change.abstained", reason=record.abstain_reason or w.t("change.no_vote"))
    if c is not None and c.flagged:
        return w.t("change.unargued")
    if c is not None and c.changed:
        return w.t("change.argued", arguments="; ".join(c.arguments))
    return w.t("change.same")


def to_markdown(d: Deliberation) -> str:
    w = _Writer(d.language)
    question = d.question.splitlines()[0] if d.question.strip() else ""
    lines = [w.t("title", decision=headline(d)), "", f"> {question}", "", *_tally_lines(d, w), ""]
    lines += _rationale(d, w)
    if d.dissent and not d.split:
        lines += [w.t("dissent.title"), ""]
        finals = _finals(d)
        lines += [w.position(x.sage, finals[x.sage]) for x in d.dissent if x.sage in finals]
        lines.append("")
    if d.conditions:
        lines += [w.t("conditions.title"), ""]
        if d.split:
            lines += [w.t("conditions.split_note"), ""]
        lines += [w.t("condition", text=c.text, sages=w.sages(c.sages)) for c in d.conditions]
        lines.append("")
    lines += [w.t("votes.title"), "", w.t("votes.header"), "|---|---|---|---|"]
    for record in d.votes:
        lines.append(
            f"| {record.sage.display} | {w.vote(record.blind)} | {w.vote(record.final)} | {_change(record, d, w)} |"
        )
    lines += ["", w.t("thinking.title"), ""]
    for entry in d.thinking:
        out = entry.output
        lines += [f"### {entry.sage.display}", "", out.analysis, ""]
        lines += [f"- {p}" for p in out.key_points]
        lines += ["", w.t("thinking.blind", vote=w.vote(out.vote), reason=out.vote.reason), ""]
    for rnd in d.debate:
        lines += [w.t("debate.title", round=rnd.round), ""]
        for e in rnd.entries:
            names = {p.label: p.sage.display for p in e.peers}
            lines += [f"### {e.sage.display}", ""]
            lines += [
                w.t("debate.rebuttal", peer=names.get(r.peer, w.t("debate.peer_unknown")), point=r.point)
                for r in e.turn.rebuttals
            ]
            lines += [w.t("debate.addition", text=a) for a in e.turn.additions]
            changed = w.t("debate.changed") if e.stance_changed else ""
            lines += [
                w.t("debate.stance", vote=w.vote(e.turn.stance), changed=changed, reason=e.turn.stance.reason),
                "",
            ]
    if d.failures:
        lines += [w.t("failures.title"), ""]
        for f in d.failures:
            phase = w.t("phase.round", round=f.round) if f.round else w.t(f"phase.{f.phase}")
            kind = w.t(f"failure.{f.kind}")
            lines.append(w.t("failure", sage=f.sage.display, phase=phase, kind=kind, message=f.message))
        lines.append("")
    if d.context:
        lines += [w.t("context.title"), ""]
        lines += [
            w.t(
                "context.line",
                sage=c.sage.display,
                phase=w.t(f"phase.{c.phase}"),
                turns=c.turns,
                method=w.t(f"method.{c.method}"),
            )
            for c in d.context
        ]
        lines.append("")
    lines += _usage(d, w)
    return "\n".join(lines).rstrip() + "\n"


def _cost(value: float | str, w: _Writer) -> str:
    return w.t("usage.cost_unknown") if value == "unknown" else f"${float(value):,.4f}"


def _usage(d: Deliberation, w: _Writer) -> list[str]:
    total = d.usage_total
    lines = [
        w.t("usage.title"),
        "",
        w.t(
            "usage.total",
            calls=w.number(total.calls),
            input=w.number(total.input_tokens),
            output=w.number(total.output_tokens),
            cost=_cost(total.cost_usd, w),
        ),
        "",
    ]
    if d.sages:
        lines += [w.t("usage.models_header"), "|---|---|---|"]
        lines += [f"| {m.sage.display} | {m.provider or '—'} | {m.model} |" for m in d.sages]
        lines.append("")
    lines += [w.t("usage.header"), "|---|---|---|---|---|---|"]
    for u in d.usage:
        lines.append(
            f"| {u.sage.display} | {w.t(f'phase.{u.phase}')} | {w.number(u.calls)} | {w.number(u.input_tokens)} "
            f"| {w.number(u.output_tokens)} | {_cost(u.cost_usd, w)} |"
        )
    if not d.reproducible:
        t = d.timings
        debate = "+".join(w.number(x) for x in t.debate_ms) or "0"
        lines += [
            "",
            w.t(
                "timings",
                total=w.number(t.total_ms),
                thinking=w.number(t.thinking_ms),
                debate=debate,
                voting=w.number(t.voting_ms),
            ),
        ]
    return lines


def runs_markdown(report: RunsReport) -> str:
    """Several runs: the distribution (a split counted as a split), the decision only when a majority of
    the runs reached it, and every run labelled with its number and seed."""
    first = report.deliberations[0] if report.deliberations else None
    w = _Writer(first.language if first else "ja")
    sep = "・" if w.lang == "ja" else ", "
    distribution = sep.join(w.t("runs.count", outcome=w.t(f"outcome.{k}"), n=v) for k, v in report.distribution.items())
    if report.decision == "NO_MAJORITY":
        majority = w.t("runs.no_majority", runs=report.runs, needed=report.majority_needed)
    else:
        outcome = w.t(f"outcome.{report.decision}")
        majority = w.t("runs.majority", runs=report.runs, count=report.majority_count, outcome=outcome)
    lines = [
        w.t("runs.title", runs=report.runs, decision=w.t(f"runs.decision.{report.decision}")),
        "",
        majority,
        w.t("runs.distribution", distribution=distribution),
        w.t(
            "runs.flips",
            flips=format_percent(report.flip_rate, w.lang),
            unargued=report.unargued_flips,
        ),
        w.t("line.exit", code=report.exit_code),
        "",
        w.t("runs.header"),
        "|---|---|---|---|",
    ]
    for entry, d in zip(report.outcomes, report.deliberations, strict=True):
        finals = {v.sage: v.final for v in d.votes}
        votes = sep.join(f"{s.display} {w.vote(finals.get(s))}" for s in SAGES)
        label = w.t("runs.label", run=entry.run)
        lines.append(f"| {label} | {entry.seed} | {w.t(f'outcome.{entry.outcome}')} | {votes} |")
    return "\n".join(lines) + "\n"


__all__ = [
    "EXIT_OF",
    "OUTCOMES",
    "Outcome",
    "RunOutcome",
    "RunsDecision",
    "RunsReport",
    "from_json",
    "headline",
    "outcome_of",
    "runs_markdown",
    "summarize_runs",
    "to_json",
    "to_markdown",
]
