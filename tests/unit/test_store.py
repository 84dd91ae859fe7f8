"""The store on both backends: migrations, transactions, configuration errors, old SQLite files."""

from __future__ import annotations

import multiprocessing
import pickle
import sqlite3
from pathlib import Path

import pytest

from core.errors import ConfigError
from core.settings import Settings
from core.store import DB_FILENAME, Store, open_store, sqlite_url
from research import runs
from research.events import ResearchRequeued
from scrapers.extract import ExtractedPage
from scrapers.page_cache import PageCache


def test_migrations_applied_once(store_url: str) -> None:
    store = Store(store_url)
    assert ("research", 1) in store.applied_migrations()
    assert store.migrate() == []  # a second run applies nothing
    store.close()
    again = Store(store_url)
    assert again.applied_migrations().count(("research", 1)) == 1
    again.close()


def test_sqlite_connections_use_wal_and_foreign_keys(tmp_path: Path) -> None:
    store = open_store(Settings(data_dir=tmp_path / "data"))
    assert store.url == sqlite_url(tmp_path / "data") and (tmp_path / "data" / DB_FILENAME).is_file()
    assert store.query("PRAGMA journal_mode")[0][0] == "wal"
    assert store.query("PRAGMA foreign_keys")[0][0] == 1
    assert store.query("PRAGMA synchronous")[0][0] == 1  # NORMAL
    assert store.query("PRAGMA busy_timeout")[0][0] >= 10_000
    store.close()


def test_transaction_rolls_back_on_error(store_url: str) -> None:
    store = Store(store_url)
    with pytest.raises(RuntimeError), store.transaction() as conn:
        conn.exec_driver_sql(
            "INSERT INTO research_runs (run_id, topic, status, started_at) VALUES ('r1', 't', 'running', 'now')"
        )
        assert conn.exec_driver_sql("SELECT count(*) FROM research_runs").scalar_one() == 1  # seen inside
        raise RuntimeError("crash mid-write")
    assert store.query("SELECT count(*) FROM research_runs")[0][0] == 0
    with store.transaction() as conn:
        conn.exec_driver_sql(
            "INSERT INTO research_runs (run_id, topic, status, started_at) VALUES ('r2', 't', 'running', 'now')"
        )
    assert store.query("SELECT run_id FROM research_runs")[0][0] == "r2"
    store.close()


def test_a_pickled_store_reconnects_from_its_url(store_url: str) -> None:
    store = Store(store_url)
    runs.record_started(store, "r1", "topic")
    copy = pickle.loads(pickle.dumps(store))
    assert copy is not store and copy.url == store.url
    run = runs.load_run(copy, "r1")
    assert run is not None and run.topic == "topic"
    copy.close()
    store.close()


def _use_inherited(store: Store, queue: multiprocessing.Queue[object]) -> None:
    try:
        runs.append_event(store, "r1", ResearchRequeued(run_id="r1", attempts=1))
        queue.put(len(runs.load_events(store, "r1")))
    except BaseException as exc:  # reported to the parent
        queue.put(repr(exc))


def test_a_store_inherited_through_fork_uses_its_own_connections(store_url: str) -> None:
    store = Store(store_url)
    runs.record_started(store, "r1", "topic")
    assert runs.load_events(store, "r1") == []  # the parent's pool now holds a connection
    ctx = multiprocessing.get_context("fork")
    queue: multiprocessing.Queue[object] = ctx.Queue()
    child = ctx.Process(target=_use_inherited, args=(store, queue))
    child.start()
    answer = queue.get(timeout=120)
    child.join(timeout=60)
    assert answer == 1 and child.exitcode == 0
    assert [e.type for e in runs.load_events(store, "r1")] == ["researchRequeued"]  # parent still works
    store.close()


def _open(url: str) -> None:
    Store(url).close()


def test_processes_migrating_one_database_at_once_do_not_clash(store_url: str) -> None:
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_open, args=(store_url,)) for _ in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    assert [p.exitcode for p in procs] == [0] * 6
    store = Store(store_url)
    applied = store.applied_migrations()
    assert len(applied) == len(set(applied)) and ("research_events", 1) in applied
    store.close()


