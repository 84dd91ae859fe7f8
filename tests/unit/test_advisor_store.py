"""Advisor sessions and their retention on both store backends (SQLite and PostgreSQL)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from advisor.orchestrator import Orchestrator
from advisor.retention import purge
from advisor.settings import AdvisorSettings
from core.settings import load_settings
from core.store import open_store
from sessions.gateway import SessionHost
from sessions.store import SessionRepository, utcnow


async def test_turns_and_retention_on_both_backends(store_url: str, tmp_path: Path) -> None:
    settings = load_settings(
        None,
        {"store_url": store_url, "data_dir": str(tmp_path), "llm": {"provider": "python:advisor.scripted:respond"}},
    )
    repo = SessionRepository(open_store(settings))
    orchestrator = Orchestrator(settings, SessionHost(repo, AdvisorSettings.of(settings).session_policy()))
    for sid in ("kept", "aged"):
        events = [e async for e in orchestrator.turn(sid, "", "値上げの試算をお願いします")]
        assert events[-1].mode == "mode2" and events[-1].files
    state = repo.load("aged")
    assert state is not None and state.mode == "mode2" and len(state.generated_files) == 1
    old = state.model_copy(
        update={"updated_at": utcnow() - timedelta(hours=24, minutes=1), "revision": state.revision + 1}
    )
    assert repo.save(old, state)
    report = purge(settings)
    assert report.sessions == ["aged"] and report.files == 1
    assert repo.load("aged") is None and repo.load("kept") is not None
    assert not (tmp_path / "artifacts" / "advisor" / "aged").exists() or not any(
        (tmp_path / "artifacts" / "advisor" / "aged").iterdir()
    )


async def test_files_go_to_an_fsspec_url_when_configured(tmp_path: Path) -> None:
    from core.storage import Artifacts

    url = f"memory://advisor-{tmp_path.name}"
    settings = load_settings(
        None, {"data_dir": str(tmp_path), "artifacts_url": url, "llm": {"provider": "python:advisor.scripted:respond"}}
    )
    repo = SessionRepository(open_store(settings))
    orchestrator = Orchestrator(settings, SessionHost(repo, AdvisorSettings.of(settings).session_policy()))
    events = [e async for e in orchestrator.turn("mem", "", "値上げの試算をしてグラフにしてください")]
    files = events[-1].files
    assert [f["type"] for f in files] == ["excel", "graph"] and all(f["url"].startswith("memory://") for f in files)
    store = Artifacts(url)
    assert store.get_bytes(files[1]["key"])[:4] == b"\x89PNG"
    assert not (tmp_path / "artifacts").exists()
