"""The migration framework on both backends: SQL and Python steps, the release that applied each step,
and a store written by a newer release refused with one line naming both releases."""

from __future__ import annotations

import ast
import sqlite3
from collections.abc import Iterator
from importlib.metadata import entry_points
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from core import store as store_module
from core.errors import ConfigError
from core.store import (
    DB_FILENAME,
    STORE_GROUP,
    NewerStoreError,
    Store,
    known_migrations,
    register_migration,
    sqlite_url,
)
from core.version import release

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def scratch_migrations() -> Iterator[None]:
    """Steps a test registers are forgotten afterwards: a later store of this process (or a Ray actor
    opening it) must not meet a step no release knows."""
    known_migrations()  # the release's own steps first, so the snapshot holds them
    saved = dict(store_module._MIGRATIONS)
    yield
    store_module._MIGRATIONS.clear()
    store_module._MIGRATIONS.update(saved)


def test_later_features_add_tables(store_url: str, scratch_migrations: None) -> None:
    register_migration("testfeature", 1, "CREATE TABLE testfeature_items (id INTEGER PRIMARY KEY, name TEXT)")
    store = Store(store_url)
    with store.transaction() as conn:
        conn.exec_driver_sql("INSERT INTO testfeature_items (id, name) VALUES (1, 'a')")
    assert store.query("SELECT name FROM testfeature_items")[0][0] == "a"
    with pytest.raises(ValueError, match="different SQL"):
        register_migration("testfeature", 1, "CREATE TABLE other (x)")
    store.close()


def test_a_dialect_variant_replaces_the_portable_sql(store_url: str, scratch_migrations: None) -> None:
    register_migration(
        "testvariant",
        1,
        "CREATE TABLE testvariant_items (n INTEGER)",
        variants={"postgresql": "CREATE TABLE testvariant_items (n BIGINT)"},
    )
    store = Store(store_url)
    if store.dialect == "postgresql":
        declared = store.query(
            "SELECT data_type FROM information_schema.columns WHERE table_name = 'testvariant_items'"
        )[0][0]
        assert declared == "bigint"
    else:
        assert store.query("SELECT type FROM pragma_table_info('testvariant_items')")[0][0] == "INTEGER"
    store.close()
    with pytest.raises(ValueError, match="unknown dialect"):
        register_migration("testvariant", 2, "SELECT 1", variants={"mysql": "SELECT 1"})


def _split_names(conn: Connection) -> None:
    """A step SQL cannot say portably: 'family, given' becomes two columns."""
    rows = conn.execute(sa.text("SELECT id, full_name FROM teststep_people")).all()
    for row_id, full in rows:
        family, _, given = str(full).partition(", ")
        conn.execute(
            sa.text("UPDATE teststep_people SET family = :f, given = :g WHERE id = :id"),
            {"f": family, "g": given, "id": row_id},
        )


def test_a_python_step_moves_the_rows_an_earlier_release_wrote(store_url: str, scratch_migrations: None) -> None:
    register_migration("teststep", 1, "CREATE TABLE teststep_people (id INTEGER PRIMARY KEY, full_name TEXT)")
    first = Store(store_url)
    with first.transaction() as conn:
        conn.exec_driver_sql("INSERT INTO teststep_people (id, full_name) VALUES (1, '山田, 花子'), (2, 'Doe, Jane')")
    first.close()
    register_migration(
        "teststep",
        2,
        "ALTER TABLE teststep_people ADD COLUMN family TEXT; ALTER TABLE teststep_people ADD COLUMN given TEXT",
        step=_split_names,
    )
    second = Store(store_url)
    rows = second.query("SELECT family, given FROM teststep_people ORDER BY id")
    assert [tuple(r) for r in rows] == [("山田", "花子"), ("Doe", "Jane")]
    assert second.migrate() == []  # applied once
    second.close()


def _fails(conn: Connection) -> None:
    conn.exec_driver_sql("INSERT INTO teststep_half (n) VALUES (1)")
    raise RuntimeError("the step broke halfway")


def test_a_failing_step_leaves_the_store_as_it_was(store_url: str, scratch_migrations: None) -> None:
    Store(store_url).close()
    register_migration("teststep", 1, "CREATE TABLE teststep_half (n INTEGER)", step=_fails)
    with pytest.raises(RuntimeError, match="halfway"):
        Store(store_url)
    store_module._MIGRATIONS.pop(("teststep", 1))
    again = Store(store_url)
    assert ("teststep", 1) not in again.applied_migrations()
    assert "teststep_half" not in sa.inspect(again.engine).get_table_names()  # the DDL went with it
    again.close()


def test_a_registration_needs_sql_or_a_step() -> None:
    with pytest.raises(ValueError, match="SQL, a step, or both"):
        register_migration("testempty", 1, "  ")
    with pytest.raises(ValueError, match="count from 1"):
        register_migration("testempty", 0, "SELECT 1")


