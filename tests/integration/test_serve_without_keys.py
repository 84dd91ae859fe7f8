"""Fair shares when no API keys are set, over real HTTP on 127.0.0.1 (the session's Ray and Serve).

Without keys (the laptop default, and any page open to visitors) callers are told apart by their
address: these tests call from two loopback addresses, 127.0.0.1 and 127.0.0.2. The model is a gate
(tests/integration/gate_provider.py): its calls wait until the test opens it, so "in flight" is a
state the test waits for, never a duration. Also here, because they need no key: Serve's proxy in
front of every app (deployments/proxy.py) with odd header bytes and request ids.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from core.settings import Settings, load_settings
from tests.integration import gate_provider
from tests.ports import free_port

IN_FLIGHT = 2  # serve.client_in_flight
STREAMS = 2  # serve.client_streams
GATE = f"python:{Path(gate_provider.__file__).resolve()}:answer"


@dataclass
class Service:
    port: int
    settings: Settings
    logs: Path

    def client(self, address: str = "127.0.0.1") -> httpx.Client:
        transport = httpx.HTTPTransport(local_address=address)
        return httpx.Client(base_url=f"http://127.0.0.1:{self.port}", transport=transport, timeout=120)


@pytest.fixture(scope="module")
def service(ray_cluster: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    import ray
    from ray import serve

    from deployments import magi, proxy, research, router

    settings = load_settings(
        overrides={
            "data_dir": tmp_path_factory.mktemp("keyless"),
            "llm": {"provider": GATE, "max_concurrency": 64, "timeout_s": 600, "max_retries": 0},
            "serve": {"client_in_flight": IN_FLIGHT, "client_streams": STREAMS},
        }
    )
    port = free_port()
    proxy.start_serve("127.0.0.1", port)
    try:
        for app in (magi, router, research):
            serve.run(app.build_app(settings), name=app.APP_NAME, route_prefix=app.ROUTE_PREFIX)
        logs = Path(ray._private.worker._global_node.get_logs_dir_path())
        yield Service(port, settings, logs)
    finally:
        serve.shutdown()


@pytest.fixture
def gate(service: Service) -> Any:
    """A closed gate for this test (the per-test reset removes it after)."""
    return gate_provider.start_gate()


def wait_until(condition: Callable[[], bool], what: str, limit_s: float = 180) -> None:
    """Poll ``condition`` until it holds; the limit only turns a hang into a failure that says what."""
    deadline = time.monotonic() + limit_s
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.05)


def entered(gate: Any, needle: str) -> int:
    import ray

    return int(ray.get(gate.counts.remote(needle))[0])


def cancelled(gate: Any, needle: str) -> int:
    import ray

    return int(ray.get(gate.counts.remote(needle))[1])


def _ask(service: Service, address: str, path: str, body: dict[str, Any]) -> httpx.Response:
    with service.client(address) as client:
        return client.post(path, json=body)


def test_one_address_flooding_does_not_429_another(service: Service, gate: Any) -> None:
    """Issue 40 (4): without keys every caller was one client, so one caller's slow asks made everyone
    else's 429 at once."""
    import ray

    council = "/magi/ask"
    with ThreadPoolExecutor(4) as pool:
        flood = [
            pool.submit(_ask, service, "127.0.0.1", council, {"prompt": f"fair-one-{n} を導入すべきか"})
            for n in range(IN_FLIGHT)
        ]
        wait_until(lambda: all(entered(gate, f"fair-one-{n}") for n in range(IN_FLIGHT)), "the flood in flight")
        refused = _ask(service, "127.0.0.1", council, {"prompt": "fair-one-extra を導入すべきか"})
        assert refused.status_code == 429 and int(refused.headers["Retry-After"]) > 0
        assert "実行中" in refused.json()["error"]  # in the caller's language (Japanese by default)
        other: Future[httpx.Response] = pool.submit(
            _ask, service, "127.0.0.2", council, {"prompt": "fair-two-1 を導入すべきか"}
        )
        wait_until(lambda: other.done() or entered(gate, "fair-two-1") > 0, "the other address answered or in")
        assert not other.done(), other.result().text  # admitted, not refused: it waits on the model
        ray.get(gate.open.remote())
        answers = [f.result() for f in [*flood, other]]
    assert [a.status_code for a in answers] == [200] * (IN_FLIGHT + 1), [a.text[:200] for a in answers]


def test_router_asks_are_bounded_per_address(service: Service, gate: Any) -> None:
    """Issue 40 (4): router /ask calls the model and had no per-client bound at all."""
    import ray

    ask = "/router/ask"
    with ThreadPoolExecutor(4) as pool:
        flood = [
            pool.submit(
                _ask, service, "127.0.0.1", ask, {"query": f"量子コンピュータとは何ですか {n}", "sessionId": f"r{n}"}
            )
            for n in range(IN_FLIGHT)
        ]
        wait_until(lambda: entered(gate, "量子コンピュータ") >= IN_FLIGHT, "the asks in flight")
        refused = _ask(service, "127.0.0.1", ask, {"query": "富士山の高さは？", "sessionId": "r-extra"})
        assert refused.status_code == 429, refused.text
        other = pool.submit(_ask, service, "127.0.0.2", ask, {"query": "光合成とは何ですか", "sessionId": "r-two"})
        wait_until(lambda: other.done() or entered(gate, "光合成") > 0, "the other address answered or in")
        assert not other.done(), other.result().text
        ray.get(gate.open.remote())
        answers = [f.result() for f in [*flood, other]]
    assert [a.status_code for a in answers] == [200] * (IN_FLIGHT + 1)


