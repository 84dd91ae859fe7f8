"""``magi serve`` as an operator runs it: a real subprocess with its own local Ray and Serve, listening on
``0.0.0.0`` with an API key and keeping its data in the PostgreSQL named by ``MAGI_STORE_URL``.

One start (about a minute here) serves three checks:

- it listens beyond the machine only on its HTTP port (issue 21, 9): ``ss -ltnp`` lists the listening
  sockets of its whole process tree (GCS, raylet, workers, dashboard agent and its exporter, Serve's
  proxy and replicas); before, Ray's gRPC servers and three metrics exporters listened everywhere;
- a research run and its events, and fifty concurrent writers to one router session across the
  router's two replicas, are kept in that database, none lost;
- a service manager's stop (SIGTERM) shuts it down cleanly: exit 0, no stack dump.
"""

from __future__ import annotations

import os
import re
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
from tests.ports import free_port

REPO = Path(__file__).resolve().parent.parent.parent
LOOPBACK = ("127.", "[::1]", "[::ffff:127.")
START_GUARD_S = 240  # far above a start here: only tells a hung start from a slow one
TOPIC = "中小企業の価格転嫁の現状"
KEY = "serve-command-test-key"


def _descendants(root: int) -> set[int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    found = {root}
    grew = True
    while grew:
        grew = False
        for pid, parent in parents.items():
            if parent in found and pid not in found:
                found.add(pid)
                grew = True
    return found


def _listeners(pids: set[int]) -> list[tuple[str, str]]:
    """(address:port, process name) of every TCP socket ``pids`` listen on."""
    table = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True, check=True).stdout
    found = []
    for line in table.splitlines():
        owners = {int(p) for p in re.findall(r"pid=(\d+)", line)}
        if owners & pids:
            names = re.findall(r'"([^"]+)"', line)
            found.append((line.split()[3], names[0] if names else "?"))
    return found


@pytest.mark.slow
def test_magi_serve_listens_only_where_told_keeps_its_data_in_postgresql_and_stops_cleanly(
    tmp_path: Path, postgres_url: str, isolated_settings: Path
) -> None:
    if subprocess.run(["ss", "-V"], capture_output=True).returncode != 0:
        pytest.fail("ss (iproute2) is needed for this test: apt-get install iproute2", pytrace=False)
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "MAGI_STORE_URL": postgres_url,
        "MAGI_ROUTER_REPLICAS": "2",
        "MAGI_API_KEYS": KEY,
    }
    env.pop("RAY_ADDRESS", None)
    out, err = tmp_path / "stdout.log", tmp_path / "stderr.log"
    server = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "serve", "--host", "0.0.0.0", "--port", str(port)],
        stdout=out.open("w"),
        stderr=err.open("w"),
        env=env,
        cwd=tmp_path,
        start_new_session=True,
    )
    try:
        started = time.monotonic()
        while "serving " not in out.read_text():  # Ray, Serve and every app of serve.yaml start before it
            assert server.poll() is None, f"magi serve ended before serving: {err.read_text()[-2000:]}"
            assert time.monotonic() - started < START_GUARD_S, "magi serve did not start"
            time.sleep(0.5)

        run_id = _research_and_fifty_writers(f"http://127.0.0.1:{port}", started)

        # after that traffic, every process that serves it (workers, agents, the dashboard agent's
        # exporter) has opened what it listens on
        listening = _listeners(_descendants(server.pid))
        assert any(address.endswith(f":{port}") for address, _ in listening), listening
        outside = [(a, n) for a, n in listening if not a.startswith(LOOPBACK)]
        assert outside and all(address == f"0.0.0.0:{port}" for address, _ in outside), outside

        server.send_signal(signal.SIGTERM)  # a service manager's stop: a clean shutdown, no stack dump
        assert server.wait(timeout=120) == 0
        said = err.read_text()
        assert "magi serve: stopping" in said and "SIGTERM received" not in said and "Traceback" not in said, said
    finally:
        _stop_group(server)

    store = Store(postgres_url)
    try:
        record = runs.load_run(store, run_id)
        assert record is not None and record.status == "completed" and record.result_json
        kinds = [e.type for e in runs.load_events(store, run_id)]
        assert kinds[0] == "researchStarted" and kinds[-1] == "researchCompleted"
        assert store.query("SELECT COUNT(*) FROM page_snapshots")[0][0] > 0  # the run's collector wrote here
    finally:
        store.close()
    assert "store: postgresql+psycopg://" in out.read_text()
    assert not (isolated_settings / "magi.sqlite3").exists()  # nothing went to the SQLite default


def _research_and_fifty_writers(base: str, started: float) -> str:
    """One research run to completion, then fifty concurrent turns to one router session over its two
    replicas; returns the run's id."""
    with httpx.Client(base_url=base, timeout=10, headers={"Authorization": f"Bearer {KEY}"}) as client:
        assert client.get("/healthz").status_code == 200
        accepted = client.post("/research", json={"topic": TOPIC, "agents": 1, "iterations": 1})
        assert accepted.status_code == 202, accepted.text
        run_id: str = accepted.json()["runId"]
        while (status := client.get(f"/research/{run_id}").json()["status"]) in runs.UNFINISHED:
            assert time.monotonic() - started < START_GUARD_S + 300, status
            time.sleep(1)
        assert status == "completed"

        def route(i: int) -> int:
            return client.post("/router/route", json={"query": f"質問{i}", "sessionId": "crowd"}).status_code

        with ThreadPoolExecutor(max_workers=25) as pool:
            codes = list(pool.map(route, range(50)))
        assert codes == [200] * 50
        history = client.get("/router/sessions/crowd").json()["history"]
        assert sorted(e["text"] for e in history) == sorted(f"質問{i}" for i in range(50))
    return run_id


def _stop_group(server: subprocess.Popen[bytes]) -> None:
    """Stop what is left of the server's process group (nothing, after a clean SIGTERM)."""
    for sig in (signal.SIGINT, signal.SIGKILL):
        try:
            os.killpg(server.pid, sig)
        except ProcessLookupError:
            break  # the whole group is gone
        try:
            server.wait(timeout=60)
            break
        except subprocess.TimeoutExpired:
            continue
    server.wait()
