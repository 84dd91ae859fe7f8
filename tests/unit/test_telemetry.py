"""Telemetry without Ray: metrics kept in memory, request ids, log lines (JSON, no secrets), spans
that make one connected trace of a research run and of an advisor turn (SDK's in-memory exporter)."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.telemetry import context, logs, tracing
from core.telemetry.metrics import REGISTRY, MetricSet, exported_names, load_all_metrics
from core.telemetry.request_id import accept_request_id, current_request_id, request_scope

METRICS = MetricSet("unittest")
HITS = METRICS.counter("hits", "Hits by kind (a test's own family).", ("kind",))
DEPTH = METRICS.gauge("depth", "A test's gauge.")
TIME = METRICS.histogram("seconds", "A test's histogram.", ("phase",))


def test_metrics_are_kept_in_process_with_their_labels() -> None:
    HITS.reset()
    HITS.inc(kind="a")
    HITS.inc(2, kind="b")
    assert (HITS.value(kind="a"), HITS.value(kind="b"), HITS.value()) == (1, 2, 3)
    assert {"system": "unittest", "kind": "a"} in [labels for labels, _ in HITS.samples()]
    with DEPTH.tracking():
        assert DEPTH.value() == 1
    assert DEPTH.value() == 0
    with TIME.timer(phase="x"):
        pass
    assert TIME.count(phase="x") == 1 and TIME.value(phase="x") >= 0
    with pytest.raises(ValueError, match="not declared"):
        HITS.inc(user="someone")  # a label nobody declared (user data would go there)
    with pytest.raises(ValueError, match="only goes up"):
        HITS.inc(-1, kind="a")
    HITS.inc(kind="x" * 500)
    assert max(len(labels["kind"]) for labels, _ in HITS.samples()) == 64


def test_every_family_is_magi_prefixed_and_documented() -> None:
    families = load_all_metrics()
    systems = {m.fixed["system"] for m in families.values()}
    assert {"llm", "http", "research", "council", "critic", "router", "advisor", "sessions"} <= systems
    for name, metric in families.items():
        assert name.startswith("magi_") and metric.description
        assert "id" not in metric.labels and "session_id" not in metric.labels and "user" not in metric.labels
    assert "ray_magi_research_runs_total" in exported_names()


def test_dashboard_expressions_name_only_defined_metrics() -> None:
    import re

    from core.resources import resource_path

    load_all_metrics()
    known = exported_names()
    dashboard = json.loads(resource_path("data", "telemetry", "grafana-dashboard.json").read_text(encoding="utf-8"))
    expressions = [t["expr"] for panel in dashboard["panels"] for t in panel.get("targets", [])]
    assert len(expressions) >= 20
    named = {n for e in expressions for n in re.findall(r"\b(ray_magi_[a-z0-9_]+)", e)}
    assert named and not named - set(known), f"undefined metrics in the dashboard: {sorted(named - set(known))}"
    covered = {known[n].fixed["system"] for n in named}
    assert {"llm", "research", "council", "critic", "router", "advisor", "sessions", "http"} <= covered


def test_request_ids_are_taken_when_valid_and_made_otherwise() -> None:
    assert accept_request_id("abc-123.X:y") == "abc-123.X:y"
    for bad in (None, "", "a b", "x" * 200, "<script>", "id\nInjected: 1"):
        made = accept_request_id(bad)
        assert made != bad and len(made) == 32
    assert current_request_id() is None
    with request_scope("outer-1"):
        assert current_request_id() == "outer-1" and context.request_id_field() == {"requestId": "outer-1"}
        carried = context.carried()
        assert carried is not None and carried["request_id"] == "outer-1"
    assert current_request_id() is None and context.carried() is None
    with context.adopted(carried):  # the callee side of an actor call
        assert current_request_id() == "outer-1"


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    root = logging.getLogger()
    level = root.level
    logs.setup_logging(logging.INFO, "json", stream)
    yield stream
    for handler in [h for h in root.handlers if getattr(h, "_magi", False)]:
        root.removeHandler(handler)
    root.setLevel(level)


def test_json_log_lines_carry_the_request_and_never_a_secret(
    captured: io.StringIO, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-ant-api03-" + "Z" * 40
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    monkeypatch.setenv("MAGI_API_KEYS", "service-key-one,service-key-two")
    logs.forget_known_secrets()
    log = logging.getLogger("research.engine")
    with request_scope("req-42"):
        log.warning("calling with key %s and header Authorization: Bearer %s", secret, "service-key-two")
        log.info("store at postgresql://magi:hunter2pass@db.example:5432/magi")
        try:
            raise RuntimeError(f"provider refused key {secret}")
        except RuntimeError:
            log.exception("failed")
    lines = [json.loads(line) for line in captured.getvalue().splitlines()]
    assert len(lines) == 3
    first = lines[0]
    assert {"time", "level", "logger", "requestId", "system", "node", "message"} <= set(first)
    assert (first["requestId"], first["system"], first["logger"], first["level"]) == (
        "req-42",
        "research",
        "research.engine",
        "WARNING",
    )
    text = captured.getvalue()
    for leaked in (secret, "service-key-two", "hunter2pass", "Z" * 20):
        assert leaked not in text
    assert "[redacted]" in lines[0]["message"] and "[redacted]" in lines[2]["exception"]
    logs.forget_known_secrets()


def test_cli_log_format_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from cli.main import main

    try:
        main(["--log-format", "json", "-v", "route", "営業時間は？"])
    finally:
        logs.setup_logging(logging.WARNING, "text")
    err = capsys.readouterr().err
    records = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    assert all(r["requestId"] for r in records)


@pytest.fixture
def spans() -> Iterator[object]:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    tracing.use_exporter(exporter)
    yield exporter
    tracing.stop_tracing()


def _one_connected_trace(finished: list[object]) -> set[str]:
    traces = {s.context.trace_id for s in finished}  # type: ignore[attr-defined]
    roots = [s.name for s in finished if s.parent is None]  # type: ignore[attr-defined]
    assert len(traces) == 1, f"{len(traces)} traces, roots {roots}"
    ids = {s.context.span_id for s in finished}  # type: ignore[attr-defined]
    assert len(roots) == 1 and all(s.parent is None or s.parent.span_id in ids for s in finished)  # type: ignore[attr-defined]
    return {s.name for s in finished}  # type: ignore[attr-defined]


async def test_a_research_run_is_one_connected_trace(tmp_path: Path, spans: object) -> None:
    from tests.unit.test_engine_in_process import _run

    with request_scope("research-req"), tracing.span("http.request"):
        await _run(tmp_path)
    finished = list(spans.get_finished_spans())  # type: ignore[attr-defined]
    names = _one_connected_trace(finished)
    assert {"http.request", "actor.call", "fetch"} <= names
    assert all(s.attributes.get("magi.request_id") == "research-req" for s in finished)


async def test_an_advisor_turn_is_one_connected_trace(tmp_path: Path, spans: object) -> None:
    from tests.unit.test_advisor_orchestrator import make, turn

    o, _ = make(tmp_path)
    spans.clear()  # type: ignore[attr-defined]  # the store's set-up, before the request
    with request_scope("advisor-req"), tracing.span("http.request"):
        await turn(o, "値上げの試算をして、グラフと申入書も作ってください。買いたたきの法的な根拠も")
    finished = list(spans.get_finished_spans())  # type: ignore[attr-defined]
    names = _one_connected_trace(finished)
    assert {"http.request", "llm.call", "tool.call", "store.transaction"} <= names
    assert all(s.attributes.get("magi.request_id") == "advisor-req" for s in finished)


def test_tracing_is_off_at_no_cost() -> None:
    assert not tracing.tracing_on()
    with tracing.span("anything") as nothing:
        assert nothing is None
    assert tracing.inject() == {}


def test_registry_holds_each_family_once() -> None:
    again = MetricSet("unittest").counter("hits", "Hits by kind (a test's own family).", ("kind",))
    assert again is HITS and REGISTRY["magi_unittest_hits"] is HITS


def test_live_figures_are_read_from_prometheus_text() -> None:
    from core.telemetry.scrape import magi_samples

    page = """# HELP ray_magi_router_routes_total Questions routed
# TYPE ray_magi_router_routes_total counter
ray_magi_router_routes_total{Component="core_worker",WorkerId="a",agent="TimeAgent",language="ja",system="router"} 2.0
ray_magi_router_routes_total{Component="core_worker",WorkerId="b",agent="TimeAgent",language="ja",system="router"} 3.0
ray_magi_llm_call_seconds_bucket{le="0.1",role="default",system="llm"} 1.0
ray_node_cpu_utilization{instance="x"} 5.0
"""
    samples = magi_samples(page)
    key = ("ray_magi_router_routes_total", (("agent", "TimeAgent"), ("language", "ja"), ("system", "router")))
    assert samples == {key: 5.0}
