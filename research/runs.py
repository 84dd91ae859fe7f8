"""Research runs in the store (accepted -> running -> completed | failed) with their result and events.

The CLI and the Serve app share these functions; the terminal event is stored in the same
transaction as the final status, so whoever sees the event also finds the result. A run executed by
a Serve replica has an owner (research/run_queue.py): writes that name an ``owner`` are fenced, so a
replica whose lease was taken over cannot add events or a final status to the run any more.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from core.errors import first_line
from core.events import Event
from core.store import Store, register_migration, unavailable
from core.telemetry.context import current_request_id
from research.errors import LeaseLost
from research.events import ResearchFailed
from research.metrics import RUNS
from research.result import ConsensusResearchResult

log = logging.getLogger(__name__)


def _now() -> str:
    return datetime.now(UTC).isoformat()


register_migration(
    "research",
    2,
    """
    ALTER TABLE research_runs ADD COLUMN request_json TEXT;
    ALTER TABLE research_runs ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
    """,
)


# The request that started a run (core/telemetry/context.py), so one id finds the run, its logs and trace.
# A component of its own: its migrations never collide with the run table's.
register_migration("research_request_ids", 1, "ALTER TABLE research_runs ADD COLUMN request_id TEXT;")


def record_started(
    store: Store, run_id: str, topic: str, *, status: str = "running", request: dict[str, Any] | None = None
) -> None:
    """A new run: ``running`` when it starts at once (CLI), ``accepted`` when it waits (HTTP). ``request``
    (the HTTP body) lets another replica run it again (research/run_queue.py)."""
    with store.transaction() as conn:
        conn.execute(
            sa.text(
                "INSERT INTO research_runs (run_id, topic, status, started_at, request_json, attempts, request_id) "
                "VALUES (:run_id, :topic, :status, :at, :request, :attempts, :request_id)"
            ),
            {
                "run_id": run_id,
                "topic": topic,
                "status": status,
                "at": _now(),
                "request": json.dumps(request, ensure_ascii=False) if request else None,
                "attempts": int(status == "running"),
                "request_id": current_request_id(),
            },
        )
    RUNS.inc(state=status)


register_migration(  # the lease of the replica that runs it (research/run_queue.py)
    "research",
    3,
    """
    ALTER TABLE research_runs ADD COLUMN owner TEXT;
    ALTER TABLE research_runs ADD COLUMN heartbeat_at DOUBLE PRECISION;
    ALTER TABLE research_runs ADD COLUMN lease_until DOUBLE PRECISION;
    """,
)

register_migration(
    "research_events",
    1,
    """
    CREATE TABLE research_events (
        run_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        type TEXT NOT NULL,
        json TEXT NOT NULL,
        ts TEXT NOT NULL,
        PRIMARY KEY (run_id, seq)
    );
    """,
)

# Who submitted a run (the fingerprint of the API key the HTTP guard accepted; NULL: the CLI, or the
# one local client of a service without keys) and which client it counts against (deployments/identity.py).
# A component of its own, like the request ids: its migration never collides with the run table's.
register_migration(
    "research_callers",
    1,
    """
    ALTER TABLE research_runs ADD COLUMN submitter TEXT;
    ALTER TABLE research_runs ADD COLUMN client TEXT;
    CREATE INDEX research_runs_client ON research_runs(client, status);
    """,
)

UNFINISHED = ("accepted", "running")
TERMINAL_EVENTS = frozenset({"researchCompleted", "researchFailed"})


@dataclass(frozen=True)
class RunRecord:
    run_id: str
    topic: str
    status: str
    started_at: str  # when the run was accepted
    completed_at: str | None
    error: str | None
    result_json: str | None
    request_id: str | None = None  # the request that started it (an HTTP request, a command, a batch job)
    submitter: str = ""  # whose run it is (sessions.ids.owner_of of the key; "": the local client)


@dataclass(frozen=True)
class StoredEvent:
    seq: int
    type: str
    json: str


def mark_running(store: Store, run_id: str) -> bool:
    """``accepted`` -> ``running`` (one more attempt); False when the run is no longer waiting."""
    with store.transaction() as conn:
        cur = conn.execute(
            sa.text(
                "UPDATE research_runs SET status='running', attempts=attempts+1 "
                "WHERE run_id=:run_id AND status='accepted'"
            ),
            {"run_id": run_id},
        )
        return cur.rowcount == 1


EVENT_LOCK_SPACE = 0x7365  # first key of the advisory locks that order one run's events on PostgreSQL


def _append(conn: Connection, run_id: str, event: Event, owner: str | None = None) -> int:
    """Next ``seq`` is MAX+1: writers of one run take turns, so none is lost or numbered twice.

    SQLite's ``BEGIN IMMEDIATE`` already serialises writers; PostgreSQL (READ COMMITTED) needs a
    lock held until commit: an advisory lock on the run id, which works even before the run row exists.
    With ``owner``, the run must still be that replica's (a takeover appends under the same lock).
    """
    if conn.dialect.name == "postgresql":
        conn.execute(
            sa.text("SELECT pg_advisory_xact_lock(:space, hashtext(:run_id))"),
            {"space": EVENT_LOCK_SPACE, "run_id": run_id},
        )
    if owner is not None:
        holder = conn.execute(
            sa.text("SELECT owner FROM research_runs WHERE run_id=:run_id"), {"run_id": run_id}
        ).scalar_one_or_none()
        if holder != owner:
            raise LeaseLost(run_id)
    seq = int(
        conn.execute(
            sa.text("SELECT COALESCE(MAX(seq), 0) + 1 FROM research_events WHERE run_id=:run_id"), {"run_id": run_id}
        ).scalar_one()
    )
    if event.attempt is None:  # every stored event says which attempt of the run it belongs to
        attempts = conn.execute(
            sa.text("SELECT attempts FROM research_runs WHERE run_id=:run_id"), {"run_id": run_id}
        ).scalar_one_or_none()
        if attempts:
            event = event.model_copy(update={"attempt": int(attempts)})
    conn.execute(
        sa.text("INSERT INTO research_events (run_id, seq, type, json, ts) VALUES (:run_id, :seq, :type, :json, :ts)"),
        {"run_id": run_id, "seq": seq, "type": event.type, "json": event.model_dump_json(), "ts": event.ts.isoformat()},
    )
    return seq


def append_event(store: Store, run_id: str, event: Event, *, owner: str | None = None) -> int:
    """Persist one event of ``run_id``; returns its sequence number (1, 2, ...). With ``owner``,
    raises :class:`LeaseLost` when the run is no longer that replica's."""
    with store.transaction() as conn:
        return append_in(conn, run_id, event, owner=owner)


