"""Evaluations in the store: table ``critic_evaluations`` (SQLite or PostgreSQL, core/store.py).

Every evaluation of every run is one row: its scores, the market and synergy breakdowns as columns
(the spec's size / growth / profitability and resource use / brand / strategic value), the full
evaluation as JSON, and the cache key under which a later run finds it.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

import sqlalchemy as sa

from core.store import Store, register_migration
from critic.models import IdeaEvaluation

register_migration(
    "critic",
    1,
    """
    CREATE TABLE critic_evaluations (
        evaluation_id TEXT PRIMARY KEY,
        run_id TEXT NOT NULL,
        idea_id TEXT NOT NULL,
        title TEXT NOT NULL,
        status TEXT NOT NULL,
        cache_key TEXT NOT NULL,
        cached INTEGER NOT NULL,
        market_score DOUBLE PRECISION,
        synergy_score DOUBLE PRECISION,
        total_score DOUBLE PRECISION,
        spread DOUBLE PRECISION,
        market_size DOUBLE PRECISION,
        market_growth DOUBLE PRECISION,
        market_profitability DOUBLE PRECISION,
        synergy_resource_use DOUBLE PRECISION,
        synergy_brand DOUBLE PRECISION,
        synergy_strategic_value DOUBLE PRECISION,
        synergy_multiplier DOUBLE PRECISION,
        market_weight DOUBLE PRECISION NOT NULL,
        synergy_weight DOUBLE PRECISION NOT NULL,
        model TEXT NOT NULL,
        profile TEXT NOT NULL,
        samples INTEGER NOT NULL,
        tokens INTEGER NOT NULL,
        error TEXT,
        evaluation_json TEXT NOT NULL,
        created_at TEXT NOT NULL
    );
    CREATE INDEX critic_evaluations_cache ON critic_evaluations(cache_key, status);
    CREATE INDEX critic_evaluations_run ON critic_evaluations(run_id)
    """,
)


def save_evaluation(
    store: Store,
    evaluation: IdeaEvaluation,
    *,
    run_id: str,
    cache_key: str,
    market_weight: float,
    synergy_weight: float,
    model: str,
    profile: str,
    samples: int,
) -> str:
    """Store one evaluation (any status); returns its id."""
    evaluation_id = uuid.uuid4().hex
    b = evaluation.breakdown
    row = {
        "evaluation_id": evaluation_id,
        "run_id": run_id,
        "idea_id": evaluation.idea_id,
        "title": evaluation.title,
        "status": evaluation.status,
        "cache_key": cache_key,
        "cached": int(evaluation.cached),
        "market_score": evaluation.market_score,
        "synergy_score": evaluation.synergy_score,
        "total_score": evaluation.total_score,
        "spread": evaluation.spread,
        "market_size": b.market.size if b else None,
        "market_growth": b.market.growth if b else None,
        "market_profitability": b.market.profitability if b else None,
        "synergy_resource_use": b.synergy.scenario.resource_use if b else None,
        "synergy_brand": b.synergy.scenario.brand if b else None,
        "synergy_strategic_value": b.synergy.scenario.strategic_value if b else None,
        "synergy_multiplier": b.synergy.multiplier if b else None,
        "market_weight": market_weight,
        "synergy_weight": synergy_weight,
        "model": model,
        "profile": profile,
        "samples": samples,
        "tokens": evaluation.tokens,
        "error": evaluation.error,
        "evaluation_json": evaluation.model_dump_json(by_alias=True),
        "created_at": datetime.now(UTC).isoformat(),
    }
    columns = ", ".join(row)
    values = ", ".join(f":{k}" for k in row)
    with store.transaction() as conn:
        conn.execute(sa.text(f"INSERT INTO critic_evaluations ({columns}) VALUES ({values})"), row)
    return evaluation_id


def cached_evaluation(store: Store, cache_key: str) -> IdeaEvaluation | None:
    """The newest successful evaluation stored under ``cache_key``, or None."""
    rows = store.query(
        "SELECT evaluation_json FROM critic_evaluations WHERE cache_key = :key AND status = 'ok' "
        "ORDER BY created_at DESC LIMIT 1",
        {"key": cache_key},
    )
    if not rows:
        return None
    return IdeaEvaluation.model_validate(json.loads(rows[0][0]))


def run_evaluations(store: Store, run_id: str) -> list[dict[str, object]]:
    """The rows of one run (columns by name), oldest first: for analysts and tests."""
    rows = store.query("SELECT * FROM critic_evaluations WHERE run_id = :run ORDER BY created_at", {"run": run_id})
    return [dict(r._mapping) for r in rows]


__all__ = ["cached_evaluation", "run_evaluations", "save_evaluation"]
