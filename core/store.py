"""SQLite store under ``MAGI_DATA_DIR``: WAL mode, per-component migrations, transactional writes.

Each feature registers its own numbered migrations under a component name (``"research"``,
``"cache"``, ...), so features add tables without coordinating one global version number.
One connection per :class:`Store`; open a new ``Store`` in each process (connections do not
cross Ray boundaries).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from core.errors import ConfigError

DB_FILENAME = "magi.sqlite3"


@dataclass(frozen=True)
class Migration:
    """One schema step of a component; ``version`` counts from 1 within that component."""

    component: str
    version: int
    sql: str


_MIGRATIONS: dict[tuple[str, int], Migration] = {}


def register_migration(component: str, version: int, sql: str) -> None:
    """Declare a schema step; registering the same step twice with other SQL is a bug."""
    key = (component, version)
    existing = _MIGRATIONS.get(key)
    if existing is not None and existing.sql != sql:
        raise ValueError(f"migration {component} v{version} registered twice with different SQL")
    _MIGRATIONS[key] = Migration(component, version, sql)


register_migration(
    "research",
    1,
    """
    CREATE TABLE research_runs (
        run_id TEXT PRIMARY KEY,
        topic TEXT NOT NULL,
        status TEXT NOT NULL,
        started_at TEXT NOT NULL,
        completed_at TEXT,
        error TEXT,
        result_json TEXT
    );
    CREATE INDEX research_runs_status ON research_runs(status);
    """,
)


class Store:
    """A thread-safe handle on the project's SQLite database."""

    def __init__(self, data_dir: Path) -> None:
        try:
            data_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(
                f"cannot create data directory {data_dir}: {exc.strerror}; set MAGI_DATA_DIR to a writable folder"
            ) from exc
        self.path = data_dir / DB_FILENAME
        self._lock = threading.RLock()
        self._conn = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False, isolation_level=None)
        self._conn.row_factory = sqlite3.Row
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("PRAGMA foreign_keys=ON")
        self.migrate()

    def migrate(self) -> list[Migration]:
        """Apply every registered migration not yet applied; returns those applied now."""
        applied: list[Migration] = []
        with self.transaction() as conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                " component TEXT NOT NULL, version INTEGER NOT NULL, applied_at TEXT NOT NULL,"
                " PRIMARY KEY (component, version))"
            )
            done = {(r[0], r[1]) for r in conn.execute("SELECT component, version FROM schema_migrations")}
            for key in sorted(_MIGRATIONS):
                if key in done:
                    continue
                migration = _MIGRATIONS[key]
                for statement in _split_sql(migration.sql):
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO schema_migrations VALUES (?, ?, ?)",
                    (migration.component, migration.version, _now()),
                )
                applied.append(migration)
        return applied

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` ... ``COMMIT``, rolled back on any exception."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def query(self, sql: str, params: tuple[object, ...] = ()) -> list[sqlite3.Row]:
        with self._lock:
            return list(self._conn.execute(sql, params))

    def applied_migrations(self) -> list[tuple[str, int]]:
        return [(r[0], r[1]) for r in self.query("SELECT component, version FROM schema_migrations")]

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def _split_sql(script: str) -> list[str]:
    """Statements of a migration script (no semicolons inside literals in our migrations)."""
    return [s.strip() for s in script.split(";") if s.strip()]


def _now() -> str:
    return datetime.now(UTC).isoformat()
