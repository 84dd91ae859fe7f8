"""All of the critic's arithmetic, as pure functions over the LLM's raw judgement (docs/systems/critic.md).

The LLM only judges; every cap, weight and rule is applied here, so it is the same for every model
and every idea and can be checked by hand:

* **Out of range.** A raw number outside its range (or not finite) is logged, recorded in the
  idea's ``warnings`` and replaced by :data:`DEFAULT_SCORE` (0: a number we cannot trust earns no
  credit). It is never clamped to the maximum, which would reward a broken answer with full marks.
* **Market, 0-50** = size (0-20) + growth (0-15) + profitability (0-15).
* **Profit rule.** Estimated operating profit >= 1 billion yen moves :data:`PROFIT_WEIGHT_SHIFT`
  (10) percentage points of weight from synergy to market for that idea (50:50 -> 60:40, 60:40 ->
  70:30; the market weight stops at 100).
* **Synergy, 0-50**, the spec's three stages:
  1. capability mapping: points per core capability, each within its cap (15 / 13 / 13 / 9, which
     add up to 50); ``mapping`` is their sum;
  2. scenario: resource use, brand, strategic value (0-10 each) -> ``scenario = sum / 30``;
  3. verification: logic, feasibility, uniqueness, scale (0-5 each) -> ``verification = sum / 20``;
  ``quality = 0.5 + 0.25 x scenario + 0.25 x verification`` (an unconvincing story halves the
  mapping at worst); the multiplier is 1.2 / 1.35 / 1.5 when 2 / 3 / 4 capabilities are *strong*
  (at least half their cap), else 1.0; ``synergy = min(50, mapping x quality x multiplier)``.
* **Total, 0-100** = market's part + synergy's part, each part = ``score x weight / 50``
  (``(market x marketWeight + synergy x synergyWeight) / 50``): at 50:50 simply market + synergy.
* **One rounding rule**, so every figure shown can be checked from the figures shown beside it: each
  number is rounded where it is made, to the decimals it is shown with (points to one decimal, the
  0-1 factors scenario, verification and quality to two), and the next step works on the rounded
  number. The total is the sum of its two rounded parts.
* **Samples.** With several judgements the idea's scores are those of its median judgement (by total;
  of an even number, the lower of the middle two), so its market, synergy and total always come from
  one judgement and add up; ``spread`` is the range of the totals.
* **Ranking.** Highest total; ties go to the higher synergy, then the higher market, then the smaller
  spread, then the smaller idea id.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from critic.models import (
    POINT_DIGITS,
    Breakdown,
    BusinessIdea,
    CapabilityPoints,
    IdeaEvaluation,
    IdeaJudgement,
    MarketBreakdown,
    MarketJudgement,
    ScenarioBreakdown,
    SynergyBreakdown,
    VerificationBreakdown,
    Weights,
    weighted_parts,
)
from critic.profile import CAPABILITY_IDS, SYNERGY_MAX, CapabilityProfile

log = logging.getLogger(__name__)

DEFAULT_SCORE = 0.0
MARKET_PARTS: dict[str, float] = {"size": 20.0, "growth": 15.0, "profitability": 15.0}
SCENARIO_PART_MAX = 10.0
VERIFICATION_PART_MAX = 5.0
PROFIT_THRESHOLD_YEN = 1_000_000_000
PROFIT_WEIGHT_SHIFT = 10.0
STRONG_SHARE = 0.5
MULTIPLIERS: dict[int, float] = {0: 1.0, 1: 1.0, 2: 1.2, 3: 1.35, 4: 1.5}
QUALITY_FLOOR = 0.5
TOTAL_MAX = 100.0
DIGITS = POINT_DIGITS  # points (scores, parts, capability points) as shown
FACTOR_DIGITS = 2  # the 0-1 factors (scenario, verification, quality) as shown


def checked(value: float, maximum: float, where: str, warnings: list[str]) -> float:
    """``value`` (to one decimal, as shown) when it lies in ``[0, maximum]``; otherwise
    :data:`DEFAULT_SCORE`, logged and warned."""
    if math.isfinite(value) and 0.0 <= value <= maximum:
        return _r(value)
    message = f"{where} = {value:g} is outside 0-{maximum:g}; the default {DEFAULT_SCORE:g} was used instead"
    log.warning("critic: %s", message)
    warnings.append(message)
    return DEFAULT_SCORE


def _r(value: float) -> float:
    return round(value, DIGITS)


def _f(value: float) -> float:
    return round(value, FACTOR_DIGITS)


def profit_rule_applies(idea: BusinessIdea) -> bool:
    profit = idea.estimated_operating_profit
    return profit is not None and profit >= PROFIT_THRESHOLD_YEN


def score_market(judgement: MarketJudgement, *, profit_rule: bool, warnings: list[str]) -> MarketBreakdown:
    parts = {
        name: checked(getattr(judgement, name), maximum, f"market.{name}", warnings)
        for name, maximum in MARKET_PARTS.items()
    }
    return MarketBreakdown(
        size=parts["size"],
        growth=parts["growth"],
        profitability=parts["profitability"],
        score=_r(sum(parts.values())),
        profit_rule=profit_rule,
        reasoning=judgement.reasoning,
    )


def weights_for(weights: Weights, *, profit_rule: bool) -> Weights:
    """The weights of one idea: the configured ones, shifted towards market by the profit rule."""
    if not profit_rule:
        return weights
    market = min(100.0, weights.market + PROFIT_WEIGHT_SHIFT)
    return Weights(market=market, synergy=100.0 - market)


def multiplier_for(strong: int) -> float:
    """1.0 for fewer than two strong capabilities; 1.2, 1.35, 1.5 for two, three, four."""
    return MULTIPLIERS[max(0, min(strong, len(CAPABILITY_IDS)))]


def score_synergy(judgement: IdeaJudgement, profile: CapabilityProfile, warnings: list[str]) -> SynergyBreakdown:
    capabilities: list[CapabilityPoints] = []
    for capability in profile.capabilities:
        raw = getattr(judgement.capabilities, capability.id)
        points = checked(raw, capability.cap, f"capabilities.{capability.id}", warnings)
        capabilities.append(
            CapabilityPoints(
                capability=capability.id,
                name=capability.name,
                points=points,
                cap=capability.cap,
                strength_level=capability.strength_level,
                strong=points >= STRONG_SHARE * capability.cap,
            )
        )
    mapping = _r(sum(c.points for c in capabilities))

    s = judgement.scenario
    resource_use = checked(s.resource_use, SCENARIO_PART_MAX, "scenario.resourceUse", warnings)
    brand = checked(s.brand, SCENARIO_PART_MAX, "scenario.brand", warnings)
    strategic = checked(s.strategic_value, SCENARIO_PART_MAX, "scenario.strategicValue", warnings)
    scenario_score = _f((resource_use + brand + strategic) / (3 * SCENARIO_PART_MAX))
    known = set(profile.asset_ids)
    unknown = [a for a in s.assets if a not in known]
    if unknown:
        listed = ", ".join(profile.asset_ids)
        warnings.append(f"scenario.assets: unknown asset id(s) {', '.join(unknown)} ignored (known: {listed})")

    v = judgement.verification
    parts = [
        checked(getattr(v, name), VERIFICATION_PART_MAX, f"verification.{name}", warnings)
        for name in ("logic", "feasibility", "uniqueness", "scale")
    ]
    verification_score = _f(sum(parts) / (4 * VERIFICATION_PART_MAX))

    quality = _f(QUALITY_FLOOR + 0.25 * scenario_score + 0.25 * verification_score)
    strong = sum(c.strong for c in capabilities)
    multiplier = multiplier_for(strong)
    unclamped = _r(mapping * quality * multiplier)
    return SynergyBreakdown(
        required_capabilities=judgement.capabilities.required,
        capabilities=capabilities,
        mapping=mapping,
        scenario=ScenarioBreakdown(
            story=s.story,
            assets=[a for a in s.assets if a in known],
            resource_use=resource_use,
            brand=brand,
            strategic_value=strategic,
            score=scenario_score,
        ),
        verification=VerificationBreakdown(
            logic=parts[0],
            feasibility=parts[1],
            uniqueness=parts[2],
            scale=parts[3],
            hard_to_copy=v.hard_to_copy,
            score=verification_score,
        ),
        quality=quality,
        strong_capabilities=strong,
        multiplier=multiplier,
        unclamped=unclamped,
        score=min(SYNERGY_MAX, unclamped),
        reasoning=judgement.capabilities.reasoning,
    )


def total_score(market: float, synergy: float, weights: Weights) -> float:
    """The sum of the two weighted parts: out of 100; market + synergy at 50:50."""
    return _r(sum(weighted_parts(market, synergy, weights)))


@dataclass
class ScoredSample:
    """One judgement with all the arithmetic applied."""

    market: float
    synergy: float
    total: float
    breakdown: Breakdown
    reasons: list[str]
    warnings: list[str] = field(default_factory=list)
    tokens: int = 0


def score_judgement(
    judgement: IdeaJudgement, idea: BusinessIdea, profile: CapabilityProfile, weights: Weights, tokens: int = 0
) -> ScoredSample:
    warnings: list[str] = []
    rule = profit_rule_applies(idea)
    market = score_market(judgement.market, profit_rule=rule, warnings=warnings)
    synergy = score_synergy(judgement, profile, warnings)
    applied = weights_for(weights, profit_rule=rule)
    market_part, synergy_part = weighted_parts(market.score, synergy.score, applied)
    total = _r(market_part + synergy_part)
    arithmetic = (
        f"market {market.size:g} + {market.growth:g} + {market.profitability:g} = {market.score:g}; "
        f"synergy min(50, {synergy.mapping:g} x {synergy.quality:g} x {synergy.multiplier:g}) = {synergy.score:g}; "
        f"total {market.score:g} x {applied.market:g} / 50 + {synergy.score:g} x {applied.synergy:g} / 50 = "
        f"{market_part:g} + {synergy_part:g} = {total:g}"
        + (" (operating profit >= 1 billion yen: market weighted heavier)" if rule else "")
    )
    breakdown = Breakdown(
        market=market,
        synergy=synergy,
        weights=applied,
        market_part=market_part,
        synergy_part=synergy_part,
        arithmetic=arithmetic,
    )
    return ScoredSample(market.score, synergy.score, total, breakdown, list(judgement.reasons), warnings, tokens)


@dataclass(frozen=True)
class Aggregate:
    market: float
    synergy: float
    total: float
    spread: float
    representative: ScoredSample


def aggregate(samples: Sequence[ScoredSample]) -> Aggregate:
    """The median judgement's scores (by total; of an even number, the lower of the middle two; the
    earliest of equal totals), so market, synergy and total come from one judgement and add up;
    spread = max - min of the totals."""
    if not samples:
        raise ValueError("aggregate() needs at least one scored sample")
    ordered = sorted(range(len(samples)), key=lambda i: (samples[i].total, i))
    median = samples[ordered[(len(samples) - 1) // 2]]
    totals = [s.total for s in samples]
    return Aggregate(
        market=median.market,
        synergy=median.synergy,
        total=median.total,
        spread=_r(max(totals) - min(totals)),
        representative=median,
    )


def ranking_key(evaluation: IdeaEvaluation) -> tuple[float, float, float, float, str]:
    """Sort key (ascending = best first): total, synergy, market (higher first), spread (smaller), id."""
    return (
        -(evaluation.total_score or 0.0),
        -(evaluation.synergy_score or 0.0),
        -(evaluation.market_score or 0.0),
        evaluation.spread or 0.0,
        evaluation.idea_id,
    )


def rank(evaluations: Sequence[IdeaEvaluation]) -> list[IdeaEvaluation]:
    """The ``ok`` evaluations, best first (failed and timed-out ideas are never selected)."""
    return sorted((e for e in evaluations if e.status == "ok"), key=ranking_key)


def too_close_to_call(first: IdeaEvaluation, second: IdeaEvaluation | None) -> bool:
    """True when the top two totals differ by no more than their spreads combined (a tie included)."""
    if second is None:
        return False
    gap = (first.total_score or 0.0) - (second.total_score or 0.0)
    return gap <= (first.spread or 0.0) + (second.spread or 0.0) + 1e-9


__all__ = [
    "DEFAULT_SCORE",
    "DIGITS",
    "FACTOR_DIGITS",
    "MARKET_PARTS",
    "MULTIPLIERS",
    "PROFIT_THRESHOLD_YEN",
    "PROFIT_WEIGHT_SHIFT",
    "QUALITY_FLOOR",
    "SCENARIO_PART_MAX",
    "STRONG_SHARE",
    "TOTAL_MAX",
    "VERIFICATION_PART_MAX",
    "Aggregate",
    "ScoredSample",
    "aggregate",
    "checked",
    "multiplier_for",
    "profit_rule_applies",
    "rank",
    "ranking_key",
    "score_judgement",
    "score_market",
    "score_synergy",
    "too_close_to_call",
    "total_score",
    "weighted_parts",
    "weights_for",
]