def test_an_sqlite_file_made_by_the_old_store_keeps_working(tmp_path: Path) -> None:
    """The raw-sqlite3 store wrote the same tables; a new Store adopts the file and applies only what is new."""
    path = tmp_path / DB_FILENAME
    old = sqlite3.connect(path)
    old.executescript("""
        CREATE TABLE schema_migrations (component TEXT NOT NULL, version INTEGER NOT NULL, applied_at TEXT NOT NULL,
                                        PRIMARY KEY (component, version));
        CREATE TABLE research_runs (run_id TEXT PRIMARY KEY, topic TEXT NOT NULL, status TEXT NOT NULL,
            started_at TEXT NOT NULL, completed_at TEXT, error TEXT, result_json TEXT);
        CREATE INDEX research_runs_status ON research_runs(status);
        CREATE TABLE page_texts (content_hash TEXT PRIMARY KEY, text TEXT NOT NULL);
        CREATE TABLE page_snapshots (url TEXT PRIMARY KEY, final_url TEXT NOT NULL, status INTEGER NOT NULL,
            content_hash TEXT NOT NULL REFERENCES page_texts(content_hash), title TEXT NOT NULL, published TEXT,
            site_name TEXT, lang TEXT, fetched_at TEXT NOT NULL, fetched_epoch REAL NOT NULL);
        INSERT INTO schema_migrations VALUES ('research', 1, 'then'), ('page_cache', 1, 'then');
        INSERT INTO research_runs (run_id, topic, status, started_at) VALUES ('old', '価格転嫁', 'running', 'then');
        INSERT INTO page_texts VALUES ('h', 'old text');
        INSERT INTO page_snapshots VALUES ('https://example.org/a', 'https://example.org/a', 200, 'h', 'A', NULL,
                                           NULL, 'ja', 'then', 1e12);
    """)
    old.close()
    store = Store(sqlite_url(tmp_path))
    applied = store.applied_migrations()
    assert ("research", 2) in applied and ("research_events", 1) in applied
    assert applied.count(("page_cache", 1)) == 1
    runs.finish_failed(store, "old", "stopped")  # research v2 columns were added to the old table
    run = runs.load_run(store, "old")
    assert run is not None and run.topic == "価格転嫁" and run.status == "failed"
    # page_cache v2 drops snapshots taken by the old page reader: they are fetched and read again
    assert ("page_cache", 2) in applied and PageCache(store, ttl_s=60).get("https://example.org/a") is None
    PageCache(store, ttl_s=60).put(
        ExtractedPage(url="https://example.org/a", title="A2", text="new"),
        final_url="https://example.org/a",
        status=200,
    )
    again = PageCache(store, ttl_s=60).get("https://example.org/a")
    assert again is not None and again.title == "A2"
    store.close()


def test_unwritable_data_dir_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ConfigError, match="MAGI_DATA_DIR"):
        open_store(Settings(data_dir=blocker / "sub"))


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("not a url", "not a database URL"),
        ("mysql://u@h/db", "supports SQLite"),
        ("postgresql+nodriver://u@h/db", "psycopg"),
        ("sqlite://", "has no file"),
    ],
)
def test_a_bad_url_is_a_config_error(url: str, expected: str) -> None:
    with pytest.raises(ConfigError, match=expected):
        Store(url)


def test_an_unreachable_server_names_the_url_without_its_password() -> None:
    with pytest.raises(ConfigError) as caught:
        Store("postgresql+psycopg://magi:hunter2@127.0.0.1:1/magi")  # nothing listens on port 1
    message = str(caught.value)
    assert "postgresql+psycopg://magi:***@127.0.0.1:1/magi" in message and "hunter2" not in message
    assert "MAGI_STORE_URL" in message


def test_store_url_setting_selects_the_database(postgres_url: str, tmp_path: Path) -> None:
    store = open_store(Settings(data_dir=tmp_path / "unused", store_url=postgres_url))
    assert store.dialect == "postgresql" and not (tmp_path / "unused").exists()
    store.close()


def test_shown_settings_mask_the_store_password() -> None:
    from core.settings import describe

    shown = describe(Settings(store_url="postgresql+psycopg://magi:hunter2@db.example:5432/magi"))
    assert shown["store_url"] == "postgresql+psycopg://magi:***@db.example:5432/magi"


def test_a_file_that_is_not_a_database_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / DB_FILENAME).write_bytes(b"this is not SQLite" * 100)
    with pytest.raises(ConfigError, match="cannot open the SQLite store"):
        Store(sqlite_url(tmp_path))


def test_sqlite_writers_take_the_write_lock_when_the_transaction_begins(tmp_path: Path) -> None:
    """``BEGIN IMMEDIATE``: an open transaction that has written nothing yet already keeps others out."""
    store = Store(sqlite_url(tmp_path))
    other = sqlite3.connect(tmp_path / DB_FILENAME, timeout=0, isolation_level=None)
    with store.transaction():
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            other.execute("BEGIN IMMEDIATE")
        assert store.query("SELECT COUNT(*) FROM research_runs")[0][0] == 0  # readers still read
    other.execute("BEGIN IMMEDIATE")  # free again after commit
    other.execute("ROLLBACK")
    other.close()
    store.close()
