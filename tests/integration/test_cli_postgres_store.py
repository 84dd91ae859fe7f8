"""`magi research` (a real subprocess with its own local Ray) storing its run in PostgreSQL via MAGI_STORE_URL."""

from __future__ import annotations

import json
import os
from pathlib import Path

from core.store import Store
from core.version import release
from research import runs
from tests.integration.test_cli_end_to_end import magi


def test_research_stores_its_run_in_the_database_named_by_magi_store_url(
    tmp_path: Path, postgres_url: str, isolated_settings: Path
) -> None:
    out = tmp_path / "report"
    result = magi(
        "research",
        "中小企業の価格転嫁の現状",
        "--agents",
        "2",
        "--iterations",
        "1",
        "--out",
        str(out),
        "--format",
        "json",
        "--no-progress",
        cwd=tmp_path,
        env={"MAGI_STORE_URL": postgres_url},
    )
    assert result.returncode == 0, result.stderr
    run_id = json.loads(result.stdout)["runId"]
    store = Store(postgres_url)
    try:
        run = runs.load_run(store, run_id)
        assert run is not None and run.status == "completed" and run.result_json
        assert [e.type for e in runs.load_events(store, run_id)] == ["researchCompleted"]
        assert store.query("SELECT COUNT(*) FROM page_snapshots")[0][0] >= 10  # the run's collector wrote here
    finally:
        store.close()
    assert os.environ["MAGI_DATA_DIR"] == str(isolated_settings)
    assert not (isolated_settings / "magi.sqlite3").exists()  # nothing went to the SQLite default


def test_an_unreachable_store_url_is_a_one_line_error(tmp_path: Path) -> None:
    result = magi(
        "research",
        "価格転嫁",
        "--agents",
        "1",
        cwd=tmp_path,
        env={"MAGI_STORE_URL": "postgresql+psycopg://magi:s3cret@127.0.0.1:1/magi"},
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert "magi:***@127.0.0.1:1/magi" in lines[0] and "s3cret" not in result.stderr


def test_doctor_checks_the_store_and_masks_its_password(tmp_path: Path, postgres_url: str) -> None:
    with_password = postgres_url.replace("postgres@", "postgres:hunter2-secret@")  # trust auth ignores it
    result = magi("doctor", "--format", "json", cwd=tmp_path, env={"MAGI_STORE_URL": with_password})
    assert "hunter2-secret" not in result.stdout + result.stderr
    report = json.loads(result.stdout)
    checks = {c["name"]: c for c in report["checks"]}
    assert checks["store"]["status"] == "ok" and "postgresql" in checks["store"]["detail"], checks["store"]
    assert report["version"] == release() and f"migrated by {release()}" in checks["store"]["detail"]
    assert report["settings"]["store_url"] == with_password.replace("hunter2-secret", "***")
