"""Analyses cached in the store by content hash, reused across agents, iterations and runs."""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa

from core.store import Store, register_migration
from nlp.analysis import TextAnalysis

register_migration(
    "nlp_cache",
    1,
    """
    CREATE TABLE nlp_analyses (
        content_hash TEXT PRIMARY KEY,
        analysis_json TEXT NOT NULL,
        created_at TEXT NOT NULL
    );
    """,
)


class AnalysisCache:
    def __init__(self, store: Store) -> None:
        self._store = store

    def get_many(self, keys: list[str]) -> dict[str, TextAnalysis]:
        found: dict[str, TextAnalysis] = {}
        for start in range(0, len(keys), 500):  # stay under SQLite's bound-parameter limit
            chunk = keys[start : start + 500]
            marks = ",".join(f":k{i}" for i in range(len(chunk)))
            for key, blob in self._store.query(
                f"SELECT content_hash, analysis_json FROM nlp_analyses WHERE content_hash IN ({marks})",
                {f"k{i}": k for i, k in enumerate(chunk)},
            ):
                found[key] = TextAnalysis.model_validate_json(blob)
        return found

    def put_many(self, analyses: list[TextAnalysis]) -> None:
        if not analyses:
            return
        now = datetime.now(UTC).isoformat()
        unique = {a.content_hash: a for a in analyses}  # one row per key, even within one batch
        with self._store.transaction() as conn:
            conn.execute(
                sa.text(
                    "INSERT INTO nlp_analyses (content_hash, analysis_json, created_at) VALUES (:hash, :json, :at)"
                    " ON CONFLICT (content_hash) DO UPDATE SET analysis_json=excluded.analysis_json,"
                    " created_at=excluded.created_at"
                ),
                [{"hash": a.content_hash, "json": a.model_dump_json(), "at": now} for a in unique.values()],
            )


__all__ = [
    "AnalysisCache",
]
