"""The ``critic`` Serve app over real HTTP on 127.0.0.1 (two replicas), behind the API-key guard."""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from core.resources import data_path
from core.settings import load_settings
from core.version import release
from tests.ports import free_port
from tests.sse import named_events

KEY = "critic-key-42"
OTHER_KEY = "critic-key-43"
AUTH = {"Authorization": f"Bearer {KEY}"}
OTHER = {"Authorization": f"Bearer {OTHER_KEY}"}
IDEAS = json.loads(data_path("critic", "examples", "ideas.json").read_text(encoding="utf-8"))["ideas"]


@pytest.fixture(scope="module")
def service(ray_cluster: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    from ray import serve

    from deployments import proxy
    from deployments.critic import APP_NAME, ROUTE_PREFIX, build_app

    settings = load_settings(
        overrides={
            "data_dir": tmp_path_factory.mktemp("critic-serve"),
            "api_keys": [KEY, OTHER_KEY],
            "llm": {"provider": "python:critic.scripted:judge"},
            "critic": {"replicas": 2, "max_workers": 3},
        }
    )
    port = free_port()
    proxy.start_serve("127.0.0.1", port)
    try:
        serve.run(build_app(settings), name=APP_NAME, route_prefix=ROUTE_PREFIX)
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
            # the resident workers start here, so they belong to the module, not to its first test
            warm = client.post("/critic/evaluate", json={"ideas": IDEAS, "noCache": True}, headers=AUTH)
            assert warm.status_code == 200, warm.text
            yield client
    finally:
        serve.shutdown()


def test_evaluate_returns_the_critic_output_and_then_serves_the_cache(service: httpx.Client) -> None:
    answer = service.post("/critic/evaluate", json={"ideas": IDEAS, "weights": "60:40"}, headers=AUTH)
    assert answer.status_code == 200, answer.text
    out = answer.json()
    assert out["weights"] == {"market": 60.0, "synergy": 40.0} and len(out["evaluations"]) == 5
    assert out["selectedIdea"]["id"] in {i["id"] for i in IDEAS}
    again = service.post("/critic/evaluate", json={"ideas": IDEAS, "weights": "60:40"}, headers=AUTH).json()
    assert again["usage"]["llm"]["calls"] == 0 and again["selectedIdea"] == out["selectedIdea"]


def test_the_key_is_needed_but_not_for_healthz(service: httpx.Client) -> None:
    assert service.post("/critic/evaluate", json={"ideas": IDEAS}).status_code == 401
    assert service.get("/critic/healthz").status_code == 200


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"ideas": []}, "ideas: List should have at least 1 item"),
        ({"ideas": IDEAS, "weights": "70:40"}, "do not add up to 100"),
        ({"ideas": IDEAS, "marketWeight": 120}, "critic.market_weight from request field 'marketWeight'"),
        ({"ideas": IDEAS, "samples": "3"}, "samples"),
        ({"ideas": IDEAS, "timeout": "30"}, "timeout"),
        ({"ideas": IDEAS, "noCache": 1}, "noCache"),
        ({"ideas": IDEAS, "industry": "space"}, "no industry profile 'space'"),
        ({"ideas": IDEAS, "extra": 1}, "extra: Extra inputs are not permitted"),
    ],
)
def test_bad_requests_are_422_naming_the_field(service: httpx.Client, body: dict[str, object], expected: str) -> None:
    answer = service.post("/critic/evaluate", json=body, headers=AUTH)
    assert answer.status_code == 422, answer.text
    assert expected in answer.json()["error"]
    assert str(Path.cwd()) not in answer.text


def test_healthz_answers_one_part_per_need(service: httpx.Client) -> None:
    answer = service.get("/critic/healthz", headers=AUTH)
    assert answer.status_code == 200, answer.text
    assert answer.json()["version"] == release()  # which release this replica runs
    parts = answer.json()["parts"]
    assert set(parts) == {"store", "llm", "workers"} and all(p["ready"] for p in parts.values())
    assert parts["store"]["detail"] == "reachable (sqlite)"
    # two replicas: the one answering holds the workers it has used, or none yet (they start on use)
    workers = parts["workers"]["detail"]
    assert workers.endswith(" warm") or workers.startswith("none started yet"), workers


def test_the_stream_reports_each_idea_then_the_output(service: httpx.Client) -> None:
    body = {"ideas": IDEAS, "weights": "55:45", "noCache": True}
    with service.stream("POST", "/critic/evaluate/stream", json=body, headers=AUTH) as response:
        events = named_events(response)
    kinds = [k for k, _ in events if k != "ideaJudging"]
    assert kinds == ["evaluationStarted", *["ideaJudged"] * len(IDEAS), "evaluationCompleted", "result"]
    assert sorted(data["ideaId"] for k, data in events if k == "ideaJudging") == sorted(i["id"] for i in IDEAS)
    assert [data["done"] for k, data in events if k == "ideaJudged"] == list(range(1, len(IDEAS) + 1))
    result = events[-1][1]
    assert result["selectedIdea"] == {"id": events[-2][1]["selectedIdeaId"], "title": result["selectedIdea"]["title"]}
    refused = service.post("/critic/evaluate/stream", json={"ideas": []}, headers=AUTH)
    assert refused.status_code == 422


def test_each_key_lists_and_reopens_its_own_runs_only(service: httpx.Client) -> None:
    """Issue 37 (7): every answered run is kept for the key that asked; one key never sees another's."""
    theirs = service.post("/critic/evaluate", json={"ideas": IDEAS[:2]}, headers=OTHER)
    assert theirs.status_code == 200, theirs.text
    listed = service.get("/critic/evaluations", params={"limit": 50}, headers=OTHER).json()
    assert len(listed["items"]) == 1 and listed["nextCursor"] is None
    (entry,) = listed["items"]
    assert entry["summary"]["ideas"] == 2 and entry["outcome"] == "selected"
    assert entry["summary"]["selected"] == theirs.json()["selectedIdea"]["title"]
    reopened = service.get(f"/critic/evaluations/{entry['id']}", headers=OTHER).json()
    assert reopened["result"] == theirs.json()
    mine = service.get("/critic/evaluations", params={"limit": 50}, headers=AUTH).json()["items"]
    assert mine and entry["id"] not in {i["id"] for i in mine}  # the warm-up and the tests before: this key's
    assert all(i["summary"]["ideas"] == len(IDEAS) for i in mine)
    assert service.get(f"/critic/evaluations/{entry['id']}", headers=AUTH).status_code == 404
    assert service.get(f"/critic/evaluations/{mine[0]['id']}", headers=OTHER).status_code == 404
    assert service.get("/critic/evaluations").status_code == 401


def test_two_replicas_answer_concurrent_evaluations(service: httpx.Client) -> None:
    from ray import serve

    from deployments.critic import APP_NAME

    (deployment,) = serve.status().applications[APP_NAME].deployments.values()
    assert deployment.replica_states.get("RUNNING") == 2
    bodies = [{"ideas": IDEAS, "noCache": True, "samples": 1} for _ in range(4)]
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda body: service.post("/critic/evaluate", json=body, headers=AUTH), bodies))
    assert [a.status_code for a in answers] == [200] * 4, [a.text for a in answers if a.status_code != 200]
    assert len({a.json()["selectedIdea"]["id"] for a in answers}) == 1  # the same scripted judge everywhere
