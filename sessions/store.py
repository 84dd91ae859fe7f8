"""Sessions in the project's store (SQLite or PostgreSQL), written on every change.

A session is one row (its small state) plus one row per history entry, numbered: a turn that adds
two entries writes the state row and inserts two rows, instead of rewriting a history of hundreds of
entries (which cost most of a turn's time). Entries trimmed off the front stay until
``TRIM_BATCH`` of them have gathered, then go in one statement (reads skip them); a change that
rewrites the history (a summary replacing old entries) rewrites its rows.

Writes are optimistic first: each row carries a ``revision`` and an update only lands on the revision
it read, so two writers (two replicas hosting one session, a replica and the CLI, a replica still
dying while its successor starts) never overwrite each other's turn. A writer that loses that race
does not retry blindly (a fixed number of blind retries let one host's writers starve another's):
it takes the session's lock, reads the state under it and writes in the same transaction, which
cannot lose. The lock is the session's row (``SELECT ... FOR UPDATE``) plus a per-session advisory
lock on PostgreSQL, whose waiters queue in order; on SQLite the transaction's ``BEGIN IMMEDIATE``
already holds the database's write lock. So the uncontended turn costs what it did, and a contended
one waits its turn instead of being refused. :func:`update_session` is that path; every session host
(``sessions/gateway.py``: a Serve replica, the CLI) goes through it.
"""

from __future__ import annotations

import copy
import json
import logging
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from core.store import Store, register_migration
from sessions.ids import SessionNotFoundError, TooManySessionsError, session_key
from sessions.metrics import CONFLICTS
from sessions.models import HistoryEntry, SessionPolicy, SessionState

log = logging.getLogger(__name__)
T = TypeVar("T")
TRIM_BATCH = 32
# The advisory-lock space of sessions on PostgreSQL (the two-key form: apart from the migrations' lock).
SESSION_LOCK_SPACE = 0x73657373  # "sess"
# A locked write fails only when a session's row appeared (or went) between its read and its write,
# which a session's lock then prevents; so a second locked attempt always lands. The bound only turns
# a bug into an error instead of a loop.
MAX_LOCKED_ATTEMPTS = 3

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
# Version 2 moves each session's history out of its state into rows (existing sessions keep theirs).
_HISTORY_TABLE = """
    CREATE TABLE session_history (
        session_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        entry_json TEXT NOT NULL,
        PRIMARY KEY (session_id, seq)
    );
"""
register_migration(
    "sessions",
    2,
    _HISTORY_TABLE
    + """
    INSERT INTO session_history (session_id, seq, entry_json)
        SELECT s.session_id, CAST(h.key AS INTEGER), h.value
        FROM sessions s, json_each(s.state_json, '$.history') h;
    UPDATE sessions SET state_json = json_remove(state_json, '$.history');
    """,
    variants={
        "postgresql": _HISTORY_TABLE
        + """
    INSERT INTO session_history (session_id, seq, entry_json)
        SELECT s.session_id, h.ord - 1, h.value::text
        FROM sessions s, jsonb_array_elements(COALESCE(s.state_json::jsonb -> 'history', '[]'::jsonb))
            WITH ORDINALITY h(value, ord);
    UPDATE sessions SET state_json = (state_json::jsonb - 'history')::text;
    """
    },
)

# Version 3: a client's live sessions are counted on every new session (per-client limit).
register_migration("sessions", 3, "CREATE INDEX sessions_owner ON sessions(owner, updated_at)")

# Version 4 (release 0.4.0): sessions written before 0.3.0 are keyed by the bare id the caller named, and
# 0.3.0 looks sessions up by session_key(system, owner, id) only, so those rows could no longer be reached.
# They are moved to the key each system would look them up by, for the owner stored with them: a keyed
# client's under its key's fingerprint, a keyless one's under the local owner, so the same client naming
# the same id finds its conversation again.
NAMESPACED_KEY = re.compile(r"[a-z]+-[0-9a-f]{40}")
CHAT_SYSTEMS = ("router", "advisor")