def _leave_midway(service: Service, path: str, body: dict[str, Any], until: Callable[[], bool]) -> None:
    """Send a request over a raw socket, wait until ``until`` holds, then hang up without reading."""
    payload = json.dumps(body, ensure_ascii=False).encode()
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(payload)}\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", service.port)) as sock:
        sock.sendall(head + payload)
        wait_until(until, f"{path} in flight")


@pytest.mark.parametrize("path", ["/magi/ask", "/magi/ask/stream"])
def test_a_client_that_leaves_cancels_its_model_calls(service: Service, gate: Any, path: str) -> None:
    """Issue 40 (4): dropped requests freed their slot but their model calls kept running (with a
    hanging model, for minutes)."""
    needle = f"leave-{path.rsplit('/', 1)[-1]}"
    _leave_midway(service, path, {"prompt": f"{needle} を導入すべきか"}, lambda: entered(gate, needle) >= 3)
    wait_until(lambda: cancelled(gate, needle) >= 3, "the three sages' model calls cancelled")
    assert entered(gate, needle) == 3  # nothing started after the client left


def _unfinished_run(service: Service, run_id: str) -> None:
    """A run that stays unfinished (a command's run: no replica takes it over), so its event stream stays open."""
    from core.store import open_store
    from research import runs

    runs.record_started(open_store(service.settings), run_id, "開いたままの調査", status="running")


def test_event_streams_are_capped_per_address_and_health_still_answers(service: Service) -> None:
    """Issue 40 (4): 110 open event streams made /healthz, /ui and / time out."""
    _unfinished_run(service, "open-run-1")
    with service.client("127.0.0.1") as one, service.client("127.0.0.2") as two:
        streams = [one.stream("GET", "/research/open-run-1/events") for _ in range(STREAMS)]
        opened = [s.__enter__() for s in streams]
        try:
            assert [r.status_code for r in opened] == [200] * STREAMS
            refused = one.get("/research/open-run-1/events", headers={"Accept-Language": "en"})
            assert refused.status_code == 429 and "event streams" in refused.json()["error"]
            with two.stream("GET", "/research/open-run-1/events") as other:
                assert other.status_code == 200
            for path in ("/healthz", "/ui", "/", "/magi/healthz"):
                assert one.get(path).status_code == 200, path
        finally:
            for stream in streams:
                stream.__exit__(None, None, None)

        def status() -> int:
            with one.stream("GET", "/research/open-run-1/events") as probe:
                return probe.status_code

        wait_until(lambda: status() == 200, "a place freed once the streams closed")


# --- Serve's proxy, before any app ----------------------------------------------------------------


def _raw(service: Service, head: bytes) -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 exchange over a socket, with header bytes no HTTP library would send."""
    with socket.create_connection(("127.0.0.1", service.port)) as sock:
        sock.sendall(head + b"Host: 127.0.0.1\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head_part, _, body = data.partition(b"\r\n\r\n")
    lines = head_part.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return int(lines[0].split()[1]), headers, body


@pytest.mark.parametrize(
    ("header", "value"),
    [
        (b"X-Request-ID", b"\xff\xfe-id"),
        (b"serve_multiplexed_model_id", b"\xff"),
        (b"serve-multiplexed-model-id", b"sess\xe9"),
        (b"x-session-id", b"\xc3\x28"),
        (b"x-request-timeout-seconds", b"\xff"),
        (b"traceparent", b"\xfe"),
        (b"serve_multiplexed_model_id", b"../not a session"),
    ],
)
def test_odd_header_bytes_are_answered_before_serve_decodes_them(service: Service, header: bytes, value: bytes) -> None:
    """Issue 40 (5): a byte that is not UTF-8 in these headers answered 500 from Serve's proxy."""
    for path in (b"/router/route", b"/magi/healthz"):
        status, _, body = _raw(service, b"GET " + path + b" HTTP/1.1\r\n" + header + b": " + value + b"\r\n")
        assert status != 500 and status < 500, (header, value, status, body[:200])
        if header.lower() != b"x-request-id":
            assert status == 400 and "ヘッダー" in json.loads(body)["error"], body


def test_request_ids_are_kept_only_when_short_and_safe(service: Service) -> None:
    """Issue 40 (6): a 4 MiB X-Request-ID was echoed and logged, a secret sent as one landed in three logs."""
    secret = "sk-ant-api03-" + "q" * 40
    with service.client() as client:
        kept = client.get("/magi/healthz", headers={"X-Request-ID": "trace-42.a:b"})
        assert kept.headers["x-request-id"] == "trace-42.a:b"
        for given in ("x" * 129, secret, "has space", "semi;colon"):
            answer = client.get("/magi/healthz", headers={"X-Request-ID": given})
            assert answer.status_code == 200 and answer.headers["x-request-id"] != given
            assert len(answer.headers["x-request-id"]) <= 128
    logs = [*service.logs.glob("serve/*.log"), *service.logs.glob("worker-*"), *service.logs.glob("*.err")]
    found = [p.name for p in logs if p.is_file() and secret.encode() in p.read_bytes()]
    assert not found, f"the secret sent as a request id is in {found}"


def test_routes_list_is_served_through_the_guard(service: Service) -> None:
    """Without keys the list stays open; the guard is what answers it (a probe id is replaced)."""
    from deployments.proxy import PROBE_ID, guarded

    assert guarded(f"http://127.0.0.1:{service.port}")
    with service.client() as client:
        routes = client.get("/-/routes", headers={"X-Request-ID": PROBE_ID})
    assert routes.status_code == 200 and routes.headers["x-request-id"] != PROBE_ID
