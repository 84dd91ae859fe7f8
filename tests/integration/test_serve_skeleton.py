"""The Serve app skeleton (deployments/base.py) on real Serve, through a test app that is nothing but
its routes (tests/skeleton_app.py): API keys, the body cap, 422s, error answers without server paths,
readiness per part (503 when the PostgreSQL store goes away), Serve replacing a replica whose own
state broke, and the app's log lines in Serve's replica log. One Serve start for all of it."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from core.settings import load_settings
from core.version import release
from deployments.security import UNAUTHORIZED
from tests.ports import free_port
from tests.postgres import PostgresServer

KEY = "skeleton-key-7"
AUTH = {"Authorization": f"Bearer {KEY}"}
APP = "skeleton"


@pytest.fixture(scope="module")
def app(ray_cluster: None, postgres_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from ray import serve

    from deployments import proxy
    from tests.skeleton_app import build_app

    database = postgres_server.create_database()
    settings = load_settings(
        overrides={
            "data_dir": tmp_path_factory.mktemp("skeleton"),
            "store_url": database,
            "api_keys": [KEY],
            "serve": {"max_body_bytes": 2048},
        }
    )
    port = free_port()
    proxy.start_serve("127.0.0.1", port)
    try:
        serve.run(build_app(settings), name=APP, route_prefix="/skeleton")
        with httpx.Client(base_url=f"http://127.0.0.1:{port}/skeleton", timeout=30) as client:
            yield client, postgres_server, database
    finally:
        serve.shutdown()
        postgres_server.drop_database(database)


def test_keys_guard_every_route_but_healthz_and_open_pages(app: Any) -> None:
    client, _, _ = app
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": KEY}):
        refused = client.post("/echo", json={"count": 1}, headers=headers)
        assert refused.status_code == 401 and refused.json() == {
            "error": UNAUTHORIZED,
            "requestId": refused.headers["x-request-id"],
        }
    assert client.get("/openapi.json").status_code == 401
    assert client.get("/page").status_code == 200 and client.get("/healthz").status_code == 200
    assert client.post("/echo", json={"count": 2}, headers=AUTH).json()["count"] == 2


def test_bodies_over_the_cap_are_413_declared_or_streamed(app: Any) -> None:
    client, _, _ = app
    big = {"count": 1, "text": "x" * 4000}
    declared = client.post("/echo", json=big, headers=AUTH)
    assert declared.status_code == 413 and "serve.max_body_bytes" in declared.json()["error"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: the guard counts as the body arrives
        yield b'{"count": 1, "text": "'
        for _ in range(40):
            yield b"y" * 100
        yield b'"}'

    streamed = client.post("/echo", content=chunks(), headers={**AUTH, "content-type": "application/json"})
    assert streamed.status_code == 413
    assert client.post("/echo", json={"count": 1, "text": "z" * 1000}, headers=AUTH).json()["length"] == 1000


def test_bad_bodies_are_422_naming_each_field_without_echoing_values(app: Any) -> None:
    client, _, _ = app
    answer = client.post("/echo", json={"count": "3", "text": "my-secret-value", "extra": 1}, headers=AUTH)
    assert answer.status_code == 422
    body = answer.json()
    assert body["error"].startswith("invalid request: ") and "count:" in body["error"] and "extra:" in body["error"]
    assert {tuple(d["loc"]) for d in body["detail"]} == {("body", "count"), ("body", "extra")}
    assert "my-secret-value" not in answer.text
    broken = client.post("/echo", content=b"{not json", headers={**AUTH, "content-type": "application/json"})
    assert broken.status_code == 422 and broken.json()["error"].startswith("invalid request: ")


def test_error_answers_name_no_server_path(app: Any) -> None:
    client, _, _ = app
    answer = client.post("/fail", headers=AUTH)
    assert answer.status_code == 500
    assert "<server path>" in answer.json()["error"] and "magi-secret-folder" not in answer.text


def test_healthz_answers_one_part_per_need(app: Any) -> None:
    client, _, _ = app
    assert set(client.get("/healthz").json()) == {"status", "version"}  # a probe without the key: no parts
    health = client.get("/healthz", headers=AUTH)
    assert health.status_code == 200
    assert health.json() == {
        "status": "ok",
        "version": release(),
        "parts": {
            "store": {"ready": True, "detail": "reachable (postgresql)"},
            "ticker": {"ready": True, "detail": "running"},
            "workers": {"ready": True, "detail": "none started yet (they start with the first request)"},
        },
    }


def test_a_dead_worker_is_not_ready_and_replaced_without_a_restart(app: Any) -> None:
    client, _, _ = app
    replica = client.post("/echo", json={"count": 1}, headers=AUTH).json()["pid"]
    first = client.post("/worker", headers=AUTH).json()["pid"]
    assert client.get("/healthz", headers=AUTH).json()["parts"]["workers"] == {"ready": True, "detail": "1 warm"}
    client.post("/kill-worker", headers=AUTH)
    dead = client.get("/healthz", headers=AUTH)
    assert dead.status_code == 503 and dead.json()["parts"]["workers"]["ready"] is False
    assert client.get("/healthz").status_code == 200  # taken out of the pool: ready to start a fresh one
    assert client.post("/worker", headers=AUTH).json()["pid"] != first
    assert client.post("/echo", json={"count": 1}, headers=AUTH).json()["pid"] == replica  # no restart


def test_the_apps_log_lines_go_to_serves_replica_log(app: Any) -> None:
    import ray

    client, _, _ = app
    assert client.post("/echo", json={"count": 7}, headers=AUTH).status_code == 200
    logs = Path(ray._private.worker._global_node.get_logs_dir_path()) / "serve"
    # Serve's format: level, time, deployment, replica, the request's id, then the app's message.
    line = re.compile(rf"^WARNING .* {APP}_SkeletonTestService \S+ [0-9a-f-]{{36}} -- skeleton echo 7$", re.MULTILINE)
    deadline = time.monotonic() + 30
    while not any(line.search(f.read_text(errors="replace")) for f in logs.glob(f"replica_{APP}_*.log")):
        assert time.monotonic() < deadline, sorted(p.name for p in logs.iterdir())
        time.sleep(0.5)


def test_serve_replaces_a_replica_whose_own_task_stopped(app: Any) -> None:
    client, _, _ = app
    before = client.post("/echo", json={"count": 1}, headers=AUTH).json()["pid"]
    client.post("/stop-ticker", headers=AUTH)
    broken = client.get("/healthz", headers=AUTH)
    assert broken.status_code == 503 and broken.json()["parts"]["ticker"]["ready"] is False
    deadline = time.monotonic() + 90
    while True:  # Serve's check_health fails on the stopped task: a new replica takes over
        try:
            answer = client.post("/echo", json={"count": 1}, headers=AUTH)
            if answer.status_code == 200 and answer.json()["pid"] != before:
                break
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, "the broken replica was not replaced"
        time.sleep(0.5)
    assert client.get("/healthz").status_code == 200


def test_healthz_is_503_while_the_store_is_unreachable(app: Any) -> None:
    client, server, database = app
    pid = client.post("/echo", json={"count": 1}, headers=AUTH).json()["pid"]
    server.drop_database(database)  # the store's database is gone: connections closed, none accepted
    bare = client.get("/healthz").json()
    assert bare["status"] == "not ready" and "parts" not in bare
    answer = client.get("/healthz", headers=AUTH)
    assert answer.status_code == 503
    body = answer.json()
    assert body["status"] == "not ready" and body["parts"]["ticker"]["ready"] is True
    assert body["parts"]["store"] == {
        "ready": False,
        "detail": "the store cannot be reached; see the service log",
        "code": "store",
    }
    assert "127.0.0.1" not in answer.text and database.rsplit("/", 1)[1] not in answer.text
    time.sleep(3)  # three of Serve's health probes: the store is not the replica's to repair, so it stays
    assert client.post("/echo", json={"count": 1}, headers=AUTH).json()["pid"] == pid