def append_in(conn: Connection, run_id: str, event: Event, *, owner: str | None = None) -> int:
    """:func:`append_event` inside a transaction the caller holds (the run queue's takeover)."""
    return _append(conn, run_id, event, owner)


def _unfinished_of(owner: str | None) -> str:
    """The WHERE clause a final status needs: still unfinished and, for a replica's run, still its own."""
    return "run_id=:run_id AND status IN ('accepted', 'running')" + (" AND owner=:owner" if owner else "")


def finish_completed(store: Store, result: ConsensusResearchResult, event: Event, *, owner: str | None = None) -> bool:
    """Store the result and the terminal event together: a client that saw the event finds the result.
    False when the run was already finished, or (``owner``) taken over by another replica."""
    with store.transaction() as conn:
        cur = conn.execute(
            sa.text(
                "UPDATE research_runs SET status='completed', completed_at=:at, result_json=:result, error=NULL "
                f"WHERE {_unfinished_of(owner)}"
            ),
            {"at": _now(), "result": result.model_dump_json(by_alias=True), "run_id": result.run_id, "owner": owner},
        )
        if cur.rowcount == 1:  # a run already declared failed (interrupted) stays failed
            _append(conn, result.run_id, event)
            RUNS.inc(state="completed")
        return cur.rowcount == 1


def finish_failed(
    store: Store,
    run_id: str,
    error: str,
    event: Event | None = None,
    partial: dict[str, Any] | None = None,
    *,
    owner: str | None = None,
) -> bool:
    """Mark the run failed; ``partial`` (what it produced before failing) is kept as its result JSON.
    False when the run was already finished, or (``owner``) taken over by another replica."""
    with store.transaction() as conn:
        return fail_in(conn, run_id, error, event, partial, owner=owner)


