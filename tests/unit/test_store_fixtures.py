"""Stores written by earlier releases, opened by this one, read back in full.

Each folder ``tests/data/stores/<release>/{sqlite,postgresql}/`` was written by that release's own code
(``scripts/make_store_fixture.py``); its ``manifest.json`` says what that release read back right after
writing. Opening the store here applies this release's migrations; then every session turn, research
run (with its events) and critic evaluation must read back as the manifest says, through this
release's own readers and models. The current release's fixtures must be there too: a store written
today must still open, in full, in every later release.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

import research.events  # noqa: F401  (registers the research event types parse_event rebuilds)
from core.events import Event, parse_event
from core.store import Store, sqlite_url
from core.version import release, release_key
from critic.models import IdeaEvaluation
from critic.repository import cached_evaluation, run_evaluations
from research import runs
from research.result import ConsensusResearchResult
from sessions.ids import LOCAL_OWNER, owner_of, session_key
from sessions.models import HistoryEntry, SessionPolicy
from sessions.store import NAMESPACED_KEY, SessionRepository, read_session, update_session
from tests.postgres import PG_BIN, PostgresServer

STORES = Path(__file__).resolve().parents[1] / "data" / "stores"
KEYS = {"key-a": "fixture-key-a", "key-b": "fixture-key-b"}  # as scripts/store_fixture_writer.py presented them
# Caches a migration may empty (their rows are fetched or computed again); everything else only grows.
CACHES = frozenset({"page_snapshots", "page_texts", "search_cache", "nlp_analyses"})
FIXTURES = sorted(
    (path.parent for path in STORES.glob("*/*/manifest.json")), key=lambda p: (release_key(p.parent.name), p.name)
)


def _manifest(folder: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    return loaded


@pytest.fixture(params=FIXTURES, ids=[f"{p.parent.name}-{p.name}" for p in FIXTURES])
def opened(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Store, dict[str, Any]]:
    """The fixture store (a copy: opening migrates it), opened by this release."""
    folder: Path = request.param
    if folder.name == "sqlite":
        (tmp_path / "store").mkdir()
        shutil.copy(folder / "magi.sqlite3", tmp_path / "store" / "magi.sqlite3")
        url = sqlite_url(tmp_path / "store")
    else:
        server: PostgresServer = request.getfixturevalue("postgres_server")
        url = server.create_database()
        done = subprocess.run(
            [
                str(PG_BIN / "psql"),
                "--quiet",
                "--no-psqlrc",
                "-v",
                "ON_ERROR_STOP=1",
                "--host=127.0.0.1",
                f"--port={server.port}",
                "--username=postgres",
                f"--dbname={url.rsplit('/', 1)[1]}",
                f"--file={folder / 'dump.sql'}",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
    store = Store(url)
    request.addfinalizer(store.close)
    return store, _manifest(folder)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_every_session_turn_reads_back(opened: tuple[Store, dict[str, Any]]) -> None:
    store, manifest = opened
    repo = SessionRepository(store)
    assert manifest["sessions"], "the fixture holds no session"
    for written in manifest["sessions"]:
        owner = owner_of(KEYS[written["key"]]) if written["key"] else LOCAL_OWNER
        assert owner == written["owner"], "a key's owner fingerprint changed: keyed clients would lose their sessions"
        key = session_key(written["system"], owner, written["session"])
        stored = repo.load(key)
        assert stored is not None, f"{written['system']} session {written['session']!r} cannot be reached as {key}"
        then = written["state"]
        # read as the system reads it: for this owner, as of when it was last used (it has expired since)
        state = read_session(repo, key, owner, SessionPolicy(), now=datetime.fromisoformat(then["updatedAt"]))
        assert state.session_id == key and state.owner == owner
        assert [e.model_dump(mode="json", by_alias=True) for e in state.history] == [
            HistoryEntry.model_validate(e).model_dump(mode="json", by_alias=True) for e in then["history"]
        ]
        assert state.mode == then["mode"]
        assert state.previous_request_type == then["previousRequestType"]
        assert state.attributes == then["attributes"]
        assert state.generated_files == then["generatedFiles"]
        assert state.created_at == datetime.fromisoformat(then["createdAt"])
        assert state.revision == then["revision"]


def test_no_session_is_left_under_a_bare_id(opened: tuple[Store, dict[str, Any]]) -> None:
    store, manifest = opened
    keys = [str(r[0]) for r in store.query("SELECT session_id FROM sessions")]
    assert keys and all(NAMESPACED_KEY.fullmatch(k) for k in keys)
    # an id both chat systems used before 0.3.0 (one row then) is each system's own session now
    shared = [s for s in manifest["sessions"] if s["session"] == "shared-1"]
    assert {s["system"] for s in shared} == {"router", "advisor"}
    assert len({session_key(s["system"], LOCAL_OWNER, "shared-1") for s in shared} & set(keys)) == 2


def test_a_carried_session_takes_its_next_turn(opened: tuple[Store, dict[str, Any]]) -> None:
    store, manifest = opened
    repo = SessionRepository(store)
    written = next(s for s in manifest["sessions"] if s["system"] == "router" and len(s["state"]["history"]) > 1)
    key = session_key("router", written["owner"], written["session"])
    then = datetime.fromisoformat(written["state"]["updatedAt"])

    def ask(state: Any, at: datetime) -> None:
        state.history.append(HistoryEntry(role="user", text="もう一つ質問です", timestamp=at))

    update_session(repo, key, written["owner"], ask, SessionPolicy(), now=lambda: then)
    again = repo.load(key)
    assert again is not None and len(again.history) == len(written["state"]["history"]) + 1
    assert [e.text for e in again.history][:-1] == [e["text"] for e in written["state"]["history"]]


def test_every_research_run_reads_back(opened: tuple[Store, dict[str, Any]]) -> None:
    store, manifest = opened
    assert manifest["research_runs"], "the fixture holds no research run"
    for written in manifest["research_runs"]:
        run = runs.load_run(store, written["runId"])
        assert run is not None
        assert (run.topic, run.status, run.started_at, run.completed_at, run.error) == (
            written["topic"],
            written["status"],
            written["startedAt"],
            written["completedAt"],
            written["error"],
        )
        assert run.result_json is not None and _sha(run.result_json) == written["resultSha256"]
        result = ConsensusResearchResult.model_validate_json(run.result_json)  # this release's model reads it
        assert len(result.claims) == written["claims"]
        events = runs.load_events(store, written["runId"])
        assert [[e.seq, e.type, _sha(e.json)] for e in events] == written["events"]
        for event in events:
            parsed = parse_event(json.loads(event.json))
            assert type(parsed) is not Event, f"event type {event.type} is no longer known"


def test_every_critic_evaluation_reads_back(opened: tuple[Store, dict[str, Any]]) -> None:
    store, manifest = opened
    assert manifest["critic_evaluations"], "the fixture holds no critic evaluation"
    by_run: dict[str, dict[str, dict[str, Any]]] = {}
    for row_run in {w["runId"] for w in manifest["critic_evaluations"]}:
        by_run[row_run] = {str(r["evaluation_id"]): r for r in run_evaluations(store, row_run)}
    for written in manifest["critic_evaluations"]:
        row = by_run[written["runId"]][written["evaluationId"]]
        assert (row["idea_id"], row["title"], row["status"], row["total_score"]) == (
            written["ideaId"],
            written["title"],
            written["status"],
            written["totalScore"],
        )
        assert _sha(str(row["evaluation_json"])) == written["evaluationSha256"]
        evaluation = IdeaEvaluation.model_validate_json(str(row["evaluation_json"]))
        assert evaluation.idea_id == written["ideaId"] and evaluation.total_score == written["totalScore"]
        if written["status"] == "ok":  # a later run with the same idea and settings finds it in the cache
            cached = cached_evaluation(store, written["cacheKey"])
            assert cached is not None and cached.idea_id == written["ideaId"]


def test_no_table_lost_rows(opened: tuple[Store, dict[str, Any]]) -> None:
    """Council decisions and whatever a release stores besides: nothing it wrote is gone."""
    store, manifest = opened
    for table, count in manifest["row_counts"].items():
        if table in CACHES or table in {"sessions", "session_history"}:  # sessions: checked turn by turn
            continue
        assert int(store.query(f"SELECT COUNT(*) FROM {table}")[0][0]) >= count, table
    for table, count in manifest["council_decisions"].items():
        assert int(store.query(f"SELECT COUNT(*) FROM {table}")[0][0]) >= count, table


def test_the_current_release_has_its_fixtures() -> None:
    """A release is cut with its own fixtures (scripts/make_store_fixture.py), so later ones keep reading it."""
    for backend in ("sqlite", "postgresql"):
        folder = STORES / release() / backend
        assert (folder / "manifest.json").is_file(), (
            f"no fixture store of release {release()} ({backend}): run "
            f".venv/bin/python scripts/make_store_fixture.py {release()} --ref HEAD"
        )


def test_an_id_started_again_after_0_3_0_keeps_the_newer_session(tmp_path: Path) -> None:
    """0.3.0 could not see the bare-id row, so a client naming the same id started afresh: that newer
    session stays the current one, and the older row is kept (not deleted) where it was."""
    import sqlite3

    (tmp_path / "store").mkdir()
    db = tmp_path / "store" / "magi.sqlite3"
    shutil.copy(STORES / "0.2.0" / "sqlite" / "magi.sqlite3", db)
    key = session_key("router", LOCAL_OWNER, "visitor-1")
    at = "2026-12-01T00:00:00Z"
    newer = {"sessionId": key, "owner": "", "createdAt": at, "updatedAt": at, "revision": 1}
    conn = sqlite3.connect(db)
    conn.execute(
        "INSERT INTO sessions (session_id, owner, revision, updated_at, state_json) VALUES (?, '', 1, ?, ?)",
        (key, newer["updatedAt"], json.dumps(newer)),
    )
    conn.commit()
    conn.close()
    store = Store(sqlite_url(tmp_path / "store"))
    try:
        state = SessionRepository(store).load(key)
        assert state is not None and state.history == [] and state.revision == 1  # the newer one
        assert store.query("SELECT COUNT(*) FROM sessions WHERE session_id = 'visitor-1'")[0][0] == 1  # kept
        assert store.query("SELECT COUNT(*) FROM session_history WHERE session_id = 'visitor-1'")[0][0] == 2
        assert SessionRepository(store).load(session_key("router", LOCAL_OWNER, "visitor-2")) is not None
    finally:
        store.close()
