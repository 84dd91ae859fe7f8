"""The critic's boundary models: its input (the ideator's output), the LLM's judgement, its output.

JSON is camelCase (``CamelModel``); the exported schemas live in ``data/critic/schemas/`` (kept in
sync by tests/unit/test_critic_models.py) so a downstream analyst step can validate what it reads.
The LLM's numbers are plain floats without bounds on purpose: an out-of-range number must reach
:mod:`critic.scoring`, which logs it, records a warning and applies the documented default, rather
than fail validation and cost a repair call.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from core.llm.base import Message, Usage
from core.llm.cost import UsageSummary
from core.models import CamelModel

MAX_IDEAS = 10
IdeaId = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$")]
ShortText = Annotated[str, Field(max_length=2000)]


class BusinessIdea(CamelModel):
    """One idea as the ideator writes it; fields the critic does not use are ignored."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)

    id: IdeaId
    title: str = Field(min_length=1, max_length=200)
    description: str = Field(min_length=1, max_length=4000)
    target_customer: ShortText | None = None
    customer_problem: ShortText | None = None
    value_proposition: ShortText | None = None
    revenue_model: ShortText | None = None
    estimated_revenue: float | None = Field(None, ge=0, allow_inf_nan=False, description="Yen per year at maturity.")
    estimated_operating_profit: float | None = Field(
        None, allow_inf_nan=False, description="Yen per year at maturity (may be negative)."
    )
    market_opportunity: ShortText | None = None
    competitive_advantage: ShortText | None = None
    implementation_difficulty: ShortText | None = None
    market_research: Annotated[str, Field(max_length=4000)] | None = Field(
        None, description="Findings of a market research step, quoted into the prompt."
    )


def distinct_ids(ideas: list[BusinessIdea]) -> list[BusinessIdea]:
    ids = [i.id for i in ideas]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise ValueError(f"idea id {twice[0]!r} is used twice; every idea needs its own id")
    return ideas


# 1-10 ideas of distinct ids: the one rule for the CLI file, the HTTP body and the Python API
IdeaList = Annotated[list[BusinessIdea], Field(min_length=1, max_length=MAX_IDEAS), AfterValidator(distinct_ids)]


class CriticInput(CamelModel):
    """The ideator's output: ``{"ideas": [BusinessIdea, ...]}`` with 1-10 ideas of distinct ids."""

    model_config = ConfigDict(extra="ignore")

    ideas: IdeaList


# --- what the LLM returns for one idea (one judgement) ---------------------------------------------


def _compact(schema: dict[str, Any]) -> None:
    """No titles in the schema sent to the LLM: ranges and meanings are in the prompt, and every
    token counts against the 2,000-token budget of one judgement."""
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)


class JudgementModel(CamelModel):
    """Base of the LLM's answer models: a compact JSON schema (see :func:`_compact`)."""

    model_config = ConfigDict(json_schema_extra=_compact)


class MarketJudgement(JudgementModel):
    reasoning: str = Field(min_length=1, description="Why these scores: written first, before the scores.")
    size: float
    growth: float
    profitability: float


class CapabilityJudgement(JudgementModel):
    """Stage 1: what the idea needs, and how much of each core capability it uses (points within caps)."""

    required: list[str] = Field(default_factory=list)
    reasoning: str = Field(min_length=1, description="Why these scores: written first, before the scores.")
    development: float
    operations: float
    finance: float
    innovation: float


class ScenarioJudgement(JudgementModel):
    """Stage 2: the concrete story of why Mitsubishi Estate wins, and what it draws on."""

    story: str = Field(min_length=1, description="The concrete story, written before the scores.")
    assets: list[str] = Field(default_factory=list)
    resource_use: float
    brand: float
    strategic_value: float


class VerificationJudgement(JudgementModel):
    """Stage 3: the scenario checked objectively."""

    reasoning: str = Field(min_length=1, description="Why these scores: written first, before the scores.")
    hard_to_copy: str = ""
    logic: float
    feasibility: float
    uniqueness: float
    scale: float


