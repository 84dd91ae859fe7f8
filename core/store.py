"""The project's relational store on SQLAlchemy Core: embedded SQLite by default, PostgreSQL on a cluster.

A laptop keeps one SQLite file under ``MAGI_DATA_DIR``; a multi-node Ray cluster points every
process at one PostgreSQL database (``MAGI_STORE_URL=postgresql+psycopg://user@host:5432/magi``), so
actors on other nodes share the caches and the run records instead of writing files of their own.

Each feature registers its own numbered migrations under a component name (``"research"``,
``"page_cache"``, ...), so features add tables without coordinating one global version number. SQL
is written once for both backends; where a dialect needs other SQL, a migration carries a variant;
where rows must be moved in a way SQL cannot say (a digest, a JSON reshaped by the models), a
migration carries a Python ``step`` that runs in the same transaction. The modules that register
migrations are named in the ``magi.store`` entry-point group, so every process knows every step,
whatever it imported. The store records which release applied each step, and a store holding a step
this release does not know was written by a newer release: it is refused with one line naming both
(docs/operations/store.md, "Changing the schema").

A :class:`Store` belongs to one process: connections never cross a fork or a Ray boundary. Build one
per process with :func:`open_store`; a Store that is pickled is rebuilt from its URL on the other
side, and one inherited through ``fork`` drops the parent's pooled connections on first use.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

import sqlalchemy as sa
from sqlalchemy import event, exc
from sqlalchemy.engine import URL, Connection, Engine, Row, make_url

from core.errors import ConfigError, first_line
from core.masking import masked
from core.telemetry.tracing import span
from core.version import release, release_key

if TYPE_CHECKING:
    from core.settings import Settings

log = logging.getLogger(__name__)
R = TypeVar("R")
DB_FILENAME = "magi.sqlite3"
# How long a SQLite writer waits for the file's write lock before the store reports itself unavailable.
# SQLite's busy handler is not a queue: with 50 processes writing on 2 cores at load 16, one waited past
# 30 s (seen in the suite); 60 s keeps every writer served there, and is still a bounded wait.
SQLITE_BUSY_TIMEOUT_MS = 60_000
MIGRATION_LOCK_KEY = 0x6D616769  # "magi": the advisory lock that serialises migrations on PostgreSQL
SUPPORTED = ("sqlite", "postgresql")
STORE_GROUP = "magi.store"  # entry points: the modules that register migrations (pyproject.toml)

AnyRow: TypeAlias = Row[*tuple[Any, ...]]  # a result row: index it, unpack it, or use ``._mapping``
STORE_RETRY_AFTER_S = 5  # what a caller refused while the store is unreachable is told to wait


def unavailable(failure: BaseException) -> bool:
    """Whether ``failure`` says the store cannot be reached right now (PostgreSQL down or restarting, a
    connection cut, SQLite's file locked past its timeout, the pool exhausted) rather than that a
    statement is wrong: the first is worth a retry (and a 503 to a caller), the second is a bug."""
    error: BaseException | None = failure
    while error is not None:
        if isinstance(error, exc.OperationalError | exc.InterfaceError | exc.TimeoutError):
            return True
        if isinstance(error, exc.DBAPIError) and error.connection_invalidated:
            return True
        error = error.__cause__
    return False


def retry_while_unavailable(call: Callable[[], R], *, wait_s: float, what: str, pause_s: float = 0.5) -> R:
    """``call()``, again every ``pause_s`` while the store is unavailable, for up to ``wait_s``; for
    work already done that must not be lost to a store restart (a run's final status, an event), or a
    process started during one that can wait for it (``open_store``'s ConfigError, a run's collector).
    Blocking: from a worker thread or a process without an event loop."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            return call()
        except (exc.DBAPIError, ConfigError) as err:
            if not unavailable(err) or time.monotonic() >= deadline:
                raise
            log.warning("store unavailable while %s (%s); trying again", what, first_line(err))
        time.sleep(pause_s)


@contextmanager
def outage_tolerated(what: str) -> Iterator[None]:
    """Go on without what the block does when the store cannot be reached (logged: ``what`` was
    skipped); any other database error is raised as usual."""
    try:
        yield
    except exc.DBAPIError as err:
        if not unavailable(err):
            raise
        log.warning("store unavailable; %s skipped: %s", what, first_line(err))


async def retry_while_unavailable_async(call: Callable[[], R], *, wait_s: float, what: str, pause_s: float = 0.5) -> R:
    """:func:`retry_while_unavailable` for an event loop: each try in a worker thread, the pauses awaited."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            return await asyncio.to_thread(call)
        except exc.DBAPIError as err:
            if not unavailable(err) or time.monotonic() >= deadline:
                raise
            log.warning("store unavailable while %s (%s); trying again", what, first_line(err))
        await asyncio.sleep(pause_s)


MigrationStep = Callable[[Connection], None]


class NewerStoreError(ConfigError):
    """The store holds schema steps this release does not know: a newer release wrote it."""


@dataclass(frozen=True)
class Migration:
    """One schema step of a component; ``version`` counts from 1 within that component.

    ``sql`` runs on every backend unless ``variants`` holds SQL for that dialect (``"postgresql"``,
    ``"sqlite"``), for the rare statement the two do not share. ``step``, when given, runs after the
    SQL in the same transaction with its connection: the place for moving rows in Python.
    """

    component: str
    version: int
    sql: str = ""
    variants: Mapping[str, str] = field(default_factory=dict)
    step: MigrationStep | None = field(default=None, compare=False)
    step_name: str | None = None  # the step's module and name: what tells two registrations apart

    def sql_for(self, dialect: str) -> str:
        return self.variants.get(dialect, self.sql)

    @property
    def label(self) -> str:
        return f"{self.component} v{self.version}"


_MIGRATIONS: dict[tuple[str, int], Migration] = {}


def register_migration(
    component: str,
    version: int,
    sql: str = "",
    *,
    variants: Mapping[str, str] | None = None,
    step: MigrationStep | None = None,
) -> None:
    """Declare a schema step; registering the same step twice with other SQL is a bug.

    A step that changes the shape of stored rows moves the existing rows too (SQL, or ``step``): a
    store written by any earlier release must read back in full after it.
    """
    unknown = set(variants or {}) - set(SUPPORTED)
    if unknown:
        raise ValueError(f"migration {component} v{version}: unknown dialect(s) {sorted(unknown)}; use {SUPPORTED}")
    if version < 1:
        raise ValueError(f"migration {component} v{version}: versions count from 1")
    if not sql.strip() and step is None:
        raise ValueError(f"migration {component} v{version}: give its SQL, a step, or both")
    step_name = f"{step.__module__}.{step.__qualname__}" if step is not None else None
    migration = Migration(component, version, sql, dict(variants or {}), step, step_name)
    existing = _MIGRATIONS.get((component, version))
    if existing is not None and existing != migration:
        raise ValueError(f"migration {component} v{version} registered twice with different SQL")
    _MIGRATIONS[(component, version)] = migration


@cache
def _every_component_registered() -> bool:
    """Import the modules named in the ``magi.store`` entry points (their imports register their
    migrations); True when there were any, i.e. this process now knows every step of its release.
    A checkout that was never installed has none: it knows only what it imported."""
    points = entry_points(group=STORE_GROUP)
    for point in points:
        point.load()
    return bool(points)


def known_migrations() -> dict[tuple[str, int], Migration]:
    """Every migration of this release: those of the ``magi.store`` modules and any registered since."""
    _every_component_registered()
    return dict(_MIGRATIONS)


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


def sqlite_url(data_dir: Path) -> str:
    """The embedded database's URL: ``<data_dir>/magi.sqlite3``."""
    return f"sqlite:///{Path(data_dir).expanduser().absolute() / DB_FILENAME}"


def configured_url(settings: Settings) -> str:
    """The one place that reads the store settings: ``store_url``, else the SQLite file under ``data_dir``."""
    return settings.store_url or sqlite_url(settings.data_dir)


def open_store(settings: Settings) -> Store:
    """The store the settings name (:func:`configured_url`); creates the SQLite folder when needed."""
    url = configured_url(settings)
    if not url.startswith("sqlite:"):
        return Store(url)
    data_dir = Path(settings.data_dir)
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ConfigError(
            f"cannot create data directory {data_dir}: {err.strerror}; set MAGI_DATA_DIR to a writable folder"
            " (or MAGI_STORE_URL to a PostgreSQL database)"
        ) from err
    return Store(url)


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    """Per connection: the driver leaves transactions to us, WAL lets readers run beside a writer."""
    dbapi_connection.isolation_level = None  # pysqlite must not issue its own BEGIN
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
    finally:
        cursor.close()


def _sqlite_begin(conn: Connection) -> None:
    """Writers take the write lock up front (``BEGIN IMMEDIATE``), so they queue instead of deadlocking."""
    conn.exec_driver_sql("BEGIN" if conn.get_execution_options().get("magi_read_only") else "BEGIN IMMEDIATE")


class Store:
    """A handle on the project's database, safe to share between the threads of one process."""

    def __init__(self, url: str) -> None:
        try:
            parsed = make_url(url)
        except exc.ArgumentError as err:
            raise ConfigError(
                f"store URL {masked(url)!r} is not a database URL; use sqlite:///PATH or "
                "postgresql+psycopg://USER@HOST:PORT/DB (MAGI_STORE_URL)"
            ) from err
        self.url = url
        self.dialect = parsed.get_backend_name()
        if self.dialect not in SUPPORTED:
            raise ConfigError(
                f"store URL {masked(parsed)!r} selects {self.dialect!r}; the store supports SQLite "
                "(sqlite:///PATH) and PostgreSQL (postgresql+psycopg://USER@HOST:PORT/DB)"
            )
        self._engine = self._create_engine(parsed)
        self._pid = os.getpid()
        self._pid_lock = threading.Lock()
        try:
            self.migrate()
        except ConfigError:
            self._engine.dispose()
            raise
        except (exc.ProgrammingError, exc.IntegrityError):
            self._engine.dispose()
            raise  # a migration's SQL is wrong: a bug to fix, not a setting
        except exc.DBAPIError as err:  # cannot connect, authenticate, open or read the database
            self._engine.dispose()
            raise ConfigError(self._unreachable(err)) from err

    def _create_engine(self, parsed: URL) -> Engine:
        try:
            if self.dialect == "sqlite":
                if parsed.database in (None, "", ":memory:"):
                    raise ConfigError(
                        f"store URL {masked(parsed)!r} has no file: the store must outlive a process; "
                        "use sqlite:////absolute/path/magi.sqlite3"
                    )
                engine = sa.create_engine(parsed, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000})
                event.listen(engine, "connect", _sqlite_pragmas)
                event.listen(engine, "begin", _sqlite_begin)
                return engine
            return sa.create_engine(parsed, pool_pre_ping=True, pool_size=5, max_overflow=10)
        except (exc.ArgumentError, exc.NoSuchModuleError, ImportError) as err:
            raise ConfigError(
                f"store URL {masked(parsed)!r} cannot be used ({err}); for PostgreSQL use the psycopg driver: "
                "postgresql+psycopg://USER@HOST:PORT/DB"
            ) from err

    def _unreachable(self, err: exc.DBAPIError) -> str:
        reason = first_line(err.orig) if err.orig is not None else first_line(err)
        if self.dialect == "sqlite":
            return (
                f"cannot open the SQLite store {masked(self.url)!r}: {reason}; check that the folder exists "
                "and is writable (MAGI_DATA_DIR)"
            )
        return (
            f"cannot connect to the store {masked(self.url)!r}: {reason}; check that PostgreSQL runs there, "
            "accepts connections from this host, and that the user, password and database in "
            "MAGI_STORE_URL are right"
        )

    # -- per-process engine ---------------------------------------------------------------------

    @property
    def engine(self) -> Engine:
        """This process's engine; after a fork the inherited pool is dropped (not closed: the parent owns it)."""
        if self._pid != os.getpid():
            with self._pid_lock:
                if self._pid != os.getpid():
                    self._engine.dispose(close=False)
                    self._pid = os.getpid()
        return self._engine

    def __reduce__(self) -> tuple[Any, ...]:
        """A pickled Store (shipped to a Ray actor, say) reconnects from its URL on the other side."""
        return (type(self), (self.url,))

    # -- migrations -----------------------------------------------------------------------------

    def migrate(self) -> list[Migration]:
        """Apply every known migration not yet applied, recording this release; returns those applied now.

        On PostgreSQL a transaction-scoped advisory lock makes processes that start together take
        turns; on SQLite ``BEGIN IMMEDIATE`` does the same. A store holding steps this release does not
        know raises :class:`NewerStoreError` before anything is changed.
        """
        known = known_migrations()
        applied: list[Migration] = []
        with self.transaction() as conn:
            if self.dialect == "postgresql":
                conn.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY})
            conn.exec_driver_sql(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                " component TEXT NOT NULL, version INTEGER NOT NULL, applied_at TEXT NOT NULL, release TEXT,"
                " PRIMARY KEY (component, version))"
            )
            if "release" not in {c["name"] for c in sa.inspect(conn).get_columns("schema_migrations")}:
                # stores of releases before 0.4.0 did not say who applied a step
                conn.exec_driver_sql("ALTER TABLE schema_migrations ADD COLUMN release TEXT")
            done = {
                (str(r[0]), int(r[1])): r[2]
                for r in conn.execute(sa.text("SELECT component, version, release FROM schema_migrations"))
            }
            self._refuse_newer(done, known)
            for key in sorted(known):
                if key in done:
                    continue
                migration = known[key]
                with span("store.migrate", step=migration.label):
                    for statement in _split_sql(migration.sql_for(self.dialect)):
                        conn.exec_driver_sql(statement)
                    if migration.step is not None:
                        migration.step(conn)
                conn.execute(
                    sa.text(
                        "INSERT INTO schema_migrations (component, version, applied_at, release) "
                        "VALUES (:c, :v, :at, :release)"
                    ),
                    {"c": migration.component, "v": migration.version, "at": _now(), "release": release()},
                )
                applied.append(migration)
        return applied

    def _refuse_newer(self, done: Mapping[tuple[str, int], str | None], known: Mapping[tuple[str, int], Any]) -> None:
        """NewerStoreError when ``done`` holds steps a newer release applied (see the module docstring)."""
        every = _every_component_registered()
        components = {c for c, _ in known}
        unknown = sorted(k for k in done if k not in known and (every or k[0] in components))
        if not unknown:
            return
        writers = [r for k in unknown if (r := done[k])]
        newer = f"magi-cluster {max(writers, key=release_key)}" if writers else "a newer release"
        steps = ", ".join(f"{c} v{v}" for c, v in unknown)
        raise NewerStoreError(
            f"the store {masked(self.url)!r} was written by {newer} (schema steps {steps}), and this is "
            f"magi-cluster {release()}, which does not know them: run {newer.removeprefix('magi-cluster ')} or "
            "later against it, or restore the backup taken before the upgrade"
        )

    def applied_migrations(self) -> list[tuple[str, int]]:
        return [(str(r[0]), int(r[1])) for r in self.query("SELECT component, version FROM schema_migrations")]

    def releases(self) -> list[str]:
        """The releases that applied this store's steps, oldest first (before 0.4.0 none was recorded)."""
        rows = self.query("SELECT DISTINCT release FROM schema_migrations WHERE release IS NOT NULL")
        return sorted((str(r[0]) for r in rows), key=release_key)

    # -- reading and writing --------------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """One transaction: committed when the block ends, rolled back on any exception.

        On SQLite it starts with ``BEGIN IMMEDIATE``, so concurrent writers serialise; on
        PostgreSQL it is READ COMMITTED, so a read-modify-write must lock what it reads.
        """
        with span("store.transaction", dialect=self.dialect), self.engine.begin() as conn:
            yield conn

    def query(self, sql: str, params: Mapping[str, Any] | None = None) -> Sequence[AnyRow]:
        """Rows of one read (``:name`` parameters), in a short read-only transaction."""
        with self.engine.connect() as conn:
            conn = conn.execution_options(magi_read_only=True)
            rows = conn.execute(sa.text(sql), dict(params or {})).all()
            conn.rollback()
            return rows

    def close(self) -> None:
        """Close the pooled connections of this process (the Store may not be used afterwards)."""
        self.engine.dispose()


def _split_sql(script: str) -> list[str]:
    """Statements of a migration script (no semicolons inside literals in our migrations)."""
    return [s.strip() for s in script.split(";") if s.strip()]


def _now() -> str:
    return datetime.now(UTC).isoformat()


__all__ = [
    "DB_FILENAME",
    "MIGRATION_LOCK_KEY",
    "SQLITE_BUSY_TIMEOUT_MS",
    "STORE_GROUP",
    "STORE_RETRY_AFTER_S",
    "SUPPORTED",
    "AnyRow",
    "Migration",
    "MigrationStep",
    "NewerStoreError",
    "Store",
    "configured_url",
    "known_migrations",
    "open_store",
    "outage_tolerated",
    "register_migration",
    "retry_while_unavailable",
    "retry_while_unavailable_async",
    "sqlite_url",
    "unavailable",
]
