"""The consensus protocol: Thinking (with blind votes) -> Debate rounds -> Voting -> tally.

Pure coordination through the runtime seam (in process or on Ray, unchanged); the sages are thin
agents (magi/sage.py). What each sage sees:

- Thinking: only the question. No request contains another sage's output.
- Debate round k: the other two sages' positions from round k-1 (Thinking for round 1), in full,
  under anonymous labels ("Sage A", "Sage B") in an order drawn once per sage from the seed (names in
  the peers' texts are replaced by the labels); ``council.anonymous: false`` shows the names,
  ``council.shuffle_peers: false`` a fixed order. Sages run in parallel within a round.
- Voting: the others' latest positions; the answer must validate as a :class:`Vote` (one repair),
  else the sage abstains and it is recorded.

Early stop (``council.early_stop``, no LLM call decides it): ``unanimous`` skips the Debate when the
three blind votes agree; ``stable`` ends it after a round in which no sage changed its stance;
``both`` (default) applies both. Every failure (exception, timeout after ``council.timeout_s`` per sage
call, invalid output) is recorded per sage and phase, and the others go on.
"""

from __future__ import annotations

import hashlib
import logging
import random
import re
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from core.errors import first_line
from core.llm import LLMClient
from core.llm.fencing import fence
from core.messages import language_of
from core.runtime import Runtime
from core.settings import Settings
from magi.context import estimate_tokens, truncate_text
from magi.events import (
    CouncilDecided,
    CouncilEvent,
    CouncilPhaseName,
    EventCallback,
    PhaseStarted,
    SageAnswered,
    StanceShown,
    phase_progress,
)
from magi.metrics import DELIBERATIONS, PHASE_SECONDS, SAGE_FAILURES, UNARGUED_FLIPS
from magi.models import (
    SAGES,
    ConformityEntry,
    ContextEvent,
    DebateEntry,
    DebateRound,
    DebateTurn,
    Deliberation,
    Dissent,
    Failure,
    PeerView,
    Phase,
    PhaseUsage,
    SageModel,
    SageName,
    SageReply,
    ThinkingEntry,
    ThinkingOutput,
    Timings,
    UsageTotal,
    Verdict,
    Vote,
    VoteRecord,
)
from magi.personas import system_prompts
from magi.prompts import LANGUAGE_NAMES, bundled_prompts
from magi.sage import Sage
from magi.seats import STARTUP_TIMEOUT_S, Seats
from magi.settings import CouncilSettings
from magi.tally import decision_name, exit_code, is_split, merge_conditions, tally

FailureKind = Literal["exception", "timeout", "invalid_output"]
LABELS = ("Sage A", "Sage B")
PEER_SHARE = 4  # a peer's position may take up to budget / PEER_SHARE tokens before it is summarised
_NAMES = re.compile(r"\b(MELCHIOR(?:-1)?|BALTHASAR(?:-2)?|CASPER(?:-3)?)\b", re.IGNORECASE)


def peer_order(viewer: SageName, seed: int, *, shuffle: bool = True) -> list[SageName]:
    """The two peers of ``viewer`` in the order it sees them: a seeded shuffle per sage, or fixed."""
    peers = [s for s in SAGES if s is not viewer]
    if shuffle:
        random.Random(f"magi-peers|{seed}|{viewer.value}").shuffle(peers)
    return peers


def peer_labels(viewer: SageName, seed: int, *, anonymous: bool = True, shuffle: bool = True) -> dict[SageName, str]:
    order = peer_order(viewer, seed, shuffle=shuffle)
    return {s: (LABELS[i] if anonymous else s.display) for i, s in enumerate(order)}


def scrub_names(text: str, labels: Mapping[SageName, str], viewer: SageName) -> str:
    """Peers' names in ``text`` replaced by the labels ``viewer`` knows them by ("you" for itself)."""

    def swap(match: re.Match[str]) -> str:
        sage = SageName(match.group(1).split("-")[0].lower())
        return "you" if sage is viewer else labels[sage]

    return _NAMES.sub(swap, text)


