"""The ``research`` Serve app against hostile callers, over real HTTP on 127.0.0.1 (shared Ray).

Each test sends the attack first (no key, /etc as corpus, a 50 MB body, a burst of POSTs, control
characters, lone surrogates, booleans for numbers, a 26-digit Last-Event-ID) and then checks the
clean answer: a clear error that leaks nothing, and no accepted run lost.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from core.settings import load_settings
from deployments.research import OUTSIDE_ROOTS
from deployments.security import UNAUTHORIZED
from tests.conftest import CORPUS_DIR
from tests.integration.test_serve_research import TOPIC, _read_sse
from tests.ports import free_port

KEY = "test-key-7f3a9c"
AUTH = {"Authorization": f"Bearer {KEY}"}
TINY = {"topic": TOPIC, "agents": 1, "iterations": 1, "corpus": str(CORPUS_DIR)}


@pytest.fixture(scope="module")
def guarded_service(ray_cluster: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    from ray import serve

    from deployments import proxy
    from deployments.research import APP_NAME, ROUTE_PREFIX, build_app

    data_dir = tmp_path_factory.mktemp("hostile-data")
    (data_dir / "corpora").mkdir()
    (data_dir / "corpora" / "escape").symlink_to("/etc")  # a link inside an allowed root, pointing out
    # one client may fill the whole queue here (serve.client_queue): this module tests the global bound
    bounds = {"queue_size": 10, "client_queue": 10}
    settings = load_settings(overrides={"data_dir": data_dir, "api_keys": [KEY], "serve": bounds})
    port = free_port()
    proxy.start_serve("127.0.0.1", port)
    try:
        serve.run(build_app(settings), name=APP_NAME, route_prefix=ROUTE_PREFIX)
        yield f"http://127.0.0.1:{port}", data_dir
    finally:
        serve.shutdown()


def test_every_route_needs_the_key_but_healthz(guarded_service: tuple[str, Path]) -> None:
    base, _ = guarded_service
    routes = [
        ("GET", "/docs"),
        ("GET", "/openapi.json"),
        ("GET", "/redoc"),
        ("POST", "/research"),
        ("GET", "/research/abc"),
        ("GET", "/research/abc/events"),
        ("GET", "/nothing-here"),
    ]
    with httpx.Client(base_url=base, timeout=30) as client:
        for method, path in routes:
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": KEY}, {"X-Api-Key": KEY}):
                answer = client.request(method, path, headers=headers, json=TINY if method == "POST" else None)
                assert answer.status_code == 401, (method, path, headers)
                assert answer.json() == {"error": UNAUTHORIZED, "requestId": answer.headers["x-request-id"]}
                assert KEY not in answer.text
        for method, path in routes:
            if method == "POST":
                continue
            answer = client.request(method, path, headers=AUTH)
            assert answer.status_code in (200, 404) and answer.status_code != 401, path
        assert client.get("/docs", headers=AUTH).status_code == 200
        assert client.get("/openapi.json", headers=AUTH).json()["info"]["title"] == "MAGI research"
        assert "parts" not in client.get("/healthz").json()  # open: the bare status, nothing more
        health = client.get("/healthz", headers=AUTH).json()  # with the key: ready or not per part
        assert health["status"] == "ok" and set(health["parts"]) == {"store", "runner", "nlp", "queue"}


def test_corpus_outside_the_roots_gets_one_answer(guarded_service: tuple[str, Path]) -> None:
    base, data_dir = guarded_service
    attacks = [
        "/etc",
        "/",
        "/work/shared",
        "/proc/self",
        "/no/such/folder",
        str(data_dir / "corpora" / "escape"),
        str(data_dir / "corpora" / "missing"),
        str(data_dir / "corpora" / ".." / ".."),
    ]
    with httpx.Client(base_url=base, headers=AUTH, timeout=30) as client:
        answers = [client.post("/research", json={**TINY, "corpus": corpus}) for corpus in attacks]
    assert {a.status_code for a in answers} == {403}
    # the same answer but for the request's own id: nothing to tell apart
    assert {a.text.replace(a.headers["x-request-id"], "ID") for a in answers} == {
        f'{{"error":"{OUTSIDE_ROOTS}","requestId":"ID"}}'
    }
    assert str(os.getpid()) not in answers[3].text


def test_huge_body_is_refused_before_it_is_read(guarded_service: tuple[str, Path]) -> None:
    base, _ = guarded_service
    body = b'{"topic": "' + b"x" * (50 * 1024 * 1024) + b'"}'
    with httpx.Client(base_url=base, headers={**AUTH, "content-type": "application/json"}, timeout=60) as client:
        try:
            answer = client.post("/research", content=body)
        except httpx.WriteError:  # the server may close while the client still sends: refused all the same
            return
        assert answer.status_code == 413 and "serve.max_body_bytes" in answer.json()["error"]

        def chunks() -> Iterator[bytes]:  # no Content-Length: the cap is counted while reading
            yield b'{"topic": "'
            for _ in range(800):
                yield b"x" * 65536
            yield b'"}'

        try:
            chunked = client.post("/research", content=chunks())
        except httpx.WriteError:
            return
        assert chunked.status_code == 413 and "serve.max_body_bytes" in chunked.json()["error"]
        assert client.get("/healthz").status_code == 200


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("topic", "\x01\x02\x03", "topic:"),
        ("topic", "\u0000\u0000", "topic:"),
        ("topic", "\x1b[31m\x1b[0m", "topic:"),
        ("topic", "\ud800abc", "サロゲート"),
        ("agents", True, "agents:"),
        ("agents", "3", "agents:"),
        ("iterations", 1.5, "iterations:"),
        ("corpus", "\ud800", "サロゲート"),
        ("\x1b[2Jextra", 1, "extra: Extra inputs are not permitted"),
    ],
)
def test_hostile_fields_are_422(guarded_service: tuple[str, Path], field: str, value: Any, expected: str) -> None:
    base, _ = guarded_service
    raw = json.dumps({**TINY, field: value})  # ASCII with \u escapes: how a lone surrogate travels in JSON
    with httpx.Client(base_url=base, headers={**AUTH, "content-type": "application/json"}, timeout=30) as client:
        answer = client.post("/research", content=raw)
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    assert expected in error  # a lone surrogate anywhere is said as such (the caller's language), before any field
    assert error.startswith("invalid request:") or expected == "サロゲート"
    assert "\x1b" not in answer.text and "\\u001b" not in answer.text


async def test_a_burst_of_posts_fills_the_queue_and_loses_nothing(guarded_service: tuple[str, Path]) -> None:
    base, _ = guarded_service
    async with httpx.AsyncClient(base_url=base, headers=AUTH, timeout=120) as client:
        answers = await asyncio.gather(*(client.post("/research", json=TINY) for _ in range(30)))
    accepted = [a.json() for a in answers if a.status_code == 202]
    refused = [a for a in answers if a.status_code == 429]
    assert len(accepted) + len(refused) == 30, [a.text for a in answers]
    assert len(accepted) in (10, 11)  # 10 waiting, plus the one the worker may already have taken
    assert all(int(a.headers["Retry-After"]) > 0 and "待ち行列が満杯" in a.json()["error"] for a in refused)
    positions = sorted(a["queuePosition"] for a in accepted)
    assert positions[0] >= 1 and positions[-1] == 10  # the last one accepted waits behind 9 others
    with httpx.Client(base_url=base, headers=AUTH, timeout=30) as client:
        waiting = client.get(f"/research/{accepted[-1]['runId']}").json()
        assert waiting["status"] in ("accepted", "running") and waiting["queuePosition"] is not None
        finals = []
        for run in accepted:
            kinds = [m["event"] for m in _read_sse(client, run["links"]["events"])]
            status = client.get(run["links"]["self"]).json()
            finals.append((kinds[-1], status["status"], status["queuePosition"]))
        assert finals == [("researchCompleted", "completed", None)] * len(accepted)  # nothing lost
        after = client.post("/research", json=TINY)  # the queue drained: accepted again
        assert after.status_code == 202
        everything = _read_sse(client, after.json()["links"]["events"])
        replay = _read_sse(client, after.json()["links"]["events"], {"Last-Event-ID": "9" * 26})
        assert replay == everything  # an absurd Last-Event-ID counts as absent, no OverflowError
        assert _read_sse(client, after.json()["links"]["events"], {"Last-Event-ID": "-3"}) == everything
