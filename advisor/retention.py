"""Retention: an advisor session and its files are removed ``advisor.retention_h`` hours after its last
message (the spec: 24 h). Sessions of other systems in the same table are left alone; file folders
whose session row is gone are removed once their newest file is older than the retention too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from advisor.settings import AdvisorSettings
from advisor.tools.base import ARTIFACT_ROOT, artifact_prefix
from core.settings import Settings
from core.storage import open_artifacts
from core.store import open_store
from sessions.models import SessionState
from sessions.store import SessionRepository, utcnow


@dataclass
class PurgeReport:
    sessions: list[str] = field(default_factory=list)
    files: int = 0


def delete_session_files(settings: Settings, session_id: str) -> int:
    artifacts = open_artifacts(settings)
    keys = artifacts.list(artifact_prefix(session_id))
    for key in keys:
        artifacts.delete(key)
    return len(keys)


def purge(settings: Settings, now: datetime | None = None) -> PurgeReport:
    """Remove every advisor session (and its files) untouched for longer than the retention."""
    moment = now or utcnow()
    cutoff = moment - timedelta(hours=AdvisorSettings.of(settings).retention_h)
    store = open_store(settings)
    repo = SessionRepository(store)
    report = PurgeReport()
    rows = store.query(
        "SELECT session_id, state_json FROM sessions WHERE updated_at < :cut", {"cut": cutoff.isoformat()}
    )
    for session_id, raw in rows:
        state = SessionState.model_validate_json(raw)
        if not state.attributes.get("advisor") or state.updated_at >= cutoff:
            continue
        report.files += delete_session_files(settings, session_id)
        repo.delete(session_id)
        report.sessions.append(session_id)
    live = {row[0] for row in store.query("SELECT session_id FROM sessions", {})}
    artifacts = open_artifacts(settings)
    folders: dict[str, list[str]] = {}
    for key in artifacts.list(f"{ARTIFACT_ROOT}/"):
        parts = key.split("/")
        if len(parts) >= 3:
            folders.setdefault(parts[1], []).append(key)
    for session_id, keys in folders.items():
        if session_id in live:
            continue
        stamps = [artifacts.modified(key) for key in keys]
        if all(s is not None and s < cutoff for s in stamps):
            for key in keys:
                artifacts.delete(key)
            report.files += len(keys)
    return report


__all__ = ["PurgeReport", "delete_session_files", "purge"]
