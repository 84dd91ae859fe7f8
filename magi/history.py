"""The council's past decisions, kept for the person who asked (table ``magi_decisions``, core/history.py).

Each ask over HTTP or from the CLI is one record: the question's first line as its title, the outcome
(a split counted as ``SPLIT``; several runs: the majority outcome or ``NO_MAJORITY``) and the whole
JSON answer, so reopening one shows exactly what was answered.
"""

from __future__ import annotations

from typing import Any

from core.history import TABLE_SQL, History, Record
from core.store import Store, register_migration
from magi.models import Deliberation
from magi.output import RunsReport, outcome_of, to_json

TABLE = "magi_decisions"
register_migration("magi_decisions", 1, TABLE_SQL.format(table=TABLE))


def decisions(store: Store) -> History:
    return History(store, TABLE)


def remember(store: Store, owner: str, result: Deliberation | RunsReport) -> Record:
    """Keep one answer of the council for ``owner``."""
    first = result.deliberations[0] if isinstance(result, RunsReport) else result
    summary: dict[str, Any] = {"language": first.language, "runs": 1}
    if isinstance(result, RunsReport):
        outcome = str(result.decision)
        summary.update(runs=result.runs, distribution=dict(result.distribution))
    else:
        outcome = outcome_of(result)
    question = first.question.strip().splitlines()[0] if first.question.strip() else ""
    return decisions(store).add(owner, question, outcome, summary, to_json(result))


__all__ = ["TABLE", "decisions", "remember"]