class IdeaJudgement(JudgementModel):
    """The whole structured answer of one judgement of one idea (each part: its reasoning, then scores)."""

    market: MarketJudgement
    capabilities: CapabilityJudgement
    scenario: ScenarioJudgement
    verification: VerificationJudgement
    reasons: list[str] = Field(default_factory=list)


# --- output ------------------------------------------------------------------------------------------


POINT_DIGITS = 1  # points (scores, the total's parts) as shown (critic/scoring.py)


class Weights(CamelModel):
    """Percentages of market and synergy in the total; they add up to 100."""

    model_config = ConfigDict(frozen=True)

    market: float = Field(50.0, ge=0, le=100)
    synergy: float = Field(50.0, ge=0, le=100)

    @model_validator(mode="after")
    def _hundred(self) -> Weights:
        if abs(self.market + self.synergy - 100.0) > 1e-6:
            raise ValueError(f"weights must add up to 100, got {self.market:g}:{self.synergy:g}")
        return self

    def label(self) -> str:
        return f"{self.market:g}:{self.synergy:g}"


def weighted_parts(market: float, synergy: float, weights: Weights) -> tuple[float, float]:
    """(market's part, synergy's part) of the total: ``score x weight / 50`` each, rounded as shown."""
    return round(market * weights.market / 50.0, POINT_DIGITS), round(synergy * weights.synergy / 50.0, POINT_DIGITS)


class MarketBreakdown(CamelModel):
    size: float
    growth: float
    profitability: float
    score: float = Field(description="size + growth + profitability, 0-50.")
    profit_rule: bool = Field(description="Estimated operating profit >= 1 billion yen: market weighted heavier.")
    reasoning: str = ""


class CapabilityPoints(CamelModel):
    capability: str
    name: str
    points: float
    cap: float
    strength_level: int
    strong: bool = Field(description="At least half its cap: counts towards the multiplier.")


class ScenarioBreakdown(CamelModel):
    story: str
    assets: list[str]
    resource_use: float
    brand: float
    strategic_value: float
    score: float = Field(description="(resourceUse + brand + strategicValue) / 30, 0-1, to two decimals.")


class VerificationBreakdown(CamelModel):
    logic: float
    feasibility: float
    uniqueness: float
    scale: float
    hard_to_copy: str
    score: float = Field(description="(logic + feasibility + uniqueness + scale) / 20, 0-1, to two decimals.")


class SynergyBreakdown(CamelModel):
    required_capabilities: list[str]
    capabilities: list[CapabilityPoints]
    mapping: float = Field(description="Sum of the capability points, 0-50.")
    scenario: ScenarioBreakdown
    verification: VerificationBreakdown
    quality: float = Field(description="0.5 + 0.25 x scenario + 0.25 x verification, 0.5-1, to two decimals.")
    strong_capabilities: int
    multiplier: float = Field(description="1.0, or 1.2 / 1.35 / 1.5 for 2 / 3 / 4 strong capabilities.")
    unclamped: float = Field(description="mapping x quality x multiplier, before the clamp to 50.")
    score: float = Field(description="min(50, unclamped), 0-50.")
    reasoning: str = ""


class Breakdown(CamelModel):
    market: MarketBreakdown
    synergy: SynergyBreakdown
    weights: Weights = Field(description="Weights applied to this idea (the profit rule may shift them).")
    market_part: float = Field(description="Market's part of the total: market x its weight / 50.")
    synergy_part: float = Field(description="Synergy's part of the total: synergy x its weight / 50.")
    arithmetic: str = Field(description="The total's arithmetic, spelled out.")

    @model_validator(mode="before")
    @classmethod
    def _parts_of_an_earlier_release(cls, data: Any) -> Any:
        """An evaluation kept by a release before 0.4.0 has no weighted parts: they are its scores and
        weights, computed as they are now (:func:`weighted_parts`)."""
        if not isinstance(data, dict) or "marketPart" in data or "market_part" in data:
            return data
        try:
            weights = data.get("weights") or {}
            parts = weighted_parts(
                float(data["market"]["score"]),
                float(data["synergy"]["score"]),
                weights if isinstance(weights, Weights) else Weights.model_validate(weights),
            )
        except (KeyError, TypeError, ValueError):
            return data  # not an old evaluation either: the fields' own errors say what is missing
        return {**data, "marketPart": parts[0], "synergyPart": parts[1]}