def systems_of(state: dict[str, Any], entries: list[dict[str, Any]]) -> tuple[str, ...]:
    """The chat systems a pre-0.3.0 session was used by: the advisor marks its sessions
    (``attributes.advisor``), the router remembers request types. Before 0.3.0 both shared one id space,
    so a session may show both; one that shows neither (nothing but its creation) goes to both."""
    used = []
    if state.get("previousRequestType") or any(e.get("requestType") for e in entries):
        used.append("router")
    if (state.get("attributes") or {}).get("advisor"):
        used.append("advisor")
    return tuple(used) or CHAT_SYSTEMS


def _rekey_bare_sessions(conn: Connection) -> None:
    rows = conn.execute(sa.text("SELECT session_id, owner, revision, updated_at, state_json FROM sessions")).all()
    moved = kept = 0
    for bare, owner, revision, updated_at, state_json in rows:
        if NAMESPACED_KEY.fullmatch(bare):
            continue
        history = conn.execute(
            sa.text("SELECT seq, entry_json FROM session_history WHERE session_id = :id ORDER BY seq"), {"id": bare}
        ).all()
        state = json.loads(state_json)
        left_behind = False
        for system in systems_of(state, [json.loads(entry) for _, entry in history]):
            key = session_key(system, owner, bare)
            if conn.execute(sa.text("SELECT 1 FROM sessions WHERE session_id = :id"), {"id": key}).first():
                # the client started this id again after upgrading to 0.3.0: that conversation stays current
                log.warning(
                    "session %s: %s already has a newer session under this id; the older one is kept", bare, system
                )
                left_behind = True
                continue
            conn.execute(
                sa.text(
                    "INSERT INTO sessions (session_id, owner, revision, updated_at, state_json) "
                    "VALUES (:id, :owner, :rev, :at, :json)"
                ),
                {
                    "id": key,
                    "owner": owner,
                    "rev": revision,
                    "at": updated_at,
                    "json": json.dumps({**state, "sessionId": key}, ensure_ascii=False),
                },
            )
            if history:
                conn.execute(_INSERT_ENTRY, [{"id": key, "seq": seq, "json": entry} for seq, entry in history])
        if left_behind:
            kept += 1
            continue
        conn.execute(_DELETE_ENTRIES, {"id": bare})
        conn.execute(_DELETE_STATE, {"id": bare})
        moved += 1
    if moved or kept:
        log.info("sessions keyed by their bare id: %d moved to their system's key, %d kept as they were", moved, kept)


# Whose share of sessions a session counts against when that is not its owner: a caller without an
# API key is the one local owner, but is told apart from other such callers by its address
# (deployments/identity.py). A component of its own: its migration never collides with the table's.
register_migration(
    "sessions_clients",
    1,
    "ALTER TABLE sessions ADD COLUMN client TEXT; CREATE INDEX sessions_client ON sessions(client, updated_at)",
)

# Parsed once: building a text() clause per call cost a quarter of a turn's write.
_INSERT_STATE = sa.text(
    "INSERT INTO sessions (session_id, owner, revision, updated_at, state_json, client) "
    "VALUES (:id, :owner, :rev, :at, :json, :client) ON CONFLICT (session_id) DO NOTHING"
)
_UPDATE_STATE = sa.text(
    "UPDATE sessions SET owner = :owner, revision = :rev, updated_at = :at, state_json = :json "
    "WHERE session_id = :id AND revision = :old"
)
_INSERT_ENTRY = sa.text("INSERT INTO session_history (session_id, seq, entry_json) VALUES (:id, :seq, :json)")
_DELETE_ENTRIES_BEFORE = sa.text("DELETE FROM session_history WHERE session_id = :id AND seq < :seq")
_DELETE_ENTRIES = sa.text("DELETE FROM session_history WHERE session_id = :id")
_DELETE_STATE = sa.text("DELETE FROM sessions WHERE session_id = :id")
_LOAD = sa.text(
    "SELECT s.state_json, h.seq, h.entry_json FROM sessions s "
    "LEFT JOIN session_history h ON h.session_id = s.session_id "
    "WHERE s.session_id = :id ORDER BY h.seq"
)
_LOCK_POSTGRESQL = (
    sa.text("SELECT pg_advisory_xact_lock(:space, hashtext(:id))"),
    sa.text("SELECT 1 FROM sessions WHERE session_id = :id FOR UPDATE"),
)


