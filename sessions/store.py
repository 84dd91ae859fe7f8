"""Sessions in the project's store (SQLite or PostgreSQL): one row per session, written on every change.

Writes are optimistic: each row carries a ``revision`` and an update only lands on the revision it
read, so two writers (an actor and the CLI, or an old actor still dying while its successor starts)
never overwrite each other's turn: the loser reloads and applies its change again.
:func:`update_session` is that loop; the session actor and the CLI both go through it.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TypeVar

import sqlalchemy as sa

from core.store import Store, register_migration
from sessions.ids import SessionNotFoundError
from sessions.models import SessionPolicy, SessionState

log = logging.getLogger(__name__)
T = TypeVar("T")
MAX_CONFLICT_RETRIES = 20

register_migration(
    "sessions",
    1,
    """
    CREATE TABLE sessions (
        session_id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        revision INTEGER NOT NULL,
        updated_at TEXT NOT NULL,
        state_json TEXT NOT NULL
    );
    CREATE INDEX sessions_updated_at ON sessions(updated_at)
    """,
)


def utcnow() -> datetime:
    return datetime.now(UTC)


class SessionRepository:
    """Load and save whole session states."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def load(self, session_id: str) -> SessionState | None:
        rows = self.store.query("SELECT state_json FROM sessions WHERE session_id = :id", {"id": session_id})
        return SessionState.model_validate_json(rows[0][0]) if rows else None

    def save(self, state: SessionState, expected_revision: int | None) -> bool:
        """Write ``state`` if the stored revision is still ``expected_revision`` (None: the row must not
        exist yet); False when another writer got there first."""
        values = {
            "id": state.session_id,
            "owner": state.owner,
            "rev": state.revision,
            "at": state.updated_at.isoformat(),
            "json": state.model_dump_json(by_alias=True),
            "old": expected_revision,
        }
        with self.store.transaction() as conn:
            if expected_revision is None:
                inserted = conn.execute(
                    sa.text(
                        "INSERT INTO sessions (session_id, owner, revision, updated_at, state_json) "
                        "VALUES (:id, :owner, :rev, :at, :json) ON CONFLICT (session_id) DO NOTHING"
                    ),
                    values,
                )
                return inserted.rowcount == 1
            done = conn.execute(
                sa.text(
                    "UPDATE sessions SET owner = :owner, revision = :rev, updated_at = :at, state_json = :json "
                    "WHERE session_id = :id AND revision = :old"
                ),
                values,
            )
            return done.rowcount == 1

    def delete(self, session_id: str) -> None:
        with self.store.transaction() as conn:
            conn.execute(sa.text("DELETE FROM sessions WHERE session_id = :id"), {"id": session_id})


def current_state(
    stored: SessionState | None, session_id: str, owner: str, now: datetime, policy: SessionPolicy
) -> SessionState:
    """The state a message works on: the stored one, a new one, or (expired) a new one that keeps the
    stored revision; another owner's session is reported as not found."""
    if stored is None:
        return SessionState.new(session_id, owner, now)
    if stored.owner != owner:
        raise SessionNotFoundError(f"no session {session_id!r} for this client")
    if stored.expired(now, policy):
        log.info("session %s expired (last used %s); starting it again", session_id, stored.updated_at)
        fresh = SessionState.new(session_id, owner, now)
        fresh.revision = stored.revision
        return fresh
    # History entries are frozen, so the copy shares them; only the containers a change may edit are new.
    return stored.model_copy(
        update={
            "history": list(stored.history),
            "attributes": copy.deepcopy(stored.attributes),
            "generated_files": list(stored.generated_files),
        }
    )


def update_session(
    repo: SessionRepository,
    session_id: str,
    owner: str,
    change: Callable[[SessionState, datetime], T],
    policy: SessionPolicy,
    *,
    cached: SessionState | None = None,
    now: Callable[[], datetime] = utcnow,
) -> tuple[T, SessionState]:
    """Apply ``change`` (it mutates the state it is given and returns a value) and store the result;
    a lost race reloads and applies it again. Returns the change's value and the stored state."""
    stored = cached if cached is not None else repo.load(session_id)
    for _ in range(MAX_CONFLICT_RETRIES):
        at = now()
        state = current_state(stored, session_id, owner, at, policy)
        expected = stored.revision if stored is not None else None
        value = change(state, at)
        state.updated_at = at
        state.revision = (expected or 0) + 1
        if repo.save(state, expected):
            return value, state
        stored = repo.load(session_id)
    raise RuntimeError(f"session {session_id}: {MAX_CONFLICT_RETRIES} writers in a row got there first; retry")


def read_session(
    repo: SessionRepository, session_id: str, owner: str, policy: SessionPolicy, *, now: datetime | None = None
) -> SessionState:
    """The session for this client, or SessionNotFoundError (missing, expired or another client's)."""
    stored = repo.load(session_id)
    if stored is None or stored.owner != owner or stored.expired(now or utcnow(), policy):
        raise SessionNotFoundError(f"no session {session_id!r} for this client")
    return stored


__all__ = [
    "MAX_CONFLICT_RETRIES",
    "SessionRepository",
    "current_state",
    "read_session",
    "update_session",
    "utcnow",
]
