"""The research app on two replicas over real HTTP: both runs go in parallel, one on each replica, and a
replica killed mid-run leaves its run to the other (a new attempt).

The replicas are fixed at two: waiting for Serve's autoscaler to add the second one cost a minute or
more on a loaded machine; the autoscaling policy (running + waiting runs per replica) is tested without
Ray in tests/unit/test_run_queue.py.

Every search is held at a local SearXNG-compatible server until the test lets go, so both runs are
still searching when one replica is killed; then the server answers 403 and the agents fall back to
the bundled corpus.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from core.settings import load_settings
from core.store import Store, sqlite_url
from research import run_queue, runs
from tests.conftest import CORPUS_DIR
from tests.ports import free_port
from tests.unit.test_search_server import Reply, SearxngServer

TOPIC = "中小企業の価格転嫁の現状"


def _wait_for(what: str, check: Callable[[], bool], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def test_a_killed_replicas_run_completes_on_another(ray_cluster: None, tmp_path: Path) -> None:
    import ray
    from ray import serve

    from deployments import proxy
    from deployments.research import APP_NAME, ROUTE_PREFIX, build_app

    gate = threading.Event()

    def held(_params: dict[str, str]) -> Reply:
        gate.wait(120)
        return Reply(403, "<h1>Forbidden</h1>")

    data_dir = tmp_path / "data"
    port = free_port()
    with SearxngServer(held) as searxng:
        settings = load_settings(
            overrides={
                "data_dir": data_dir,
                "search": {"provider": "searxng", "fallbacks": ["local"], "searxng_url": searxng.url},
                "nlp": {"workers": 1},
                "serve": {"min_replicas": 2, "max_replicas": 2, "target_queued_runs": 1, "run_lease_s": 3},
            }
        )
        proxy.start_serve("127.0.0.1", port)
        data_dir.mkdir()
        store = Store(sqlite_url(data_dir))
        try:
            serve.run(build_app(settings), name=APP_NAME, route_prefix=ROUTE_PREFIX)
            body = {"topic": TOPIC, "agents": 1, "iterations": 1, "corpus": str(CORPUS_DIR)}
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
                ids = [client.post("/research", json=body).json()["runId"] for _ in range(2)]

                def both_held() -> bool:  # each idle replica claims one waiting run
                    owners = {run_queue.owner_of(store, run_id) for run_id in ids}
                    return None not in owners and len(owners) == 2

                _wait_for("both runs running on two replicas", both_held, timeout_s=90)
                victim_run = ids[0]
                victim = run_queue.owner_of(store, victim_run)
                assert victim is not None
                ray.kill(ray.get_actor(victim, namespace="serve"), no_restart=True)
                gate.set()

                def finished() -> bool:
                    return all(client.get(f"/research/{r}").json()["status"] not in runs.UNFINISHED for r in ids)

                _wait_for("both runs to finish", finished, timeout_s=240)
                answers = [client.get(f"/research/{r}").json() for r in ids]
        finally:
            gate.set()
            serve.shutdown()
    assert [a["status"] for a in answers] == ["completed", "completed"], [a["error"] for a in answers]
    taker = run_queue.owner_of(store, victim_run)
    assert taker is not None and taker != victim
    events = [(e.type, json.loads(e.json).get("attempt")) for e in runs.load_events(store, victim_run)]
    requeued = events.index(("researchRequeued", 2))
    assert {a for _, a in events[:requeued]} == {1} and {a for _, a in events[requeued:]} == {2}
    assert events[-1] == ("researchCompleted", 2) and events.count(("researchStarted", 2)) == 1
    survivor = [(e.type, json.loads(e.json).get("attempt")) for e in runs.load_events(store, ids[1])]
    assert {a for _, a in survivor} == {1} and survivor[-1][0] == "researchCompleted"
    store.close()
