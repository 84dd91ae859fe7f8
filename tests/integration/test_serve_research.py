"""The ``research`` Serve app over real HTTP on 127.0.0.1: submit, stream events, fetch, restart."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from core.events import parse_event
from core.settings import load_settings
from core.store import Store, sqlite_url
from research import runs
from research.events import ResearchStarted
from research.result import ConsensusResearchResult
from tests.conftest import CORPUS_DIR
from tests.ports import free_port

TOPIC = "中小企業の価格転嫁の現状"


def _deploy(data_dir: Path) -> None:
    from ray import serve

    from deployments.research import APP_NAME, ROUTE_PREFIX, build_app

    serve.run(build_app(load_settings(overrides={"data_dir": data_dir})), name=APP_NAME, route_prefix=ROUTE_PREFIX)


def _read_sse(client: httpx.Client, path: str, headers: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Every message of an event stream, until the server ends it."""
    messages: list[dict[str, Any]] = []
    current: dict[str, Any] = {}
    with client.stream("GET", path, headers=headers, timeout=httpx.Timeout(10, read=180)) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if not line:
                if current:
                    messages.append(current)
                current = {}
            elif not line.startswith(":"):
                key, _, value = line.partition(": ")
                current[key] = value
    return messages


@pytest.fixture(scope="module")
def service(ray_cluster: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[httpx.Client, Path]]:
    from ray import serve

    from deployments import proxy

    data_dir = tmp_path_factory.mktemp("serve-data")
    port = free_port()
    proxy.start_serve("127.0.0.1", port)
    try:
        _deploy(data_dir)
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            yield client, data_dir
    finally:
        serve.shutdown()


@pytest.fixture(scope="module")
def finished_run(service: tuple[httpx.Client, Path]) -> tuple[str, list[dict[str, Any]]]:
    client, _ = service
    answer = client.post("/research", json={"topic": TOPIC, "agents": 2, "iterations": 1, "corpus": str(CORPUS_DIR)})
    assert answer.status_code == 202, answer.text
    body = answer.json()
    assert body["status"] == "accepted" and body["links"]["events"] == f"/research/{body['runId']}/events"
    return body["runId"], _read_sse(client, body["links"]["events"])


def test_event_stream_is_ordered_and_ends_with_completion(finished_run: tuple[str, list[dict[str, Any]]]) -> None:
    run_id, messages = finished_run
    kinds = [m["event"] for m in messages]
    assert kinds[0] == "researchStarted" and kinds[-1] == "researchCompleted"
    assert kinds.count("researchCompleted") == 1 and "researchFailed" not in kinds
    assert kinds.count("agentStarted") == 2 and kinds.count("agentCompleted") == 2
    assert "stageProgress" in kinds
    assert [int(m["id"]) for m in messages] == list(range(1, len(messages) + 1))
    assert all('"runId"' in m["data"] for m in messages)  # camelCase on the wire, like the spec
    events = [parse_event(json.loads(m["data"])) for m in messages]
    assert all(e.run_id == run_id and e.type == m["event"] for e, m in zip(events, messages, strict=True))


def test_completed_run_has_its_result(
    service: tuple[httpx.Client, Path], finished_run: tuple[str, list[dict[str, Any]]]
) -> None:
    client, _ = service
    run_id, _ = finished_run
    body = client.get(f"/research/{run_id}").json()  # the stream ended: the result is already stored
    assert body["status"] == "completed" and body["error"] is None
    result = ConsensusResearchResult.model_validate(body["result"])
    assert result.run_id == run_id and result.metadata.topic == TOPIC and result.sources
    assert result.total_agent_runs == 2 and "runId" in body["result"]
    # issue 40 (2): sources were file:///.../data/corpus/... URLs, server paths
    assert "file://" not in json.dumps(body) and str(CORPUS_DIR) not in json.dumps(body, ensure_ascii=False)
    assert all(source.url.startswith(("corpus://corpus/", "http")) for source in result.sources), result.sources[:3]
    _, events = finished_run
    assert not [e for e in events if "file://" in e.get("data", "")]  # nor in the event stream


