"""The critic engine end to end in process (InProcessRuntime: same code path as on Ray, no Ray).

The LLM is the shipped scripted judge, or tests/unit/providers/critic_faults.py where a test needs
failures, slowness or wild numbers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.errors import ConfigError, LLMNotConfiguredError
from core.resources import data_path
from core.runtime import InProcessRuntime
from core.settings import Settings, load_settings
from core.store import open_store
from critic import repository
from critic.engine import evaluate_ideas
from critic.errors import CriticError
from critic.models import CriticInput, CriticOutput
from tests.unit.providers import critic_faults

SCRIPTED = "python:critic.scripted:judge"
FAULTS = "python:tests.unit.providers.critic_faults:judge"


def settings(provider: str = SCRIPTED, **critic: Any) -> Settings:
    return load_settings(
        None,
        {"llm": {"provider": provider, "backoff_initial_s": 0.01, "backoff_max_s": 0.02}, "critic": critic},
    )


def sample_ideas() -> CriticInput:
    return CriticInput.model_validate_json(data_path("critic", "examples", "ideas.json").read_text(encoding="utf-8"))


def ideas(*titles: str) -> CriticInput:
    return CriticInput.model_validate(
        {
            "ideas": [
                {"id": f"i{n}", "title": t, "description": f"丸の内のテナント向けサービス {t}", "estimatedRevenue": 1e9}
                for n, t in enumerate(titles, start=1)
            ]
        }
    )


async def run(data: CriticInput, s: Settings, **kwargs: Any) -> CriticOutput:
    return await evaluate_ideas(data, s, InProcessRuntime(), **kwargs)


@pytest.fixture(autouse=True)
def reset_calls() -> None:
    critic_faults.CALLS.clear()


async def test_five_ideas_scored_in_three_stages_and_the_best_selected() -> None:
    s = settings()
    store = open_store(s)
    out = await run(sample_ideas(), s, store=store, run_id="r1")
    assert [e.status for e in out.evaluations] == ["ok"] * 5
    best = max(out.evaluations, key=lambda e: e.total_score or 0)
    assert out.selected_idea.id == best.idea_id
    for e in out.evaluations:
        b = e.breakdown
        assert b is not None
        assert b.synergy.required_capabilities  # stage 1
        assert b.synergy.scenario.story  # stage 2
        assert 0 <= b.synergy.verification.score <= 1  # stage 3
        assert e.total_score == pytest.approx(e.market_score + e.synergy_score, abs=0.011) or b.market.profit_rule
        assert 0 < e.tokens <= 8400 and not e.warnings  # critic.token_budget, sized by benchmarks/critic_tokens.py
    assert out.usage.llm.calls == 5 and out.usage.over_budget == []
    rows = repository.run_evaluations(store, "r1")
    assert len(rows) == 5 and {r["status"] for r in rows} == {"ok"}
    dumped = json.loads(out.model_dump_json(by_alias=True))
    assert {"selectedIdea", "evaluations", "tooCloseToCall", "weights", "usage", "timestamp"} <= set(dumped)
    assert {"ideaId", "marketScore", "synergyScore", "totalScore", "breakdown", "reasons", "warnings"} <= set(
        dumped["evaluations"][0]
    )


async def test_each_idea_is_judged_alone_so_order_does_not_change_its_scores() -> None:
    forward = await run(sample_ideas(), settings())
    data = sample_ideas()
    backward = await run(CriticInput(ideas=list(reversed(data.ideas))), settings())
    assert {e.idea_id: e.total_score for e in forward.evaluations} == {
        e.idea_id: e.total_score for e in backward.evaluations
    }
    assert forward.selected_idea == backward.selected_idea


async def test_a_failed_idea_is_reported_and_left_out_of_the_selection() -> None:
    out = await run(ideas("good one", "FAIL here", "another"), settings(FAULTS, min_total=0))
    failed = next(e for e in out.evaluations if e.idea_id == "i2")
    assert failed.status == "failed" and "scripted outage" in (failed.error or "")
    assert failed.total_score is None
    assert out.selected_idea is not None and out.selected_idea.id in {"i1", "i3"}
    assert critic_faults.CALLS["FAIL here"] == 3  # the first call and the platform's 2 retries


async def test_a_transient_failure_is_retried() -> None:
    out = await run(ideas("FLAKY idea"), settings(FAULTS))
    assert out.evaluations[0].status == "ok"
    assert critic_faults.CALLS["FLAKY idea"] == 2


async def test_a_failed_sample_is_left_out_of_the_median_with_a_warning() -> None:
    out = await run(ideas("HALF broken"), settings(FAULTS, samples=3))
    e = out.evaluations[0]
    assert e.status == "ok" and len(e.samples) == 2
    assert any(w.startswith("sample 2: ") and "left out of the median" in w for w in e.warnings)


async def test_all_failing_raises_critic_error_naming_every_idea() -> None:
    with pytest.raises(CriticError) as caught:
        await run(ideas("FAIL a", "FAIL b"), settings(FAULTS))
    message = str(caught.value)
    assert "\n" not in message
    assert "i1: " in message and "i2: " in message and "scripted outage" in message
    assert set(caught.value.failures) == {"i1", "i2"}


async def test_the_timeout_returns_finished_ideas_and_marks_the_others() -> None:
    out = await run(ideas("quick", "SLOW idea"), settings(FAULTS, timeout_s=1.0, min_total=0))
    by_id = {e.idea_id: e for e in out.evaluations}
    assert by_id["i1"].status == "ok"
    assert by_id["i2"].status == "timeout" and "1 s" in (by_id["i2"].error or "")
    assert out.selected_idea is not None and out.selected_idea.id == "i1"


async def test_only_timeouts_is_a_critic_error() -> None:
    with pytest.raises(CriticError, match="i1: not evaluated within"):
        await run(ideas("SLOW idea"), settings(FAULTS, timeout_s=0.5))


async def test_an_out_of_range_number_is_a_warning_and_gets_the_default() -> None:
    out = await run(ideas("WILD numbers"), settings(FAULTS))
    e = out.evaluations[0]
    assert e.breakdown is not None and e.breakdown.market.size == 0
    assert any("market.size = 99 is outside 0-20" in w for w in e.warnings)


async def test_a_cache_hit_makes_no_llm_call_and_no_cache_does() -> None:
    s = settings(FAULTS)
    store = open_store(s)
    first = await run(ideas("cached idea"), s, store=store)
    assert critic_faults.CALLS["cached idea"] == 1
    again = await run(ideas("cached idea"), s, store=store)
    assert critic_faults.CALLS["cached idea"] == 1  # no LLM call
    assert again.evaluations[0].cached and again.usage.llm.calls == 0
    assert again.evaluations[0].total_score == first.evaluations[0].total_score
    await run(ideas("cached idea"), settings(FAULTS, cache=False), store=store)
    assert critic_faults.CALLS["cached idea"] == 2
    await run(ideas("cached idea"), settings(FAULTS, market_weight=60, synergy_weight=40), store=store)
    assert critic_faults.CALLS["cached idea"] == 3  # other weights: another key


async def test_samples_report_median_and_spread() -> None:
    out = await run(sample_ideas(), settings(samples=3))
    for e in out.evaluations:
        assert len(e.samples) == 3
        totals = sorted(s.total_score for s in e.samples)
        assert e.total_score == totals[1] and e.spread == pytest.approx(totals[2] - totals[0])
    assert any((e.spread or 0) > 0 for e in out.evaluations)
    assert out.usage.llm.calls == 15


async def test_the_same_idea_twice_is_too_close_to_call() -> None:
    data = CriticInput.model_validate(
        {
            "ideas": [
                {**i.model_dump(by_alias=True), "id": f"copy-{n}"} for n, i in enumerate(sample_ideas().ideas[:1] * 2)
            ]
        }
    )
    out = await run(data, settings(samples=3))
    assert out.too_close_to_call and "too close to call" in out.selection_reason
    assert out.selected_idea.id == "copy-0"  # the tie goes to the smaller id
    clear = await run(sample_ideas(), settings(samples=3))
    ranked = sorted(clear.evaluations, key=lambda e: -(e.total_score or 0))
    gap = (ranked[0].total_score or 0) - (ranked[1].total_score or 0)
    assert clear.too_close_to_call == (gap <= (ranked[0].spread or 0) + (ranked[1].spread or 0))


async def test_the_same_input_scored_twice_stays_within_five_points() -> None:
    """The spec's consistency rule (±5): every sample within 5 of its median, and two runs' medians too."""
    first = await run(sample_ideas(), settings(samples=5))
    second = await run(sample_ideas(), settings(samples=5))
    for a, b in zip(first.evaluations, second.evaluations, strict=True):
        assert abs((a.total_score or 0) - (b.total_score or 0)) <= 5
        assert all(abs(s.total_score - (a.total_score or 0)) <= 5 for s in a.samples)


async def test_a_judgement_over_the_token_budget_is_a_warning_with_the_figure() -> None:
    out = await run(ideas("budget"), settings(token_budget=100))
    e = out.evaluations[0]
    assert e.status == "ok" and out.usage.over_budget == ["i1"]
    assert any(f"used {e.tokens} tokens, over the budget of 100" in w for w in e.warnings)


async def test_no_llm_configured_fails_before_any_work(tmp_path: Path) -> None:
    s = load_settings(None, {})
    store = open_store(s)
    with pytest.raises(LLMNotConfiguredError, match="MAGI_LLM_PROVIDER"):
        await run(ideas("x"), s, store=store, run_id="none")
    assert repository.run_evaluations(store, "none") == []


async def test_a_role_temperature_outside_the_spec_range_is_refused() -> None:
    s = load_settings(None, {"llm": {"provider": SCRIPTED, "params": {"critic.worker": {"temperature": 0.7}}}})
    with pytest.raises(ConfigError, match=r"llm.params\['critic.worker'\].temperature is 0.7 .* needs 0.3-0.5"):
        await run(ideas("x"), s)
    default = load_settings(None, {"llm": {"provider": SCRIPTED, "params": {"default": {"temperature": 0.0}}}})
    with pytest.raises(ConfigError, match=r"llm.params\['default'\].temperature is 0 and would apply to the critic"):
        await run(ideas("x"), default)
    fine = {"default": {"temperature": 0.0}, "critic.worker": {"temperature": 0.3}}
    out = await run(ideas("x"), load_settings(None, {"llm": {"provider": SCRIPTED, "params": fine}}))
    assert out.evaluations[0].status == "ok"


async def test_weights_that_do_not_add_up_are_refused() -> None:
    with pytest.raises(ConfigError, match="must add up to 100"):
        await run(ideas("x"), settings(market_weight=70, synergy_weight=40))


async def test_an_industry_profile_adds_its_criteria() -> None:
    out = await run(ideas("x"), settings(industry="healthcare"))
    assert out.profile.name == "mitsubishi_estate@1+healthcare@1"
    with pytest.raises(ConfigError, match=r"no industry profile 'space'.*healthcare"):
        await run(ideas("x"), settings(industry="space"))


async def test_each_stage_of_each_idea_is_logged_as_json(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO", logger="critic.engine")
    await run(ideas("logged"), settings(), run_id="logrun")
    lines = [json.loads(r.getMessage().removeprefix("critic ")) for r in caplog.records if '"stage"' in r.getMessage()]
    assert [line["stage"] for line in lines] == [
        "market",
        "stage1_capabilities",
        "stage2_scenario",
        "stage3_verification",
        "multiplier",
        "arithmetic",
    ]
    assert {line["run"] for line in lines} == {"logrun"} and {line["idea"] for line in lines} == {"i1"}
    assert lines[2]["detail"]["story"]
