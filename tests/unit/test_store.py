import sqlite3
import threading
from pathlib import Path

import pytest

from core.store import Store, register_migration


def test_wal_mode_and_migrations_applied_once(tmp_path: Path) -> None:
    store = Store(tmp_path / "data")
    assert store.query("PRAGMA journal_mode")[0][0] == "wal"
    assert ("research", 1) in store.applied_migrations()
    assert store.migrate() == []  # second run applies nothing
    store.close()
    again = Store(tmp_path / "data")
    assert again.applied_migrations().count(("research", 1)) == 1


def test_later_features_add_tables(tmp_path: Path) -> None:
    register_migration("testfeature", 1, "CREATE TABLE testfeature_items (id INTEGER PRIMARY KEY, name TEXT)")
    store = Store(tmp_path)
    with store.transaction() as conn:
        conn.execute("INSERT INTO testfeature_items (name) VALUES ('a')")
    assert store.query("SELECT name FROM testfeature_items")[0][0] == "a"
    with pytest.raises(ValueError, match="different SQL"):
        register_migration("testfeature", 1, "CREATE TABLE other (x)")


def test_transaction_rolls_back_on_error(tmp_path: Path) -> None:
    store = Store(tmp_path)
    with pytest.raises(RuntimeError), store.transaction() as conn:
        conn.execute(
            "INSERT INTO research_runs (run_id, topic, status, started_at) VALUES ('r1', 't', 'running', 'now')"
        )
        raise RuntimeError("crash mid-write")
    assert store.query("SELECT count(*) FROM research_runs")[0][0] == 0


def test_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    stores = [Store(tmp_path) for _ in range(4)]

    def write(n: int) -> None:
        for i in range(25):
            with stores[n].transaction() as conn:
                conn.execute(
                    "INSERT INTO research_runs (run_id, topic, status, started_at) VALUES (?, 't', 'done', 'x')",
                    (f"{n}-{i}",),
                )

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert stores[0].query("SELECT count(*) FROM research_runs")[0][0] == 100


def test_unwritable_data_dir_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    from core.errors import ConfigError

    with pytest.raises(ConfigError, match="MAGI_DATA_DIR"):
        Store(blocker / "sub")
    assert isinstance(sqlite3.sqlite_version, str)