def test_each_step_records_the_release_that_applied_it(store_url: str) -> None:
    store = Store(store_url)
    assert store.releases() == [release()]
    recorded = store.query("SELECT DISTINCT release FROM schema_migrations")
    assert [r[0] for r in recorded] == [release()]
    store.close()


def test_a_store_of_a_release_before_releases_were_recorded_gains_the_column(tmp_path: Path) -> None:
    path = tmp_path / DB_FILENAME
    old = sqlite3.connect(path)
    old.executescript("""
        CREATE TABLE schema_migrations (component TEXT NOT NULL, version INTEGER NOT NULL, applied_at TEXT NOT NULL,
                                        PRIMARY KEY (component, version));
        CREATE TABLE research_runs (run_id TEXT PRIMARY KEY, topic TEXT NOT NULL, status TEXT NOT NULL,
            started_at TEXT NOT NULL, completed_at TEXT, error TEXT, result_json TEXT);
        INSERT INTO schema_migrations VALUES ('research', 1, 'then');
    """)
    old.close()
    store = Store(sqlite_url(tmp_path))
    rows = {(r[0], r[1]): r[2] for r in store.query("SELECT component, version, release FROM schema_migrations")}
    assert rows[("research", 1)] is None  # who applied it then is not known
    assert rows[("research", 2)] == release()
    store.close()


def _plant(store_url: str, component: str, version: int, writer: str | None) -> None:
    """What a newer release leaves: a step of its own recorded in a store this release migrated."""
    if not _has_steps(store_url):
        Store(store_url).close()
    engine = sa.create_engine(store_url)
    with engine.begin() as conn:
        conn.execute(
            sa.text("INSERT INTO schema_migrations (component, version, applied_at, release) VALUES (:c, :v, 'x', :r)"),
            {"c": component, "v": version, "r": writer},
        )
    engine.dispose()


def _has_steps(store_url: str) -> bool:
    engine = sa.create_engine(store_url)
    try:
        return "schema_migrations" in sa.inspect(engine).get_table_names()
    finally:
        engine.dispose()


def test_a_store_written_by_a_newer_release_is_refused_naming_both(store_url: str) -> None:
    _plant(store_url, "sessions", 99, "9.1.0")
    _plant(store_url, "council_history", 1, "9.0.2")
    with pytest.raises(NewerStoreError) as caught:
        Store(store_url)
    message = str(caught.value)
    assert "\n" not in message
    assert "9.1.0" in message and f"magi-cluster {release()}" in message  # the newer of the two writers
    assert "sessions v99" in message and "council_history v1" in message
    assert "restore the backup" in message
    assert isinstance(caught.value, ConfigError)  # the CLI answers it with one line and exit 2


def test_a_newer_step_without_a_recorded_release_is_still_refused(store_url: str) -> None:
    _plant(store_url, "research", 42, None)
    with pytest.raises(NewerStoreError, match="a newer release"):
        Store(store_url)


def _snapshot(path: Path) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    db = sqlite3.connect(path)
    try:
        steps = db.execute("SELECT component, version, release FROM schema_migrations ORDER BY 1, 2").fetchall()
        tables = db.execute("SELECT name, sql FROM sqlite_master ORDER BY name").fetchall()
        return steps, tables
    finally:
        db.close()


def test_the_refusal_changes_nothing(tmp_path: Path, scratch_migrations: None) -> None:
    url = sqlite_url(tmp_path)
    _plant(url, "future_feature", 1, "1.0.0")
    before = _snapshot(tmp_path / DB_FILENAME)
    register_migration("teststep", 1, "CREATE TABLE teststep_never (n INTEGER)")  # would apply if not refused
    with pytest.raises(NewerStoreError):
        Store(url)
    assert _snapshot(tmp_path / DB_FILENAME) == before


def _modules_registering_migrations() -> set[str]:
    """Every project module (outside tests) whose code calls register_migration."""
    found = set()
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT).parts
        if parts[0] in {".venv", "tests", "docs", "benchmarks", "scripts", "out", ".magi"}:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        calls = [
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.Call) and getattr(n.func, "id", getattr(n.func, "attr", None)) == "register_migration"
        ]
        if calls:
            found.add(".".join(path.relative_to(ROOT).with_suffix("").parts))
    return found


def test_every_module_with_migrations_is_named_in_the_store_entry_points() -> None:
    """Otherwise a process that never imported it would take that component's steps for a newer release's."""
    named = {point.value for point in entry_points(group=STORE_GROUP)}
    missing = _modules_registering_migrations() - named - {"core.store"}
    assert not missing, f'add these to [project.entry-points."{STORE_GROUP}"] in pyproject.toml: {sorted(missing)}'
