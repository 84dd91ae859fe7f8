"""`magi serve` (a real subprocess with its own local Ray and Serve) keeping its runs in PostgreSQL, and
fifty concurrent writers to one router session across the router's two replicas losing no turn."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from core.store import Store
from research import runs
from tests.integration.test_cli_end_to_end import REPO
from tests.ports import free_port

TOPIC = "中小企業の価格転嫁の現状"


def _route(client: httpx.Client, query: str, session: str) -> httpx.Response:
    return client.post("/router/route", json={"query": query, "sessionId": session})


@pytest.mark.slow
def test_serve_keeps_runs_and_events_in_the_database_named_by_magi_store_url(
    tmp_path: Path, postgres_url: str, isolated_settings: Path
) -> None:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO), "MAGI_STORE_URL": postgres_url, "MAGI_ROUTER_REPLICAS": "2"}
    log = (tmp_path / "serve.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "serve", "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=base, timeout=10) as client:
            deadline = time.monotonic() + 180
            # Ray, Serve and then every app of serve.yaml start in the subprocess; `magi serve` prints
            # its "serving ..." line once all of them are up.
            while "serving " not in (tmp_path / "serve.log").read_text():
                assert server.poll() is None, (tmp_path / "serve.log").read_text()
                assert time.monotonic() < deadline, (tmp_path / "serve.log").read_text()
                time.sleep(1)
            assert client.get("/healthz").status_code == 200
            accepted = client.post("/research", json={"topic": TOPIC, "agents": 1, "iterations": 1})
            assert accepted.status_code == 202, accepted.text
            run_id = accepted.json()["runId"]
            while (status := client.get(f"/research/{run_id}").json()["status"]) in runs.UNFINISHED:
                assert time.monotonic() < deadline + 120, (tmp_path / "serve.log").read_text()
                time.sleep(1)
            assert status == "completed"
            # fifty writers to one router session, spread over its two replicas: none lost on PostgreSQL
            with ThreadPoolExecutor(max_workers=25) as pool:
                codes = list(pool.map(lambda i: _route(client, f"質問{i}", "crowd").status_code, range(50)))
            assert codes == [200] * 50
            history = client.get("/router/sessions/crowd").json()["history"]
            assert sorted(e["text"] for e in history) == sorted(f"質問{i}" for i in range(50))
    finally:
        server.send_signal(signal.SIGINT)  # Ctrl-C: magi serve shuts Serve and its Ray down
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=10)
        log.close()
    store = Store(postgres_url)
    try:
        record = runs.load_run(store, run_id)
        assert record is not None and record.status == "completed" and record.result_json
        kinds = [e.type for e in runs.load_events(store, run_id)]
        assert kinds[0] == "researchStarted" and kinds[-1] == "researchCompleted"
        assert store.query("SELECT COUNT(*) FROM page_snapshots")[0][0] > 0  # the run's collector wrote here
    finally:
        store.close()
    assert "store: postgresql+psycopg://" in (tmp_path / "serve.log").read_text()
    assert not (isolated_settings / "magi.sqlite3").exists()  # nothing went to the SQLite default