def _vote_lines(vote: Vote) -> list[str]:
    lines = [f"verdict: {vote.verdict.value} (confidence {vote.confidence:.2f})", f"reason: {vote.reason}"]
    lines += [f"condition: {c}" for c in vote.conditions]
    return lines


def thinking_text(output: ThinkingOutput) -> str:
    return "\n".join([_thinking_body(output), *_vote_lines(output.vote)])


def _thinking_body(output: ThinkingOutput) -> str:
    return "\n".join([output.analysis, *(f"- {p}" for p in output.key_points)])


def debate_text(turn: DebateTurn, author_labels: Mapping[SageName, str], viewer_labels: Mapping[SageName, str]) -> str:
    """A debate turn as shown to a viewer: the author's peer labels translated to the viewer's."""
    return "\n".join([_debate_body(turn, author_labels, viewer_labels), *_vote_lines(turn.stance)])


def _debate_body(turn: DebateTurn, author_labels: Mapping[SageName, str], viewer_labels: Mapping[SageName, str]) -> str:
    """Rebuttals and additions of a turn (its stance is rendered apart: never summarised)."""
    by_label = {label: sage for sage, label in author_labels.items()}
    lines = []
    for rebuttal in turn.rebuttals:
        target = by_label.get(rebuttal.peer)
        shown = "a peer" if target is None else viewer_labels.get(target, "you")
        lines.append(f"rebuttal to {shown}: {rebuttal.point}")
    lines += [f"addition: {a}" for a in turn.additions]
    return "\n".join(lines)


@dataclass
class _Position:
    """What a sage last said, as data (to re-render for each viewer); ``summary`` replaces the body
    (analysis, rebuttals, additions) when it was too long for the peers' budget; the stance is
    always shown in full."""

    thinking: ThinkingOutput | None = None
    turn: DebateTurn | None = None
    summary: str | None = None

    def body(self, author_labels: Mapping[SageName, str], viewer_labels: Mapping[SageName, str]) -> str:
        if self.turn is not None:
            return _debate_body(self.turn, author_labels, viewer_labels)
        return _thinking_body(self.thinking) if self.thinking is not None else ""

    def vote(self) -> Vote | None:
        if self.turn is not None:
            return self.turn.stance
        return self.thinking.vote if self.thinking is not None else None

    def render(self, author_labels: Mapping[SageName, str], viewer_labels: Mapping[SageName, str]) -> str:
        vote = self.vote()
        if vote is None:
            return "(no position: this sage gave no valid answer so far)"
        body = self.body(author_labels, viewer_labels)
        if self.summary is not None:
            body = f"{self.summary}\n(summarised by the context manager; the full text is in the deliberation record)"
        return "\n".join([body, *_vote_lines(vote)])