class SampleScore(CamelModel):
    market_score: float
    synergy_score: float
    total_score: float
    tokens: int


class IdeaEvaluation(CamelModel):
    idea_id: str
    title: str
    status: Literal["ok", "failed", "timeout"]
    market_score: float | None = None
    synergy_score: float | None = None
    total_score: float | None = None
    spread: float | None = Field(None, description="max - min of the sample totals (0 with one sample).")
    breakdown: Breakdown | None = None
    reasons: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    error: str | None = None
    samples: list[SampleScore] = Field(default_factory=list)
    tokens: int = Field(0, description="Tokens of the largest single judgement (budget: critic.token_budget).")
    cached: bool = False
    duration_ms: int = 0


class SelectedIdea(CamelModel):
    id: str
    title: str


class ProfileRef(CamelModel):
    name: str
    version: int


class CriticUsage(CamelModel):
    llm: UsageSummary
    token_budget: int
    max_tokens_per_evaluation: int
    over_budget: list[str] = Field(default_factory=list, description="Ideas whose judgement used more than the budget.")


class CriticOutput(CamelModel):
    """The critic's result, read by the analyst step: the selected idea and every evaluation."""

    selected_idea: SelectedIdea | None = Field(
        description="The best idea at or above critic.min_total; null when none reaches it (selectionReason says why)."
    )
    evaluations: list[IdeaEvaluation]
    too_close_to_call: bool
    selection_reason: str
    min_total: float = Field(0.0, description="The bar an idea's total must reach to be selected (critic.min_total).")
    weights: Weights
    samples: int
    profile: ProfileRef
    model: str
    usage: CriticUsage
    timestamp: str
    run_id: str


# Messages between the engine and its critic workers (critic/worker.py).


class JudgeRequest(BaseModel):
    """What the engine sends a critic worker: everything one idea's judgements need; JSON values only."""

    idea_id: str
    system: str
    messages: list[list[Message]] = Field(description="One conversation per sample.")
    temperature: float
    max_tokens: int


class CallUsage(BaseModel):
    """One LLM call a worker made (repairs and retries included)."""

    model: str
    usage: Usage


class SampleResult(BaseModel):
    """One sample's judgement, or the error that left it without one."""

    sample: int
    judgement: IdeaJudgement | None = None
    tokens: int = 0
    error: str | None = None
    attempts: int = 1


class JudgeResult(BaseModel):
    """What a critic worker answers: the samples of one idea, the calls they took, its peak memory."""

    idea_id: str
    samples: list[SampleResult]
    calls: list[CallUsage]
    duration_ms: int
    peak_rss_bytes: int


__all__ = [
    "MAX_IDEAS",
    "POINT_DIGITS",
    "Breakdown",
    "BusinessIdea",
    "CallUsage",
    "CapabilityJudgement",
    "CapabilityPoints",
    "CriticInput",
    "CriticOutput",
    "CriticUsage",
    "IdeaEvaluation",
    "IdeaId",
    "IdeaJudgement",
    "IdeaList",
    "JudgeRequest",
    "JudgeResult",
    "JudgementModel",
    "MarketBreakdown",
    "MarketJudgement",
    "ProfileRef",
    "SampleResult",
    "SampleScore",
    "ScenarioBreakdown",
    "ScenarioJudgement",
    "SelectedIdea",
    "ShortText",
    "SynergyBreakdown",
    "VerificationBreakdown",
    "VerificationJudgement",
    "Weights",
    "distinct_ids",
    "weighted_parts",
]