register_migration("sessions", 4, step=_rekey_bare_sessions)


def utcnow() -> datetime:
    return datetime.now(UTC)


class SessionRepository:
    """Load and save session states: the state row and its history rows, in one transaction."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def load(self, session_id: str) -> SessionState | None:
        # One statement, so the state and its history come from one snapshot on both backends.
        with self.store.engine.connect() as conn:
            conn = conn.execution_options(magi_read_only=True)
            state = _load(conn, session_id)
            conn.rollback()
            return state

    def save(self, state: SessionState, previous: SessionState | None) -> bool:
        """Write ``state`` if the stored revision is still ``previous``'s (None: the session must not
        exist yet); False when another writer got there first. Sets ``state.history_from``."""
        with self.store.transaction() as conn:
            return _save(conn, state, previous)

    def update_locked(self, session_id: str, apply: Callable[[SessionState | None], SessionState]) -> bool:
        """Under the session's lock, read the stored state, ``apply`` the change to it and write the
        result, all in one transaction. Only writers that skip the lock (the optimistic first try of
        another) could move the revision meanwhile, and the row lock makes them wait and then lose."""
        with self.store.transaction() as conn:
            if self.store.dialect == "postgresql":
                advisory, row = _LOCK_POSTGRESQL
                conn.execute(advisory, {"space": SESSION_LOCK_SPACE, "id": session_id})
                conn.execute(row, {"id": session_id})
            stored = _load(conn, session_id)
            return _save(conn, apply(stored), stored)

    def exists(self, session_id: str) -> bool:
        return bool(self.store.query("SELECT 1 FROM sessions WHERE session_id = :id", {"id": session_id}))

    def live_count(self, client: str, namespace: str, since: datetime) -> int:
        """Sessions counted against ``client`` (its own column, else the owner) in ``namespace`` (keys
        ``<namespace>-...``) used since ``since``."""
        rows = self.store.query(
            "SELECT COUNT(*) FROM sessions WHERE COALESCE(client, owner) = :client AND updated_at >= :since "
            "AND session_id LIKE :prefix",
            {"client": client, "since": since.isoformat(), "prefix": f"{namespace}-%"},
        )
        return int(rows[0][0]) if rows else 0

    def delete(self, session_id: str) -> None:
        with self.store.transaction() as conn:
            conn.execute(_DELETE_ENTRIES, {"id": session_id})
            conn.execute(_DELETE_STATE, {"id": session_id})


def _load(conn: Connection, session_id: str) -> SessionState | None:
    rows = conn.execute(_LOAD, {"id": session_id}).all()
    if not rows:
        return None
    state = SessionState.model_validate_json(rows[0][0])
    first = state.history_from  # rows before it were trimmed and wait for a batch delete
    state.history = [HistoryEntry.model_validate_json(row[2]) for row in rows if row[1] is not None and row[1] >= first]
    return state


def _save(conn: Connection, state: SessionState, previous: SessionState | None) -> bool:
    appended = _appended(previous.history if previous is not None else [], state.history)
    next_seq = previous.history_from + len(previous.history) if previous is not None else 0
    added = state.history if appended is None else state.history[len(state.history) - appended :]
    state.history_from = next_seq + len(added) - len(state.history)
    values = {
        "id": state.session_id,
        "owner": state.owner,
        "rev": state.revision,
        "at": state.updated_at.isoformat(),
        "json": state.model_dump_json(by_alias=True, exclude={"history"}),
        "old": previous.revision if previous is not None else None,
        "client": state.client,
    }
    if previous is None:
        if conn.execute(_INSERT_STATE, values).rowcount != 1:
            return False
        # rows an earlier session of this id may have left behind go
        conn.execute(_DELETE_ENTRIES, {"id": state.session_id})
    else:
        if conn.execute(_UPDATE_STATE, values).rowcount != 1:
            return False
        if state.history_from // TRIM_BATCH > previous.history_from // TRIM_BATCH or appended is None:
            conn.execute(_DELETE_ENTRIES_BEFORE, {"id": state.session_id, "seq": state.history_from})
    rows = [
        {"id": state.session_id, "seq": next_seq + i, "json": entry.model_dump_json(by_alias=True)}
        for i, entry in enumerate(added)
    ]
    if rows:  # one row (the usual turn) as a plain execute: executemany costs more per call
        conn.execute(_INSERT_ENTRY, rows[0] if len(rows) == 1 else rows)
    return True


def _appended(old: list[HistoryEntry], new: list[HistoryEntry]) -> int | None:
    """How many entries ``new`` adds after the end of ``old`` (whose front may have been trimmed), or
    None when the history was rewritten. Entries are frozen and shared by copies, so identity tells."""
    if not old:
        return len(new)
    last = old[-1]
    for end in range(len(new), 0, -1):
        if new[end - 1] is last:
            kept = new[:end]
            if len(kept) <= len(old) and all(a is b for a, b in zip(kept, old[len(old) - end :], strict=True)):
                return len(new) - end
            return None
    return None


def current_state(
    stored: SessionState | None,
    session_id: str,
    owner: str,
    now: datetime,
    policy: SessionPolicy,
    client: str | None = None,
) -> SessionState:
    """The state a message works on: the stored one, a new one (counted against ``client``), or
    (expired) a new one that keeps the stored revision; another owner's session is reported as not found."""
    if stored is None:
        return SessionState.new(session_id, owner, now, client)
    if stored.owner != owner:
        raise SessionNotFoundError(f"no session {session_id!r} for this client")
    if stored.expired(now, policy):
        log.info("session %s expired (last used %s); starting it again", session_id, stored.updated_at)
        fresh = SessionState.new(session_id, owner, now, client)
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
    client: str | None = None,
) -> tuple[T, SessionState]:
    """Apply ``change`` (it mutates the state it is given and returns a value) and store the result:
    first optimistically on ``cached`` (or a fresh read), then, if another writer got there first,
    under the session's lock (see the module docstring). Returns the change's value and the stored state.
    A new session counts against ``client`` (None: its owner)."""
    result: list[tuple[T, SessionState]] = []

    def apply(stored: SessionState | None) -> SessionState:
        at = now()
        state = current_state(stored, session_id, owner, at, policy, client)
        value = change(state, at)
        state.updated_at = at
        state.revision = (stored.revision if stored is not None else 0) + 1
        result[:] = [(value, state)]
        return state

    stored = cached if cached is not None else repo.load(session_id)
    if repo.save(apply(stored), stored):
        return result[0]
    for _ in range(MAX_LOCKED_ATTEMPTS):
        CONFLICTS.inc()
        if repo.update_locked(session_id, apply):
            return result[0]
    raise RuntimeError(f"session {session_id}: changed {MAX_LOCKED_ATTEMPTS} times under its own lock; a bug")


