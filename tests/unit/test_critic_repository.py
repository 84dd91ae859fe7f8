"""Evaluations in ``critic_evaluations`` on both store backends (SQLite and a real PostgreSQL)."""

from __future__ import annotations

from core.runtime import InProcessRuntime
from core.settings import load_settings
from core.store import Store
from critic import repository
from critic.engine import evaluate_ideas
from critic.models import CriticInput


async def test_every_evaluation_is_stored_with_its_breakdowns_and_found_by_its_key(store_url: str) -> None:
    settings = load_settings(None, {"store_url": store_url, "llm": {"provider": "python:critic.scripted:judge"}})
    store = Store(store_url)
    ideas = CriticInput.model_validate(
        {
            "ideas": [
                {
                    "id": "a",
                    "title": "丸の内DX",
                    "description": "丸の内のテナント向けAIサービス",
                    "estimatedRevenue": 3e9,
                },
                {"id": "b", "title": "物流ファンド", "description": "物流施設の開発とファンド組成"},
            ]
        }
    )
    out = await evaluate_ideas(ideas, settings, InProcessRuntime(), store=store, run_id="run-1")
    rows = {r["idea_id"]: r for r in repository.run_evaluations(store, "run-1")}
    assert set(rows) == {"a", "b"}
    for evaluation in out.evaluations:
        row = rows[evaluation.idea_id]
        b = evaluation.breakdown
        assert b is not None
        assert row["status"] == "ok" and row["cached"] == 0 and row["total_score"] == evaluation.total_score
        assert (row["market_size"], row["market_growth"], row["market_profitability"]) == (
            b.market.size,
            b.market.growth,
            b.market.profitability,
        )
        assert (row["synergy_resource_use"], row["synergy_brand"], row["synergy_strategic_value"]) == (
            b.synergy.scenario.resource_use,
            b.synergy.scenario.brand,
            b.synergy.scenario.strategic_value,
        )
        assert row["synergy_multiplier"] == b.synergy.multiplier
        found = repository.cached_evaluation(store, str(row["cache_key"]))
        assert found is not None and found.total_score == evaluation.total_score
    again = await evaluate_ideas(ideas, settings, InProcessRuntime(), store=Store(store_url), run_id="run-2")
    assert all(e.cached for e in again.evaluations) and again.usage.llm.calls == 0
    assert {r["cached"] for r in repository.run_evaluations(store, "run-2")} == {1}