@dataclass
class _State:
    settings: CouncilSettings
    seed: int
    question: str
    seats: Seats
    runtime: Runtime
    on_event: EventCallback | None
    failures: list[Failure] = field(default_factory=list)
    usage: dict[tuple[SageName, Phase], PhaseUsage] = field(default_factory=dict)
    unpriced: set[tuple[SageName, Phase]] = field(default_factory=set)
    context: list[ContextEvent] = field(default_factory=list)
    positions: dict[SageName, _Position] = field(default_factory=lambda: {s: _Position() for s in SAGES})
    labels: dict[SageName, dict[SageName, str]] = field(default_factory=dict)
    answered: set[SageName] = field(default_factory=set)
    sequential: bool = False

    def intro(self, sage: SageName) -> str:
        """The question again for a sage with no answer in its history yet (its Thinking failed)."""
        if sage in self.answered:
            return ""
        again = fence(self.question, "REQUEST")
        return f"The request under deliberation, as data (your earlier answer failed, here it is again):\n{again}\n\n"

    def emit(self, event: CouncilEvent) -> None:
        if self.on_event is not None:
            self.on_event(event.model_copy(update={"run_id": f"s{self.seed}"}))

    def phase(self, phase: CouncilPhaseName, round: int | None = None) -> None:
        progress = phase_progress(phase, round, self.settings.rounds)
        self.emit(PhaseStarted(phase=phase, round=round, progress=progress))

    def count(self, reply: SageReply) -> None:
        key = (reply.sage, reply.phase)
        entry = self.usage.setdefault(key, PhaseUsage(sage=reply.sage, phase=reply.phase))
        entry.calls += reply.calls
        entry.input_tokens += reply.input_tokens
        entry.output_tokens += reply.output_tokens
        if reply.model:
            entry.provider, entry.model = reply.provider, reply.model
        if reply.cost_usd is None:
            self.unpriced.add(key)
            entry.cost_usd = "unknown"
        elif entry.cost_usd != "unknown":
            entry.cost_usd = round(entry.cost_usd + reply.cost_usd, 8)
        if reply.summarised_turns and reply.summary_method:
            self.context.append(
                ContextEvent(
                    sage=reply.sage, phase=reply.phase, turns=reply.summarised_turns, method=reply.summary_method
                )
            )

    def peers_block(self, viewer: SageName) -> str:
        labels = self.labels[viewer]
        blocks = []
        for peer in labels:  # built in the viewer's peer order
            text = self.positions[peer].render(self.labels[peer], labels)
            if self.settings.anonymous:
                text = scrub_names(text, labels, viewer)
            blocks.append(f"### {labels[peer]}\n{text}")
        return fence("\n\n".join(blocks), "PEERS")

    def views(self, viewer: SageName) -> list[PeerView]:
        return [
            PeerView(label=label, sage=p, summarised=self.positions[p].summary is not None)
            for p, label in self.labels[viewer].items()
        ]

    async def condense(self, phase: Phase) -> None:
        """Summarise positions whose body is over a quarter of the budget, each by its own author,
        before the peers see them (deterministic truncation when that fails or times out)."""
        limit = self.settings.context_budget_tokens // PEER_SHARE
        long = {
            s: text
            for s, p in self.positions.items()
            if p.summary is None and estimate_tokens(text := p.body(self.labels[s], self.labels[s])) > limit
        }
        if not long:
            return
        sages = list(long)
        calls = [self.seats.call(s, Sage.condense, long[s]) for s in sages]
        outcomes = await self.runtime.gather(calls, self.settings.timeout_s)
        for sage, outcome in zip(sages, outcomes, strict=True):
            reply = outcome.value if outcome.ok else None
            if reply is not None and reply.output is not None:
                self.count(reply)
                summary = str(reply.output["summary"])
                method: Literal["llm", "truncation"] = "llm" if reply.output["method"] == "llm" else "truncation"
            else:
                summary, method = truncate_text(long[sage]), "truncation"
            self.positions[sage].summary = summary
            self.context.append(ContextEvent(sage=sage, phase=phase, turns=1, method=method, kind="peer_position"))

    async def ask(
        self, phase: Phase, prompts: Mapping[SageName, str], round: int | None = None
    ) -> dict[SageName, dict[str, Any]]:
        """One phase's calls in parallel; the valid outputs by sage (failures recorded)."""
        sages = list(prompts)
        started = time.perf_counter()
        if self.sequential:  # the baseline of benchmarks/magi_speedup.py: one sage after the other
            outcomes = []
            for s in sages:
                outcomes += await self.runtime.gather(
                    [self.seats.call(s, Sage.ask, phase, prompts[s])], self.settings.timeout_s
                )
        else:
            calls = [self.seats.call(s, Sage.ask, phase, prompts[s]) for s in sages]
            outcomes = await self.runtime.gather(calls, self.settings.timeout_s)
        PHASE_SECONDS.observe(time.perf_counter() - started, phase=phase)
        answers: dict[SageName, dict[str, Any]] = {}
        for sage, outcome in zip(sages, outcomes, strict=True):
            if outcome.timed_out:
                self.fail(
                    sage, phase, round, "timeout", f"no answer within {self.settings.timeout_s:g} s (council.timeout_s)"
                )
            elif outcome.error is not None or outcome.value is None:
                error = outcome.error or RuntimeError("no reply")
                self.fail(sage, phase, round, "exception", f"{type(error).__name__}: {first_line(error, 300)}")
                await self.recover(sage, error)
            else:
                reply = outcome.value
                self.count(reply)
                if reply.output is None:
                    self.fail(
                        sage, phase, round, "invalid_output", first_line(RuntimeError(reply.error or "no output"), 300)
                    )
                else:
                    answers[sage] = reply.output
                    self.answered.add(sage)
            stance = _stance_of(answers.get(sage))
            self.emit(SageAnswered(sage=sage.value, phase=phase, round=round, ok=sage in answers, stance=stance))
        return answers

    async def recover(self, sage: SageName, error: BaseException) -> None:
        """A sage whose actor died is started again for the next phase, with the question repeated (its
        history went with the actor); when that fails too, its later phases fail as this one did."""
        try:
            if await self.seats.reseat(sage, error):
                self.answered.discard(sage)
        except Exception as exc:  # recorded below; the deliberation goes on with the others
            logging.getLogger(__name__).warning("sage %s could not be started again: %s", sage.display, exc)

    def fail(self, sage: SageName, phase: Phase, round: int | None, kind: FailureKind, message: str) -> None:
        logging.getLogger(__name__).warning("sage %s failed in %s: %s", sage.display, phase, message)
        self.failures.append(Failure(sage=sage, phase=phase, round=round, kind=kind, message=message))
        SAGE_FAILURES.inc(phase=phase, kind=kind)


