"""Research runs in the store: accepted, running, completed or failed, with the result JSON."""

from __future__ import annotations

from datetime import UTC, datetime

from core.store import Store
from research.result import ResearchResult


def _now() -> str:
    return datetime.now(UTC).isoformat()


def record_started(store: Store, run_id: str, topic: str) -> None:
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO research_runs (run_id, topic, status, started_at) VALUES (?, ?, 'running', ?)",
            (run_id, topic, _now()),
        )


def record_completed(store: Store, result: ResearchResult) -> None:
    with store.transaction() as conn:
        conn.execute(
            "UPDATE research_runs SET status='completed', completed_at=?, result_json=? WHERE run_id=?",
            (_now(), result.model_dump_json(by_alias=True), result.run_id),
        )


def record_failed(store: Store, run_id: str, error: str) -> None:
    with store.transaction() as conn:
        conn.execute(
            "UPDATE research_runs SET status='failed', completed_at=?, error=? WHERE run_id=?",
            (_now(), error, run_id),
        )


def load_result(store: Store, run_id: str) -> ResearchResult | None:
    rows = store.query("SELECT result_json FROM research_runs WHERE run_id=? AND status='completed'", (run_id,))
    return ResearchResult.model_validate_json(rows[0][0]) if rows else None
