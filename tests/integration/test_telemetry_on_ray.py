"""Telemetry of the five Serve apps on the session's Ray: traffic through each app, then Ray's
Prometheus page holds each family with its labels and counts that match the requests sent; one
request id sent as X-Request-ID is found in the replica's and the actors' JSON logs, on the stored
run, and on the spans an OTLP collector (a local HTTP server) received from several processes."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from core.settings import load_settings
from core.telemetry.request_id import acceptable_request_id
from core.telemetry.scrape import magi_samples
from tests.conftest import CORPUS_DIR
from tests.integration.conftest import METRICS, start_local_ray
from tests.ports import free_port

RID = "telemetry-rid-0001"
IDEAS = json.loads((Path(__file__).parents[2] / "data/critic/examples/ideas.json").read_text(encoding="utf-8"))
QUESTION = "Adopt a four-day week?\nmagi-script: melchior=APPROVE balthasar=DENY casper=APPROVE"


class Collector:
    """An OTLP/HTTP trace collector on 127.0.0.1: keeps every span it is sent."""

    def __init__(self) -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        self.spans: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                request = ExportTraceServiceRequest.FromString(body)
                for resource in request.resource_spans:
                    for scope in resource.scope_spans:
                        for span in scope.spans:
                            attrs = {a.key: a.value.string_value for a in span.attributes}
                            outer.spans.append(
                                {
                                    "name": span.name,
                                    "trace": span.trace_id.hex(),
                                    "parent": span.parent_span_id.hex(),
                                    "attrs": attrs,
                                }
                            )
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.end_headers()

            def log_message(self, *_args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture(scope="module")
def cluster(ray_cluster: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[httpx.Client, Collector]]:
    import ray
    from ray import serve

    from deployments import advisor, critic, magi, proxy, research, router

    # A Ray of the module's own: its metrics page then counts this module's traffic only (earlier
    # modules' replicas on the session's Ray may still be exported for a while after they stopped).
    ray.shutdown()
    start_local_ray()
    collector = Collector()
    base = {
        "data_dir": str(tmp_path_factory.mktemp("telemetry")),
        "logging": {"format": "json", "level": "INFO"},
        "telemetry": {"otlp_endpoint": collector.url},
    }
    providers = {
        router: "python:router.scripted:answer",
        critic: "python:critic.scripted:judge",
        magi: "python:magi.scripted:respond",
        advisor: "python:advisor.scripted:respond",
        research: None,
    }
    port = free_port()
    proxy.start_serve("127.0.0.1", port)
    try:
        for module, provider in providers.items():
            settings = load_settings(overrides={**base, "llm": {"provider": provider}} if provider else base)
            serve.run(module.build_app(settings), name=module.APP_NAME, route_prefix=module.ROUTE_PREFIX)
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=180) as client:
            yield client, collector
    finally:
        serve.shutdown()
        collector.server.shutdown()


def _scrape_until(done: Any, timeout_s: float = 60) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Ray exports every few seconds: read the page until ``done(samples)`` holds."""
    deadline = time.monotonic() + timeout_s
    samples: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    while time.monotonic() < deadline:
        samples = magi_samples(httpx.get(METRICS["url"], timeout=10).text)
        if done(samples):
            break
        time.sleep(1)
    return samples


def total(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], family: str, **labels: str) -> float:
    return sum(v for (name, keys), v in samples.items() if name == family and labels.items() <= dict(keys).items())