def _stance_of(output: Mapping[str, Any] | None) -> StanceShown | None:
    """The vote inside a phase's output (Thinking's ``vote``, Debate's ``stance``, or the Vote itself)."""
    if output is None:
        return None
    vote = output.get("vote") or output.get("stance") or output
    if not isinstance(vote, Mapping) or "verdict" not in vote:
        return None
    try:
        return StanceShown.model_validate(dict(vote))
    except ValueError:
        return None


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def conformity(
    sage: SageName, blind: Vote | None, final: Vote | None, turns: Sequence[DebateTurn], thinking: ThinkingOutput | None
) -> ConformityEntry:
    """Blind -> final; the change counts as argued when the sage named an argument new to it."""
    changed = blind is not None and final is not None and blind.verdict is not final.verdict
    earlier = " ".join(
        _norm(t) for t in ([thinking.analysis, *thinking.key_points, thinking.vote.reason] if thinking else [])
    )
    arguments = [a for t in turns for a in t.stance.new_arguments] + (list(final.new_arguments) if final else [])
    new = [a for a in arguments if _norm(a) and _norm(a) not in earlier]
    return ConformityEntry(
        sage=sage,
        blind=blind.verdict if blind else None,
        final=final.verdict if final else None,
        changed=changed,
        new_argument=changed and bool(new),
        flagged=changed and not new,
        arguments=new,
    )


def _dissent(decision: Verdict | None, finals: Mapping[SageName, Vote | None]) -> list[Dissent]:
    if decision is None:
        return []
    return [
        Dissent(sage=s, verdict=v.verdict, reason=v.reason)
        for s in SAGES
        if (v := finals.get(s)) is not None and v.verdict is not decision
    ]


def record_id(seed: int, question: str) -> str:
    """The deliberation's id, from its seed and request: the same seeded request is the same record
    (the sages' actor keys use a random run id, so two concurrent runs never share actors)."""
    return hashlib.sha256(f"{seed}|{question}".encode()).hexdigest()[:12]


def _sage_models(usage: list[PhaseUsage]) -> list[SageModel]:
    """Each sage's provider and model, as its answers reported them (the last phase that answered)."""
    found = {u.sage: SageModel(sage=u.sage, provider=u.provider, model=u.model) for u in usage if u.model}
    return [found[s] for s in SAGES if s in found]


