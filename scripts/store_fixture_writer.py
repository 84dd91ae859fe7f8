"""Write a fixture store through one release's own code, then describe what it holds (``manifest.json``).

Run by ``scripts/make_store_fixture.py`` with that release's Python, from a checkout of that release,
with ``MAGI_DATA_DIR`` (SQLite) or ``MAGI_STORE_URL`` (PostgreSQL) naming the store. It uses only
that release's commands (``magi route``, ``magi advisor``, ``magi research``, ``magi critic``,
``magi ask``) with the scripted models shipped in it, so the rows are exactly those the release
writes. Sessions of a keyed client are written by the same commands with the release's local owner
replaced by the fingerprint of an API key (what its HTTP apps store for a client with that key).

The manifest is read back with the same release's code: every session's history as its own loader
returns it, every research run with its events, every critic evaluation, every row count. The tests
of later releases open the store and must read back the same (tests/unit/test_store_fixtures.py).

This file must run on every release it is used with: only the standard library at the top, and each
feature looked up before it is used.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path.cwd()  # the release's checkout
MAGI = str(Path(sys.executable).with_name("magi"))
KEYS = {"key-a": "fixture-key-a", "key-b": "fixture-key-b"}  # label -> the API key a client presented
SCRIPTED = {
    "router": "python:router.scripted:answer",
    "advisor": "python:advisor.scripted:respond",
    "critic": "python:critic.scripted:judge",
    "council": "python:magi.scripted:respond",
}
# (system, session id, key label or None for the keyless local client, messages in order)
CONVERSATIONS: list[tuple[str, str, str | None, list[str]]] = [
    ("router", "visitor-1", None, ["料金はいくらですか？", "土日は？"]),
    ("router", "visitor-2", None, ["Is there Wi-Fi in the cafe?"]),
    ("router", "member-7", "key-a", ["会員登録の方法を教えてください"]),
    ("advisor", "s1", None, ["原材料高騰で値上げしたい。試算してください", "ありがとうございます"]),
    ("advisor", "owner-3", "key-b", ["価格交渉の進め方を教えてください"]),
    # one id used by both chat systems: before sessions were namespaced both wrote one row
    ("router", "shared-1", None, ["営業時間は何時までですか"]),
    ("advisor", "shared-1", None, ["値上げの相談をしたいです"]),
]
RESEARCH_TOPIC = "中小企業の価格転嫁の現状"
COUNCIL_QUESTION = "社内の問い合わせ窓口を一つにまとめるべきか"


def has(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def run_magi(
    args: list[str], *, provider: str | None = None, key: str | None = None, outcomes: tuple[int, ...] = (0,)
) -> str:
    """One command of the release, in a process of its own; ``key`` makes it act as that keyed client.
    ``outcomes``: the exit codes that are answers (the council's decisions), not failures. A local Ray
    that did not start in time on a busy machine is tried again."""
    env = dict(os.environ)
    if provider is not None:
        env["MAGI_LLM_PROVIDER"] = provider
    if key is None:
        command = [MAGI, *args]
    else:
        # The release's CLI names its caller sessions.ids.LOCAL_OWNER at call time; as the fingerprint of
        # an API key it stores the rows that release's HTTP apps store for a client presenting that key.
        program = (
            "import sys, sessions.ids as ids; ids.LOCAL_OWNER = ids.owner_of(sys.argv[1]); "
            "from cli.main import main; raise SystemExit(main(sys.argv[2:]))"
        )
        command = [sys.executable, "-c", program, KEYS[key], *args]
    for attempt in range(6):
        done = subprocess.run(command, env=env, cwd=HERE, capture_output=True, text=True, timeout=1800)
        if "timed out during startup" not in done.stderr:
            break
        time.sleep(15 * (attempt + 1))
    if done.returncode not in outcomes or "internal error" in done.stderr:
        raise SystemExit(f"{' '.join(args)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return done.stdout


def write() -> list[str]:
    """Every kind of data this release stores, through its own commands; returns what it ran."""
    ran = []
    for system, session, key, messages in CONVERSATIONS:
        if system == "router" and has("router"):
            for message in messages:
                run_magi(["route", "--session", session, message], provider=SCRIPTED["router"], key=key)
        elif system == "advisor" and has("advisor"):
            for message in messages:
                run_magi(["advisor", message, "--session", session], provider=SCRIPTED["advisor"], key=key)
        else:
            continue
        ran.append(f"{system} session {session} ({key or 'keyless'}): {len(messages)} turns")
    with tempfile.TemporaryDirectory() as out:
        one_by_one = ["--agents", "1", "--iterations", "1", "--timeout", "900"]
        run_magi(["research", RESEARCH_TOPIC, *one_by_one, "--no-progress", "--out", out])
    ran.append(f"research run: {RESEARCH_TOPIC}")
    if has("critic"):
        run_magi(  # a generous timeout: a busy machine must not turn the fixture into five failures
            ["critic", "data/critic/examples/ideas.json", "--format", "json", "--timeout", "900"],
            provider=SCRIPTED["critic"],
        )
        ran.append("critic run: data/critic/examples/ideas.json")
    if has("magi.protocol"):
        run_magi(
            ["ask", COUNCIL_QUESTION, "--format", "json", "--rounds", "1"],
            provider=SCRIPTED["council"],
            outcomes=(0, 1, 3, 4),  # approved, denied, conditional, no decision
        )
        ran.append(f"council ask: {COUNCIL_QUESTION}")
    return ran


def digest(text: str | None) -> str | None:
    return hashlib.sha256(text.encode()).hexdigest() if text is not None else None


def describe(ran: list[str]) -> dict[str, Any]:
    """What the store holds, read with this release's code."""
    from core.settings import load_settings

    settings = load_settings()
    store = _open(settings)
    tables = _tables(store)
    manifest: dict[str, Any] = {
        "release": os.environ.get("MAGI_FIXTURE_RELEASE") or _release(),
        "reportedVersion": _release(),  # releases before 0.4.0 all said 0.1.0
        "dialect": store.dialect,
        "ran": ran,
        "steps": sorted([list(r) for r in store.query("SELECT component, version FROM schema_migrations")]),
        "row_counts": {t: int(store.query(f"SELECT COUNT(*) FROM {t}")[0][0]) for t in tables},
        "sessions": _sessions(store) if "sessions" in tables else [],
        "research_runs": _research_runs(store),
        "critic_evaluations": _critic_evaluations(store) if "critic_evaluations" in tables else [],
        "council_decisions": _council_rows(store, tables),
    }
    store.close()
    return manifest


def _open(settings: Any) -> Any:
    from core import store as store_module

    if hasattr(store_module, "open_store"):
        return store_module.open_store(settings)
    return store_module.Store(settings)  # 0.1.0: the store took the settings


def _release() -> str:
    from core import __version__

    return str(__version__)


def _tables(store: Any) -> list[str]:
    if store.dialect == "sqlite":
        rows = store.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
    else:
        rows = store.query("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
    return sorted(str(r[0]) for r in rows)


def _session_key(system: str, owner: str, session: str) -> str:
    from sessions import ids

    if hasattr(ids, "session_key"):
        return str(ids.session_key(system, owner, session))
    return session  # before sessions were namespaced: the bare id, one row for every system


def _sessions(store: Any) -> list[dict[str, Any]]:
    from sessions import ids
    from sessions.store import SessionRepository

    repo = SessionRepository(store)
    described = []
    for system, session, key, _messages in CONVERSATIONS:
        owner = ids.owner_of(KEYS[key]) if key else ids.LOCAL_OWNER
        stored_as = _session_key(system, owner, session)
        state = repo.load(stored_as)
        if state is None:
            raise SystemExit(f"{system} session {session} was not stored under {stored_as}")
        described.append(
            {
                "system": system,
                "session": session,
                "key": key,
                "owner": owner,
                "storedAs": stored_as,
                "state": json.loads(state.model_dump_json(by_alias=True)),
            }
        )
    return described


def _research_runs(store: Any) -> list[dict[str, Any]]:
    from research import runs

    described = []
    for (run_id,) in store.query("SELECT run_id FROM research_runs ORDER BY started_at"):
        record = runs.load_run(store, run_id)
        result = json.loads(record.result_json) if record.result_json else None
        described.append(
            {
                "runId": record.run_id,
                "topic": record.topic,
                "status": record.status,
                "startedAt": record.started_at,
                "completedAt": record.completed_at,
                "error": record.error,
                "resultSha256": digest(record.result_json),
                "claims": len(result.get("claims", [])) if isinstance(result, dict) else None,
                "events": [[e.seq, e.type, digest(e.json)] for e in runs.load_events(store, run_id)],
            }
        )
    return described


def _critic_evaluations(store: Any) -> list[dict[str, Any]]:
    from critic.repository import run_evaluations

    described = []
    for (run_id,) in store.query("SELECT DISTINCT run_id FROM critic_evaluations ORDER BY run_id"):
        for row in run_evaluations(store, run_id):
            described.append(
                {
                    "evaluationId": row["evaluation_id"],
                    "runId": row["run_id"],
                    "ideaId": row["idea_id"],
                    "title": row["title"],
                    "status": row["status"],
                    "cacheKey": row["cache_key"],
                    "totalScore": row["total_score"],
                    "marketScore": row["market_score"],
                    "synergyScore": row["synergy_score"],
                    "evaluationSha256": digest(str(row["evaluation_json"])),
                }
            )
    return described


def _council_rows(store: Any, tables: list[str]) -> dict[str, int]:
    """Releases up to 0.4.0 keep no council decision in the store; a later one that does shows here."""
    council = [t for t in tables if t.startswith(("council", "magi_"))]
    return {t: int(store.query(f"SELECT COUNT(*) FROM {t}")[0][0]) for t in council}


def main() -> None:
    manifest_path = Path(sys.argv[1])
    ran = write()
    manifest_path.write_text(json.dumps(describe(ran), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
