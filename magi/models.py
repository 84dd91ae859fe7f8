"""The council's data: sages, votes, what each phase produced, failures, and the whole deliberation.

Everything here is a pydantic model holding JSON values only, so it crosses Ray process boundaries
and is the structured record the output (Markdown, JSON) is rendered from.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import AliasGenerator, BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

from core.models import CamelModel

# What the LLM must answer with: snake_case keys in the schema the model sees (validation), camelCase
# in the JSON output like every other key of a deliberation (serialization by alias).
LLM_SCHEMA = ConfigDict(extra="forbid", alias_generator=AliasGenerator(serialization_alias=to_camel))


class SageName(StrEnum):
    """The three sages, in their canonical order (used only where an order must be fixed)."""

    MELCHIOR = "melchior"
    BALTHASAR = "balthasar"
    CASPER = "casper"

    @property
    def display(self) -> str:
        """The sage's full name, e.g. ``MELCHIOR-1``."""
        return SAGE_TITLES[self]

    @property
    def role(self) -> str:
        """The LLM role (per-role model and parameters: ``llm.models['magi.melchior']``)."""
        return f"magi.{self.value}"


SAGE_TITLES = {
    SageName.MELCHIOR: "MELCHIOR-1",
    SageName.BALTHASAR: "BALTHASAR-2",
    SageName.CASPER: "CASPER-3",
}
SAGES: tuple[SageName, ...] = tuple(SageName)


class Verdict(StrEnum):
    APPROVE = "APPROVE"
    DENY = "DENY"
    CONDITIONAL = "CONDITIONAL"


Phase = Literal["thinking", "debate", "voting", "summary", "review"]


class Vote(BaseModel):
    """A sage's verdict with its reason, confidence (0-1) and, for CONDITIONAL, its conditions.

    This is also the schema the LLM must answer with in the Voting phase.
    """

    model_config = LLM_SCHEMA

    verdict: Verdict
    reason: str = Field(min_length=1)
    confidence: float = Field(ge=0, le=1)
    conditions: list[str] = Field(default_factory=list)
    new_arguments: list[str] = Field(
        default_factory=list, description="Arguments not in your earlier answers that moved you (empty if none)."
    )

    @field_validator("conditions", "new_arguments")
    @classmethod
    def _no_blanks(cls, items: list[str]) -> list[str]:
        return [i.strip() for i in items if i.strip()]


class ThinkingOutput(BaseModel):
    """Thinking: an independent analysis and a blind vote cast before seeing anyone else."""

    model_config = LLM_SCHEMA

    analysis: str = Field(min_length=1)
    key_points: list[str] = Field(default_factory=list)
    vote: Vote


class Rebuttal(BaseModel):
    model_config = LLM_SCHEMA

    peer: str = Field(description="The peer's label as shown to you (e.g. 'Sage A').")
    point: str = Field(min_length=1)


class DebateTurn(BaseModel):
    """Debate: rebuttals to the peers, additions, and the sage's current stance."""

    model_config = LLM_SCHEMA

    rebuttals: list[Rebuttal] = Field(default_factory=list)
    additions: list[str] = Field(default_factory=list)
    stance: Vote


class Summary(BaseModel):
    """What the context manager asks for when a sage's history nears its budget."""

    model_config = LLM_SCHEMA

    summary: str = Field(min_length=1)


class SageReply(CamelModel):
    """One sage call as the sage actor returns it: the validated output or why there is none."""

    sage: SageName
    phase: Phase
    output: dict[str, object] | None = None
    error: str | None = None
    error_kind: Literal["invalid_output"] | None = None
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0
    model: str = ""
    provider: str = ""  # who answered, e.g. "openai (127.0.0.1:8000)"
    duration_ms: int = 0
    summarised_turns: int = 0
    summary_method: Literal["llm", "truncation"] | None = None


class Failure(CamelModel):
    """A sage call that produced nothing usable; the others went on."""

    sage: SageName
    phase: Phase
    round: int | None = None
    kind: Literal["exception", "timeout", "invalid_output"]
    message: str


class PeerView(CamelModel):
    """How one peer was shown to one sage in one round."""

    label: str
    sage: SageName
    summarised: bool = False  # its position's body was summarised by the context manager