async def deliberate(
    question: str,
    settings: Settings,
    runtime: Runtime,
    *,
    seed: int | None = None,
    overrides: Mapping[SageName, Sequence[tuple[str, str]]] | None = None,
    clients: Mapping[SageName, LLMClient] | None = None,
    on_event: EventCallback | None = None,
    sequential: bool = False,
) -> Deliberation:
    """Run one deliberation on ``question``; ``clients`` (tests) replace the configured LLM per sage;
    ``sequential`` asks the sages one after the other (the benchmark's baseline, like the origin)."""
    cfg = CouncilSettings.of(settings)
    given = seed if seed is not None else cfg.seed
    seed = given if given is not None else random.SystemRandom().randrange(2**31)
    run_id = uuid.uuid4().hex[:12]
    prompts = bundled_prompts()
    systems = system_prompts(overrides)
    started = time.monotonic()
    seats = Seats(run_id, runtime, cfg, settings.llm, systems, clients=clients)
    state = _State(cfg, seed, question, seats, runtime, on_event, sequential=sequential)
    state.labels = {s: peer_labels(s, seed, anonymous=cfg.anonymous, shuffle=cfg.shuffle_peers) for s in SAGES}
    session = f"s{seed}"  # the seed, not the run id: the same seed replays the same scripted deliberation
    language = language_of(question)
    words = {"language": LANGUAGE_NAMES[language], "labels": prompts.labels.strip()}
    timings = Timings()
    try:
        # A conversation on each resident sage (its actor starts only on the cluster's first use).
        t0 = time.monotonic()
        await seats.open()
        timings.setup_ms = int((time.monotonic() - t0) * 1000)
        # --- Thinking: isolated, with blind votes --------------------------------------------------
        state.phase("thinking")
        t0 = time.monotonic()
        raw = await state.ask(
            "thinking",
            {s: prompts.thinking.format(session=session, question=fence(question, "REQUEST"), **words) for s in SAGES},
        )
        timings.thinking_ms = int((time.monotonic() - t0) * 1000)
        thinking: dict[SageName, ThinkingOutput] = {s: ThinkingOutput.model_validate(o) for s, o in raw.items()}
        for sage, output in thinking.items():
            state.positions[sage] = _Position(thinking=output)
        blind = {s: o.vote for s, o in thinking.items()}
        stance: dict[SageName, Vote] = dict(blind)

        # --- Debate ----------------------------------------------------------------------------------
        rounds: list[DebateRound] = []
        stopped: str | None = None
        saved = 0
        verdicts = {v.verdict for v in blind.values()}
        if cfg.rounds and cfg.early_stop in ("unanimous", "both") and len(blind) == len(SAGES) and len(verdicts) == 1:
            stopped = "the blind votes were unanimous"
            saved = cfg.rounds * len(SAGES)
        turns_of: dict[SageName, list[DebateTurn]] = {s: [] for s in SAGES}
        for k in range(1, cfg.rounds + 1) if stopped is None else ():
            state.phase("debate", k)
            t0 = time.monotonic()
            source = "their Thinking" if k == 1 else f"debate round {k - 1}"
            await state.condense("debate")
            asks = {
                s: state.intro(s)
                + prompts.debate.format(
                    session=session, round=k, rounds=cfg.rounds, source=source, peers=state.peers_block(s), **words
                )
                for s in SAGES
            }
            views = {s: state.views(s) for s in SAGES}
            raw = await state.ask("debate", asks, round=k)
            entries = []
            changed = []
            for sage in SAGES:
                if sage not in raw:
                    continue
                turn = DebateTurn.model_validate(raw[sage])
                previous = stance.get(sage)
                moved = previous is not None and previous.verdict is not turn.stance.verdict
                if moved:
                    changed.append(sage)
                stance[sage] = turn.stance
                turns_of[sage].append(turn)
                entries.append(DebateEntry(sage=sage, turn=turn, peers=views[sage], stance_changed=moved))
            for entry in entries:  # positions move only after the round: everyone saw round k-1
                state.positions[entry.sage] = _Position(thinking=state.positions[entry.sage].thinking, turn=entry.turn)
            rounds.append(DebateRound(round=k, entries=entries, changed=changed))
            timings.debate_ms.append(int((time.monotonic() - t0) * 1000))
            if entries and not changed and cfg.early_stop in ("stable", "both") and k < cfg.rounds:
                stopped = f"no sage changed its stance in round {k}"
                saved = (cfg.rounds - k) * len(SAGES)
                break

        # --- Voting ----------------------------------------------------------------------------------
        state.phase("voting")
        t0 = time.monotonic()
        await state.condense("voting")
        asks = {}
        for sage in SAGES:
            b = blind.get(sage)
            shown = f"{b.verdict.value} (confidence {b.confidence:.2f})" if b else "not cast (your Thinking failed)"
            asks[sage] = state.intro(sage) + prompts.voting.format(
                session=session, peers=state.peers_block(sage), blind=shown, **words
            )
        raw = await state.ask("voting", asks)
        timings.voting_ms = int((time.monotonic() - t0) * 1000)
        finals: dict[SageName, Vote | None] = {s: (Vote.model_validate(raw[s]) if s in raw else None) for s in SAGES}
        decision, reason = tally(finals, cfg.threshold, weighted=cfg.weighted, quorum=cfg.quorum)
        state.emit(CouncilDecided(decision=decision_name(decision), progress=100.0))
        DELIBERATIONS.inc(decision=decision_name(decision))
        transcripts = await seats.close()
    finally:
        await seats.close()  # after a failure or a cancel too (a no-op after the one above)
    timings.total_ms = int((time.monotonic() - started) * 1000)
    abstain = {f.sage: f.message for f in state.failures if f.phase == "voting"}
    votes = [
        VoteRecord(
            sage=s, blind=blind.get(s), final=finals[s], abstained=finals[s] is None, abstain_reason=abstain.get(s)
        )
        for s in SAGES
    ]
    phases = ("thinking", "debate", "voting", "summary", "review")
    usage = [state.usage[k] for k in sorted(state.usage, key=lambda k: (SAGES.index(k[0]), phases.index(k[1])))]
    unknown = bool(state.unpriced)
    total = UsageTotal(
        calls=sum(u.calls for u in usage),
        input_tokens=sum(u.input_tokens for u in usage),
        output_tokens=sum(u.output_tokens for u in usage),
        cost_usd="unknown" if unknown else round(sum(float(u.cost_usd) for u in usage), 8),
    )
    return _count_flips(
        Deliberation(
            id=record_id(seed, question),
            reproducible=given is not None,
            question=question,
            language=language,
            seed=seed,
            threshold=cfg.threshold,
            weighted=cfg.weighted,
            anonymous=cfg.anonymous,
            rounds_requested=cfg.rounds,
            rounds_run=len(rounds),
            stopped_early=stopped,
            llm_calls_saved=saved,
            decision=decision_name(decision),
            decision_reason=reason,
            split=is_split(finals, decision),
            exit_code=exit_code(decision),
            votes=votes,
            conditions=merge_conditions(finals),
            dissent=_dissent(decision, finals),
            thinking=[ThinkingEntry(sage=s, output=thinking[s]) for s in SAGES if s in thinking],
            debate=rounds,
            conformity=[conformity(s, blind.get(s), finals[s], turns_of[s], thinking.get(s)) for s in SAGES],
            failures=state.failures,
            usage=usage,
            usage_total=total,
            sages=_sage_models(usage),
            timings=timings,
            context=state.context,
            peer_order={
                s.value: [
                    PeerView(label=state.labels[s][p], sage=p) for p in peer_order(s, seed, shuffle=cfg.shuffle_peers)
                ]
                for s in SAGES
            },
            transcripts=transcripts,
        )
    )


def _count_flips(deliberation: Deliberation) -> Deliberation:
    UNARGUED_FLIPS.inc(sum(1 for c in deliberation.conformity if c.flagged))
    return deliberation


__all__ = [
    "LABELS",
    "STARTUP_TIMEOUT_S",
    "conformity",
    "debate_text",
    "deliberate",
    "peer_labels",
    "peer_order",
    "record_id",
    "scrub_names",
    "thinking_text",
]