def test_a_failed_run_keeps_its_partial_results(service: tuple[httpx.Client, Path]) -> None:
    """Every agent times out twice: the run fails, and what it produced is still served with the error."""
    client, _ = service
    answer = client.post(
        "/research", json={"topic": TOPIC, "agents": 2, "iterations": 1, "timeout": 0.001, "corpus": str(CORPUS_DIR)}
    )
    assert answer.status_code == 202, answer.text
    run_id = answer.json()["runId"]
    kinds = [m["event"] for m in _read_sse(client, f"/research/{run_id}/events")]
    assert kinds[-1] == "researchFailed" and "researchCompleted" not in kinds
    body = client.get(f"/research/{run_id}").json()
    assert body["status"] == "failed" and "2 of 2 agents failed twice" in body["error"]
    assert body["result"] is None and len(body["partial"]["failedAttempts"]) == 2
    assert all(f["timedOut"] for a in body["partial"]["failedAttempts"] for f in a["failures"])


def test_late_client_replays_events_from_last_event_id(
    service: tuple[httpx.Client, Path], finished_run: tuple[str, list[dict[str, Any]]]
) -> None:
    client, _ = service
    run_id, messages = finished_run
    assert _read_sse(client, f"/research/{run_id}/events") == messages
    assert _read_sse(client, f"/research/{run_id}/events", {"Last-Event-ID": "3"}) == messages[3:]


def test_unknown_run_and_bad_input(service: tuple[httpx.Client, Path]) -> None:
    client, _ = service
    for path in ("/research/nope", "/research/nope/events"):
        missing = client.get(path)
        assert missing.status_code == 404 and "調査 'nope' は見つかりません" in missing.json()["error"]
    bad = client.post("/research", json={"topic": TOPIC, "agents": 0})
    assert bad.status_code == 422 and bad.json()["error"].startswith("invalid request: research.agents")
    assert "request field 'agents'" in bad.json()["error"] and "greater than or equal to 1" in bad.json()["error"]
    empty = client.post("/research", json={"topic": "   "})
    assert empty.status_code == 422 and "topic:" in empty.json()["error"]
    no_corpus = client.post("/research", json={"topic": TOPIC, "corpus": "/no/such/corpus"})
    assert no_corpus.status_code == 403 and "/no/such" not in no_corpus.text


def test_runs_survive_a_restart_and_interrupted_runs_run_again(
    service: tuple[httpx.Client, Path], finished_run: tuple[str, list[dict[str, Any]]]
) -> None:
    from ray import serve

    from deployments.research import APP_NAME, MAX_ATTEMPTS

    client, data_dir = service
    run_id, messages = finished_run
    store = Store(sqlite_url(data_dir))
    stored = runs.load_run(store, run_id)
    assert stored is not None and stored.status == "completed" and stored.result_json
    assert len(runs.load_events(store, run_id)) == len(messages)
    serve.delete(APP_NAME)  # first: a live replica would take the runs below over at once (their lease is expired)
    request = {"topic": TOPIC, "agents": 1, "iterations": 1, "corpus": str(CORPUS_DIR)}
    for ghost in ("ghost", "doomed"):  # as if a replica died with these runs in progress
        runs.record_started(store, ghost, TOPIC, status="accepted", request=request)
        assert runs.mark_running(store, ghost)
    runs.append_event(store, "ghost", ResearchStarted(run_id="ghost", topic=TOPIC))  # its first attempt began
    with store.transaction() as conn:  # "doomed" has been restarted before: it may be what kills the replica
        conn.execute(sa.text("UPDATE research_runs SET attempts=:n WHERE run_id='doomed'"), {"n": MAX_ATTEMPTS})
    runs.record_started(store, "cli-run", TOPIC)  # a CLI run (no request) may still be running elsewhere
    store.close()

    _deploy(data_dir)
    again = client.get(f"/research/{run_id}").json()
    assert again["status"] == "completed" and again["result"]["runId"] == run_id
    streamed = _read_sse(client, "/research/ghost/events")
    kinds = [m["event"] for m in streamed]
    assert kinds[:3] == ["researchStarted", "researchRequeued", "researchStarted"] and kinds[-1] == "researchCompleted"
    assert kinds.count("researchRequeued") == 1  # said once
    attempts = [json.loads(m["data"])["attempt"] for m in streamed]
    assert attempts[0] == 1 and set(attempts[1:]) == {2}  # the second attempt's events tell themselves apart
    ghost = client.get("/research/ghost").json()
    assert ghost["status"] == "completed" and ghost["result"]["runId"] == "ghost"
    doomed = client.get("/research/doomed").json()
    assert doomed["status"] == "failed" and f"started {MAX_ATTEMPTS} times" in doomed["error"]
    assert [m["event"] for m in _read_sse(client, "/research/doomed/events")] == ["researchFailed"]
    assert client.get("/research/cli-run").json()["status"] == "running"
