"""The critic's arithmetic on hand-worked numbers (the worked example of docs/systems/critic.md is the first test)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from critic.models import BusinessIdea, IdeaEvaluation, IdeaJudgement, Weights
from critic.profile import load_profile
from critic.scoring import (
    DEFAULT_SCORE,
    ScoredSample,
    aggregate,
    multiplier_for,
    rank,
    score_judgement,
    too_close_to_call,
    total_score,
    weights_for,
)

PROFILE = load_profile().base


def judgement(
    market: tuple[float, float, float] = (14, 9, 8),
    capabilities: tuple[float, float, float, float] = (12, 10, 4, 5),
    scenario: tuple[float, float, float] = (8, 7, 6),
    verification: tuple[float, float, float, float] = (4, 4, 3, 4),
    assets: list[str] | None = None,
) -> IdeaJudgement:
    data: dict[str, Any] = {
        "market": {"reasoning": "市場の根拠", **dict(zip(("size", "growth", "profitability"), market, strict=True))},
        "capabilities": {
            "reasoning": "能力の根拠",
            **dict(zip(("development", "operations", "finance", "innovation"), capabilities, strict=True)),
        },
        "scenario": {
            "story": "丸の内のテナント網を使う",
            "assets": assets if assets is not None else ["marunouchi", "tenants"],
            **dict(zip(("resourceUse", "brand", "strategicValue"), scenario, strict=True)),
        },
        "verification": {
            "reasoning": "検証の根拠",
            **dict(zip(("logic", "feasibility", "uniqueness", "scale"), verification, strict=True)),
        },
        "reasons": ["r1"],
    }
    return IdeaJudgement.model_validate(data)


def idea(profit: float | None = None, idea_id: str = "a") -> BusinessIdea:
    return BusinessIdea(id=idea_id, title=f"idea {idea_id}", description="d", estimated_operating_profit=profit)


def test_worked_example_of_the_readme() -> None:
    scored = score_judgement(judgement(), idea(), PROFILE, Weights())
    b = scored.breakdown
    assert b.market.score == 31  # 14 + 9 + 8
    assert b.synergy.mapping == 31  # 12 + 10 + 4 + 5, each within its cap
    assert b.synergy.scenario.score == pytest.approx(0.7)  # (8 + 7 + 6) / 30
    assert b.synergy.verification.score == pytest.approx(0.75)  # (4 + 4 + 3 + 4) / 20
    assert b.synergy.quality == 0.86  # 0.5 + 0.25 x 0.7 + 0.25 x 0.75 = 0.8625, shown (and used) as 0.86
    assert [c.strong for c in b.synergy.capabilities] == [True, True, False, True]  # 12>=7.5, 10>=6.5, 4<6.5, 5>=4.5
    assert b.synergy.multiplier == 1.35  # three strong capabilities
    assert scored.synergy == 36.0  # 31 x 0.86 x 1.35 = 35.991, from the figures shown
    assert scored.total == 67.0 == b.market_part + b.synergy_part  # 50:50: market + synergy
    assert "total 31 x 50 / 50 + 36 x 50 / 50 = 31 + 36 = 67" in b.arithmetic


def test_weights_60_40() -> None:
    scored = score_judgement(judgement(), idea(), PROFILE, Weights(market=60, synergy=40))
    b = scored.breakdown
    assert (b.market_part, b.synergy_part, scored.total) == (37.2, 28.8, 66.0)  # 31 x 60 / 50, 36 x 40 / 50
    assert total_score(50, 50, Weights(market=60, synergy=40)) == 100  # still out of 100
    assert total_score(40, 10, Weights(market=100, synergy=0)) == 80


def test_every_shown_figure_checks_out_from_the_figures_beside_it() -> None:
    """Issue 37 (4): the card said シナジー 32.5 while its breakdown computed 32.3. Every figure is the
    arithmetic of the rounded figures shown beside it, for any raw judgement."""
    import random

    rng = random.Random(7)
    for _ in range(200):
        raw = judgement(
            market=(rng.uniform(0, 20), rng.uniform(0, 15), rng.uniform(0, 15)),
            capabilities=(rng.uniform(0, 15), rng.uniform(0, 13), rng.uniform(0, 13), rng.uniform(0, 9)),
            scenario=(rng.uniform(0, 10), rng.uniform(0, 10), rng.uniform(0, 10)),
            verification=(rng.uniform(0, 5), rng.uniform(0, 5), rng.uniform(0, 5), rng.uniform(0, 5)),
        )
        weights = rng.choice([Weights(), Weights(market=60, synergy=40), Weights(market=70, synergy=30)])
        scored = score_judgement(raw, idea(profit=rng.choice([None, 2e9])), PROFILE, weights)
        b, m, s = scored.breakdown, scored.breakdown.market, scored.breakdown.synergy
        assert all(round(x, 1) == x for x in (m.size, m.growth, m.profitability, m.score, s.mapping, s.score))
        assert m.score == round(m.size + m.growth + m.profitability, 1)
        assert s.mapping == round(sum(c.points for c in s.capabilities), 1)
        assert s.quality == round(0.5 + 0.25 * s.scenario.score + 0.25 * s.verification.score, 2)
        assert s.score == min(50, round(s.mapping * s.quality * s.multiplier, 1))
        assert b.market_part == round(m.score * b.weights.market / 50, 1)
        assert b.synergy_part == round(s.score * b.weights.synergy / 50, 1)
        assert scored.total == round(b.market_part + b.synergy_part, 1)


def test_weights_must_add_up_to_100() -> None:
    with pytest.raises(ValueError, match="add up to 100"):
        Weights(market=60, synergy=50)


def test_profit_rule_from_one_billion_yen_moves_ten_points_to_market() -> None:
    at = score_judgement(judgement(), idea(profit=1_000_000_000), PROFILE, Weights())
    below = score_judgement(judgement(), idea(profit=999_999_999), PROFILE, Weights())
    assert at.breakdown.market.profit_rule and not below.breakdown.market.profit_rule
    assert at.breakdown.weights == Weights(market=60, synergy=40)
    assert at.total == 66.0 and below.total == 67.0
    assert weights_for(Weights(market=60, synergy=40), profit_rule=True) == Weights(market=70, synergy=30)
    assert weights_for(Weights(market=95, synergy=5), profit_rule=True) == Weights(market=100, synergy=0)
    assert score_judgement(judgement(), idea(profit=None), PROFILE, Weights()).breakdown.weights == Weights()


def test_caps_hold_per_capability_and_add_up_to_fifty() -> None:
    assert [c.cap for c in PROFILE.capabilities] == [15, 13, 13, 9]
    assert [c.strength_level for c in PROFILE.capabilities] == [10, 9, 9, 7]
    full = score_judgement(judgement(capabilities=(15, 13, 13, 9)), idea(), PROFILE, Weights())
    assert full.breakdown.synergy.mapping == 50
    assert full.warnings == []


def test_multiplier_rule() -> None:
    assert [multiplier_for(n) for n in range(5)] == [1.0, 1.0, 1.2, 1.35, 1.5]
    # exactly half a cap is strong: development 7.5 of 15 and innovation 4.5 of 9 -> two strong -> 1.2
    two = score_judgement(judgement(capabilities=(7.5, 6.4, 0, 4.5)), idea(), PROFILE, Weights())
    assert two.breakdown.synergy.strong_capabilities == 2 and two.breakdown.synergy.multiplier == 1.2
    one = score_judgement(judgement(capabilities=(15, 6, 6, 4)), idea(), PROFILE, Weights())
    assert one.breakdown.synergy.multiplier == 1.0


def test_synergy_is_clamped_to_fifty() -> None:
    best = score_judgement(
        judgement(capabilities=(15, 13, 13, 9), scenario=(10, 10, 10), verification=(5, 5, 5, 5)),
        idea(),
        PROFILE,
        Weights(),
    )
    assert best.breakdown.synergy.unclamped == 75  # 50 x 1.0 x 1.5
    assert best.synergy == 50


def test_an_unconvincing_scenario_halves_the_mapping_at_worst() -> None:
    weak = score_judgement(
        judgement(capabilities=(6, 6, 6, 4), scenario=(0, 0, 0), verification=(0, 0, 0, 0)), idea(), PROFILE, Weights()
    )
    assert weak.breakdown.synergy.quality == 0.5
    assert weak.synergy == 11  # 22 x 0.5 x 1.0


@pytest.mark.parametrize("bad", [27.0, -1.0, math.nan, math.inf])
def test_out_of_range_numbers_get_the_default_not_the_maximum(bad: float, caplog: pytest.LogCaptureFixture) -> None:
    scored = score_judgement(judgement(market=(bad, 9, 8)), idea(), PROFILE, Weights())
    assert scored.breakdown.market.size == DEFAULT_SCORE == 0
    assert scored.breakdown.market.score == 17  # 0 + 9 + 8, not 20 + 9 + 8
    assert len(scored.warnings) == 1 and "market.size" in scored.warnings[0] and "outside 0-20" in scored.warnings[0]
    assert "market.size" in caplog.text


def test_out_of_range_capability_points_are_not_clamped_to_their_cap() -> None:
    scored = score_judgement(
        judgement(capabilities=(16, 10, 4, 5), verification=(4, 6, 3, 4)), idea(), PROFILE, Weights()
    )
    assert scored.breakdown.synergy.capabilities[0].points == 0  # 16 > 15: default, not 15
    assert scored.breakdown.synergy.verification.feasibility == 0
    assert {w.split(" ")[0] for w in scored.warnings} == {"capabilities.development", "verification.feasibility"}


def test_unknown_assets_are_dropped_with_a_warning() -> None:
    scored = score_judgement(judgement(assets=["outlets", "moon_base"]), idea(), PROFILE, Weights())
    assert scored.breakdown.synergy.scenario.assets == ["outlets"]
    assert any("moon_base" in w for w in scored.warnings)


def sample(total: float, market: float = 0.0, synergy: float = 0.0) -> ScoredSample:
    base = score_judgement(judgement(), idea(), PROFILE, Weights())
    return ScoredSample(market, synergy, total, base.breakdown, [str(total)])


def test_aggregate_takes_the_median_judgement_whole_and_the_range_as_spread() -> None:
    result = aggregate([sample(57, 30, 27), sample(50, 25, 25), sample(52, 26, 26)])
    assert (result.total, result.market, result.synergy, result.spread) == (52, 26, 26, 7)
    assert result.representative.reasons == ["52"]
    assert aggregate([sample(40)]).spread == 0
    # medians of each score would give market 26 and synergy 26 from different judgements; one
    # judgement's scores are kept together (of an even number, the lower middle one)
    even = aggregate([sample(60, 36, 24), sample(50, 20, 30), sample(55, 30, 25), sample(40, 20, 20)])
    assert (even.total, even.market, even.synergy, even.spread) == (50, 20, 30, 20)


def evaluation(
    idea_id: str, total: float, synergy: float = 20, market: float = 20, spread: float = 0
) -> IdeaEvaluation:
    return IdeaEvaluation(
        idea_id=idea_id,
        title=idea_id,
        status="ok",
        total_score=total,
        synergy_score=synergy,
        market_score=market,
        spread=spread,
    )


def test_ties_go_to_synergy_then_market_then_spread_then_id() -> None:
    assert rank([evaluation("a", 60, synergy=30), evaluation("b", 60, synergy=31)])[0].idea_id == "b"
    assert rank([evaluation("a", 60, market=30), evaluation("b", 60, market=29)])[0].idea_id == "a"
    assert rank([evaluation("a", 60, spread=3), evaluation("b", 60, spread=1)])[0].idea_id == "b"
    assert rank([evaluation("b", 60), evaluation("a", 60)])[0].idea_id == "a"
    assert rank([evaluation("a", 59), evaluation("b", 61)])[0].idea_id == "b"


def test_failed_and_timed_out_ideas_are_never_ranked() -> None:
    failed = IdeaEvaluation(idea_id="f", title="f", status="failed", error="boom")
    late = IdeaEvaluation(idea_id="t", title="t", status="timeout", error="late")
    assert [e.idea_id for e in rank([failed, late, evaluation("a", 1)])] == ["a"]


def test_too_close_to_call_when_the_gap_is_within_the_combined_spread() -> None:
    assert too_close_to_call(evaluation("a", 60, spread=3), evaluation("b", 58, spread=0))
    assert too_close_to_call(evaluation("a", 60, spread=1), evaluation("b", 58, spread=1))  # 2 <= 1 + 1
    assert not too_close_to_call(evaluation("a", 60, spread=2), evaluation("b", 50, spread=2))
    assert not too_close_to_call(evaluation("a", 60, spread=5), None)