def fail_in(
    conn: Connection,
    run_id: str,
    error: str,
    event: Event | None = None,
    partial: dict[str, Any] | None = None,
    *,
    owner: str | None = None,
    condition: str = "",
    params: dict[str, Any] | None = None,
) -> bool:
    """:func:`finish_failed` inside the caller's transaction; ``condition`` (SQL, `` AND ...``, with its
    ``params``) narrows it."""
    cur = conn.execute(
        sa.text(
            "UPDATE research_runs SET status='failed', completed_at=:at, error=:error, result_json=:partial "
            f"WHERE {_unfinished_of(owner)}{condition}"
        ),
        {
            "at": _now(),
            "error": error,
            "partial": json.dumps(partial, ensure_ascii=False) if partial else None,
            "run_id": run_id,
            "owner": owner,
            **(params or {}),
        },
    )
    if cur.rowcount == 1:
        _append(conn, run_id, event or ResearchFailed(run_id=run_id, error=error))
        RUNS.inc(state="failed")
    return cur.rowcount == 1


def request_id_of(store: Store, run_id: str) -> str | None:
    """The request that started the run (its work is done under that id, also after a requeue)."""
    rows = store.query("SELECT request_id FROM research_runs WHERE run_id=:run_id", {"run_id": run_id})
    return str(rows[0][0]) if rows and rows[0][0] else None


def load_run(store: Store, run_id: str) -> RunRecord | None:
    rows = store.query(
        "SELECT run_id, topic, status, started_at, completed_at, error, result_json, request_id, "
        "COALESCE(submitter, '') FROM research_runs WHERE run_id=:run_id",
        {"run_id": run_id},
    )
    return RunRecord(*rows[0]) if rows else None


def cancel(store: Store, run_id: str, reason: str) -> bool:
    """Stop a waiting or running run at its submitter's request: ``cancelled``, with a terminal
    ``researchFailed`` event saying ``reason``. False when it had already ended. The replica running
    it finds its lease gone at the next renewal (research/run_queue.py) and stops; its later writes are
    refused, as after a takeover."""
    with store.transaction() as conn:
        cur = conn.execute(
            sa.text(
                "UPDATE research_runs SET status='cancelled', completed_at=:at, error=:error, owner=NULL "
                f"WHERE {_unfinished_of(None)}"
            ),
            {"at": _now(), "error": reason, "run_id": run_id},
        )
        if cur.rowcount != 1:
            return False
        _append(conn, run_id, ResearchFailed(run_id=run_id, error=reason))
        RUNS.inc(state="cancelled")
        return True


def load_events(store: Store, run_id: str, after_seq: int = 0) -> list[StoredEvent]:
    rows = store.query(
        "SELECT seq, type, json FROM research_events WHERE run_id=:run_id AND seq>:after ORDER BY seq",
        {"run_id": run_id, "after": after_seq},
    )
    return [StoredEvent(int(r[0]), str(r[1]), str(r[2])) for r in rows]


class StoreEventSink:
    """Persists each event as it is emitted; holds back the terminal one for ``finish_*`` to store
    together with the run's final status. While the store cannot be reached (a PostgreSQL restart)
    events wait here, in order, and go with the next one that can be stored (or :meth:`flush`): a
    run does not fail because its store restarted."""

    def __init__(self, store: Store, run_id: str, owner: str | None = None) -> None:
        self._store = store
        self.run_id = run_id
        self._owner = owner  # a replica's run: its events are refused once another replica took it over
        self.terminal: Event | None = None
        self._waiting: list[Event] = []

    def emit(self, event: Event) -> None:
        if event.type in TERMINAL_EVENTS:
            self.terminal = event
            return
        self._waiting.append(event)
        try:
            self.flush()
        except sa.exc.DBAPIError as exc:
            if not unavailable(exc):
                raise
            if len(self._waiting) == 1:
                log.warning("run %s: store unavailable; its events wait (%s)", self.run_id, first_line(exc))

    def flush(self) -> None:
        """Store the events still waiting; raises when the store is still unavailable."""
        while self._waiting:
            append_event(self._store, self.run_id, self._waiting[0], owner=self._owner)
            self._waiting.pop(0)


__all__ = [
    "EVENT_LOCK_SPACE",
    "TERMINAL_EVENTS",
    "UNFINISHED",
    "RunRecord",
    "StoreEventSink",
    "StoredEvent",
    "append_event",
    "append_in",
    "cancel",
    "fail_in",
    "finish_completed",
    "finish_failed",
    "load_events",
    "load_run",
    "mark_running",
    "record_started",
    "request_id_of",
]
