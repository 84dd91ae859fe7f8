"""The critic's past runs, kept for the person who asked (table ``critic_runs``, core/history.py).

``critic_evaluations`` keeps every idea's evaluation for analysts and the cache, with no owner; this
keeps each run's whole answer for whoever asked for it, so they can list and reopen their own runs.
"""

from __future__ import annotations

from typing import Any

from core.history import TABLE_SQL, History, Record
from core.store import Store, register_migration
from critic.models import CriticOutput

TABLE = "critic_runs"
register_migration("critic_runs", 1, TABLE_SQL.format(table=TABLE))


def runs(store: Store) -> History:
    return History(store, TABLE)


def remember(store: Store, owner: str, out: CriticOutput) -> Record:
    """Keep one critic run's answer for ``owner``: titled by its ideas, its outcome the selection."""
    selected = next((e for e in out.evaluations if out.selected_idea and e.idea_id == out.selected_idea.id), None)
    summary: dict[str, Any] = {
        "ideas": len(out.evaluations),
        "selected": out.selected_idea.title if out.selected_idea else None,
        "total": selected.total_score if selected else None,
    }
    title = " / ".join(e.title for e in out.evaluations)
    outcome = "selected" if out.selected_idea else "none"
    return runs(store).add(owner, title, outcome, summary, out.model_dump(mode="json", by_alias=True))


__all__ = ["TABLE", "remember", "runs"]