class DebateEntry(CamelModel):
    sage: SageName
    turn: DebateTurn
    peers: list[PeerView]
    stance_changed: bool


class DebateRound(CamelModel):
    round: int
    entries: list[DebateEntry]
    changed: list[SageName] = Field(default_factory=list)


class ThinkingEntry(CamelModel):
    sage: SageName
    output: ThinkingOutput


class VoteRecord(CamelModel):
    sage: SageName
    blind: Vote | None = None
    final: Vote | None = None
    abstained: bool = False
    abstain_reason: str | None = None


class ConformityEntry(CamelModel):
    """Blind vote -> final vote of one sage; a flip without a new argument is flagged."""

    sage: SageName
    blind: Verdict | None
    final: Verdict | None
    changed: bool
    new_argument: bool
    flagged: bool
    arguments: list[str] = Field(default_factory=list)


class Condition(CamelModel):
    """One merged condition and the sages that asked for it."""

    text: str
    sages: list[SageName]


class Dissent(CamelModel):
    sage: SageName
    verdict: Verdict
    reason: str


class PhaseUsage(CamelModel):
    sage: SageName
    phase: Phase
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | Literal["unknown"] = 0.0
    provider: str = ""  # of the phase's last answer (a sage may run on its own vendor: llm.roles)
    model: str = ""


class SageModel(CamelModel):
    """Which provider and model one sage ran on (each sage may have its own: ``llm.roles.magi.<sage>``)."""

    sage: SageName
    provider: str
    model: str


class Timings(CamelModel):
    total_ms: int = 0
    setup_ms: int = 0  # opening the conversations on the resident sages (their start on first use)
    thinking_ms: int = 0
    debate_ms: list[int] = Field(default_factory=list)
    voting_ms: int = 0


class ContextEvent(CamelModel):
    """The context manager summarised some of a sage's oldest turns (``history``), or a position of
    the sage too long to show its peers in full (``peer_position``)."""

    sage: SageName
    phase: Phase
    turns: int
    method: Literal["llm", "truncation"]
    kind: Literal["history", "peer_position"] = "history"


class UsageTotal(CamelModel):
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | Literal["unknown"] = 0.0


class Deliberation(CamelModel):
    """The whole deliberation as structured data: what the output formats and the API render."""

    id: str
    question: str
    language: Literal["ja", "en"] = "ja"  # of the request: every text for people is written in it
    seed: int
    reproducible: bool = Field(
        False, description="The seed was given (--seed): the same request replays exactly; JSON has no timings."
    )
    threshold: str
    weighted: bool
    anonymous: bool
    rounds_requested: int
    rounds_run: int
    stopped_early: str | None = None
    llm_calls_saved: int = 0
    decision: Literal["APPROVE", "DENY", "CONDITIONAL", "NO_DECISION"]
    decision_reason: str
    split: bool = Field(
        False, description="No majority: the sages' positions differ and none is shared by two (see every vote)."
    )
    exit_code: int
    votes: list[VoteRecord]
    conditions: list[Condition]
    dissent: list[Dissent]
    thinking: list[ThinkingEntry]
    debate: list[DebateRound]
    conformity: list[ConformityEntry]
    failures: list[Failure]
    usage: list[PhaseUsage]
    usage_total: UsageTotal
    sages: list[SageModel] = Field(default_factory=list)
    timings: Timings
    context: list[ContextEvent] = Field(default_factory=list)
    peer_order: dict[str, list[PeerView]] = Field(default_factory=dict)
    transcripts: dict[str, list[dict[str, str]]] = Field(default_factory=dict)


__all__ = [
    "LLM_SCHEMA",
    "SAGES",
    "SAGE_TITLES",
    "Condition",
    "ConformityEntry",
    "ContextEvent",
    "DebateEntry",
    "DebateRound",
    "DebateTurn",
    "Deliberation",
    "Dissent",
    "Failure",
    "PeerView",
    "Phase",
    "PhaseUsage",
    "Rebuttal",
    "SageModel",
    "SageName",
    "SageReply",
    "Summary",
    "ThinkingEntry",
    "ThinkingOutput",
    "Timings",
    "UsageTotal",
    "Verdict",
    "Vote",
    "VoteRecord",
]