def admit_session(
    repo: SessionRepository,
    key: str,
    owner: str,
    namespace: str,
    limit: int,
    policy: SessionPolicy,
    client: str | None = None,
) -> None:
    """TooManySessionsError when ``key`` is a new session and its client (``client``, else ``owner``)
    already holds ``limit`` live ones in ``namespace``: one client cannot fill the store (or the
    cluster's session hosts) alone."""
    if repo.exists(key):
        return
    since = utcnow() - timedelta(seconds=policy.ttl_s)
    if repo.live_count(client or owner, namespace, since) >= limit:
        raise TooManySessionsError(
            f"this client already has {limit} live sessions; continue one of them, delete some, or wait for "
            "them to expire (sessions.max_per_client)"
        )


def read_session(
    repo: SessionRepository, session_id: str, owner: str, policy: SessionPolicy, *, now: datetime | None = None
) -> SessionState:
    """The session for this client, or SessionNotFoundError (missing, expired or another client's)."""
    stored = repo.load(session_id)
    if stored is None or stored.owner != owner or stored.expired(now or utcnow(), policy):
        raise SessionNotFoundError(f"no session {session_id!r} for this client")
    return stored


__all__ = [
    "CHAT_SYSTEMS",
    "MAX_LOCKED_ATTEMPTS",
    "NAMESPACED_KEY",
    "TRIM_BATCH",
    "SessionRepository",
    "admit_session",
    "current_state",
    "read_session",
    "systems_of",
    "update_session",
    "utcnow",
]
