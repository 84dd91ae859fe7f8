"""Council events: where a deliberation is (``phase``), which sage answered (``sage``), and its
decision (``decided``). They stream over HTTP (``POST /magi/ask/stream``) and draw the CLI's progress
lines; ``runId`` is the deliberation's seed (``s<seed>``), so the events of ``runs`` > 1 stay apart."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from core.events import Event

CouncilPhaseName = Literal["thinking", "debate", "voting", "summary", "review"]


class PhaseStarted(Event):
    """A phase begins (``round`` counts debate rounds from 1)."""

    type: Literal["phase"] = "phase"
    phase: CouncilPhaseName
    round: int | None = None


class StanceShown(BaseModel):
    """The position a sage took in an answer (blind vote, debate stance or final vote), so that a page
    can show each sage's verdict as it comes in, before the deliberation ends."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, serialize_by_alias=True)

    verdict: Literal["APPROVE", "DENY", "CONDITIONAL"]
    confidence: float
    reason: str
    conditions: list[str] = Field(default_factory=list)


class SageAnswered(Event):
    """One sage's answer to a phase came back (``ok``, with its ``stance`` when the phase asks for one)
    or failed (timeout, bad output, error)."""

    type: Literal["sage"] = "sage"
    sage: str
    phase: CouncilPhaseName
    round: int | None = None
    ok: bool
    stance: StanceShown | None = None


class CouncilDecided(Event):
    """The votes are counted."""

    type: Literal["decided"] = "decided"
    decision: Literal["APPROVE", "DENY", "CONDITIONAL", "NO_DECISION"]


CouncilEvent = PhaseStarted | SageAnswered | CouncilDecided
EventCallback = Callable[[CouncilEvent], None]


def phase_progress(phase: CouncilPhaseName, round: int | None, rounds: int) -> float:
    """How far a deliberation of ``rounds`` debate rounds is when ``phase`` starts, in percent."""
    steps = rounds + 2  # thinking, each debate round, voting
    done = {"thinking": 0, "debate": round or 1, "voting": rounds + 1}.get(phase, steps)
    return round_percent(100 * done / steps)


def round_percent(value: float) -> float:
    return float(f"{min(100.0, max(0.0, value)):.1f}")


__all__ = [
    "CouncilDecided",
    "CouncilEvent",
    "CouncilPhaseName",
    "EventCallback",
    "PhaseStarted",
    "SageAnswered",
    "StanceShown",
    "phase_progress",
    "round_percent",
]