def test_five_apps_report_metrics_logs_and_one_trace_per_request(cluster: tuple[httpx.Client, Collector]) -> None:
    import ray

    client, collector = cluster
    # traffic: 3 routes, 1 critic evaluation of the example ideas, 1 council, 1 advisor turn, 1 research run
    for query in ("営業時間は？", "日曜日は？", "What time is it?"):
        assert client.post("/router/route", json={"query": query, "sessionId": "tel-1"}).status_code == 200
    assert client.post("/critic/evaluate", json={"ideas": IDEAS["ideas"]}).status_code == 200
    assert client.post("/magi/ask", json={"prompt": QUESTION, "rounds": 1, "seed": 3}).status_code == 200
    message = "値上げの試算をして、グラフと申入書も作ってください。買いたたきの法的な根拠も"
    with client.stream("POST", "/advisor/chat", json={"message": message}) as turn:
        assert turn.status_code == 200 and "done" in turn.read().decode()
    submitted = client.post(
        "/research",
        json={"topic": "中小企業の価格転嫁の現状", "agents": 2, "iterations": 1, "corpus": str(CORPUS_DIR)},
        headers={"X-Request-ID": RID},
    )
    assert submitted.status_code == 202 and submitted.headers["x-request-id"] == RID
    run_id = submitted.json()["runId"]
    deadline = time.monotonic() + 240
    while (status := client.get(f"/research/{run_id}").json())["status"] not in ("completed", "failed"):
        assert time.monotonic() < deadline, "the research run did not finish"
        time.sleep(1)
    assert status["status"] == "completed" and status["requestId"] == RID  # on the stored run
    refused = client.post("/research", json={"topic": "   "}, headers={"X-Request-ID": "bad id!"})
    fresh = refused.json()["requestId"]
    assert refused.status_code == 422 and fresh != "bad id!" and acceptable_request_id(fresh) == fresh  # a new id

    # metrics: each family with its labels, counts matching the requests sent
    def complete(s: Any) -> bool:  # the last figures each process records (Ray exports every few seconds)
        return bool(
            total(s, "ray_magi_research_runs_total", state="completed")
            and total(s, "ray_magi_advisor_turns_total")
            and total(s, "ray_magi_http_requests_total", app="research", status="4xx")
            and total(s, "ray_magi_research_pages_fetched_total")
        )

    s = _scrape_until(complete)
    assert total(s, "ray_magi_router_routes_total", system="router") == 3
    assert total(s, "ray_magi_router_routes_total", agent="TimeAgent", language="en") == 1
    assert total(s, "ray_magi_router_follow_ups_inherited_total") >= 1
    assert total(s, "ray_magi_critic_evaluations_total", status="ok") == len(IDEAS["ideas"])
    assert total(s, "ray_magi_council_deliberations_total") == 1
    assert total(s, "ray_magi_council_phase_seconds_count", phase="thinking") == 1
    assert total(s, "ray_magi_advisor_turns_total", mode="mode2") == 1
    assert total(s, "ray_magi_advisor_tool_calls_total", outcome="ok") >= 2
    assert total(s, "ray_magi_advisor_files_total") >= 1
    assert total(s, "ray_magi_sessions_activations_total") >= 1
    assert total(s, "ray_magi_research_runs_total", state="accepted") == 1
    assert total(s, "ray_magi_research_pages_fetched_total", outcome="fetched") >= 1
    assert total(s, "ray_magi_research_agent_stage_seconds_count", stage="search") >= 2
    assert total(s, "ray_magi_llm_calls_total") >= len(IDEAS["ideas"]) + 3  # critic judges, sages, advisor
    assert total(s, "ray_magi_llm_input_tokens_total") > 0
    for app in ("router", "critic", "magi", "advisor", "research"):
        assert total(s, "ray_magi_http_requests_total", app=app, status="2xx") >= 1, app
    assert total(s, "ray_magi_http_requests_total", app="router", status="2xx") == 3
    assert total(s, "ray_magi_http_requests_total", app="research", status="4xx") == 1

    # logs: the id in the replica's JSON lines and in the actors' (research agents, in worker logs)
    logs = Path(ray._private.worker._global_node.get_logs_dir_path())

    def lines_with_id(files: list[Path]) -> list[dict[str, Any]]:
        found = []
        for file in files:
            for line in file.read_text(encoding="utf-8", errors="replace").splitlines():
                if RID in line and line.startswith("{"):
                    found.append(json.loads(line))
        return found

    def agent_lines_in(workers: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [r for r in workers if r.get("logger") == "research.agent" and r["requestId"] == RID]

    deadline = time.monotonic() + 60  # log files are written by other processes: wait until they are there
    while True:
        replica = lines_with_id(sorted((logs / "serve").glob("replica_research_*.log")))
        workers = lines_with_id(sorted(logs.glob("worker-*.err")))
        if (replica and len(agent_lines_in(workers)) >= 2) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    # Serve's JSON in a replica (its logging config), with the project's context on every line
    assert replica and all(r["request_id"] == RID and r["system"] and r["node"] for r in replica)
    assert {"asctime", "levelname", "name", "message"} <= set(replica[-1])
    agent_lines = agent_lines_in(workers)
    assert len(agent_lines) >= 2 and {"time", "level", "system", "node", "message"} <= set(agent_lines[0])

    # the trace: spans of the request from the replica and from actors, one trace, all carrying the id
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        mine = [sp for sp in collector.spans if sp["attrs"].get("magi.request_id") == RID]
        if {"http.request", "actor.call", "store.transaction", "fetch"} <= {sp["name"] for sp in mine}:
            break
        time.sleep(0.5)
    assert {"http.request", "actor.call", "store.transaction", "fetch"} <= {sp["name"] for sp in mine}
    # actor.call spans are made on the callee's side: in the agents' and workers' own processes
    agents = {sp["attrs"].get("magi.agent") for sp in mine if sp["name"] == "actor.call"}
    assert len(agents) >= 2, agents
    posted = [sp for sp in mine if sp["name"] == "http.request" and sp["attrs"].get("magi.method") == "POST"]
    assert len(posted) == 1 and {sp["trace"] for sp in mine} == {posted[0]["trace"]}  # one connected trace
