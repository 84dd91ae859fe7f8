"""The ``router`` Serve app over real HTTP on 127.0.0.1 with two replicas: routes, follow-ups, answers,
sessions bound to API keys, fifty concurrent writers to one session across both replicas, a replica
killed mid-conversation, and strict input (422 naming the field, 413 for long queries)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from core.settings import load_settings
from deployments.affinity import affinity_rank, session_headers
from tests.ports import free_port

KEY_A = "router-test-key-a"
KEY_B = "router-test-key-b"
REPLICAS = 2


@pytest.fixture(scope="module")
def client(ray_cluster: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    from ray import serve

    from deployments import proxy
    from deployments.router import APP_NAME, ROUTE_PREFIX, build_app

    data_dir = tmp_path_factory.mktemp("router-serve")
    settings = load_settings(
        overrides={
            "data_dir": data_dir,
            "api_keys": [KEY_A, KEY_B],
            "router": {"max_query_chars": 200, "replicas": REPLICAS},
            "llm": {"provider": "python:router.scripted:answer"},
        }
    )
    port = free_port()
    proxy.start_serve("127.0.0.1", port)
    try:
        serve.run(build_app(settings), name=APP_NAME, route_prefix=ROUTE_PREFIX)
        with httpx.Client(
            base_url=f"http://127.0.0.1:{port}/router", timeout=60, headers={"Authorization": f"Bearer {KEY_A}"}
        ) as http:
            yield http
    finally:
        serve.shutdown()


def test_route_and_follow_up(client: httpx.Client) -> None:
    first = client.post("/route", json={"query": "Wi-Fiは何時まで使えますか", "sessionId": "http-1"})
    assert first.status_code == 200, first.text
    body = first.json()
    assert (body["agent"], body["category"], body["requestType"], body["language"]) == (
        "BusinessInfoAgent",
        "facility-info",
        "hours",
        "ja",
    )
    assert body["debugInfo"]["classification"]["reason"]
    follow = client.post("/route", json={"query": "日曜日は？", "sessionId": "http-1"}).json()
    assert follow["requestType"] == "hours" and follow["debugInfo"]["classification"]["inherited"]
    english = client.post("/route", json={"query": "what about Saturday?", "sessionId": "http-1"}).json()
    assert english["requestType"] == "hours" and english["language"] == "en"


def test_ask_answers_memory_time_and_general(client: httpx.Client) -> None:
    session = {"sessionId": "http-ask"}
    routed = client.post("/ask", json={"query": "料金はいくらですか？", **session}).json()
    assert routed["answered"] is False and routed["answeredBy"] is None
    assert "料金" in routed["answer"] and "Agent" not in routed["answer"]  # the topic, no agent, no price
    assert "engineercafe.jp" in routed["answer"]  # what the visitor can do next
    memory = client.post("/ask", json={"query": "さっき何を聞いたか覚えてる？", **session}).json()
    assert memory["answered"] and memory["answeredBy"] == "MemoryAgent"
    assert "料金はいくらですか？" in memory["answer"]
    now = client.post("/ask", json={"query": "What time is it?", **session}).json()
    assert now["answeredBy"] == "TimeAgent" and "Asia/Tokyo" in now["answer"]
    general = client.post("/ask", json={"query": "機械学習とは何ですか", **session}).json()
    assert general["answeredBy"] == "GeneralKnowledgeAgent" and "スクリプト応答" in general["answer"]
    assert "<<<" not in general["answer"]  # the model read the question out of its fence
    history = client.get("/sessions/http-ask").json()["history"]
    assert [e["role"] for e in history] == ["user", "user", "assistant", "user", "assistant", "user", "assistant"]
    assert history[-1]["agent"] == "GeneralKnowledgeAgent"


def test_another_key_sees_nothing(client: httpx.Client) -> None:
    assert client.post("/route", json={"query": "営業時間は？", "sessionId": "private-1"}).status_code == 200
    other = {"Authorization": f"Bearer {KEY_B}"}
    assert client.get("/sessions/private-1", headers=other).status_code == 404
    assert client.get("/sessions/never-created").status_code == 404  # same answer as another's session
    # the same id under another key is that key's own session (issue 21: ids are namespaced per
    # client, so nobody can squat or read another's): both go on, neither sees the other
    theirs = client.post("/route", json={"query": "日曜日は？", "sessionId": "private-1"}, headers=other)
    assert theirs.status_code == 200
    mine = client.get("/sessions/private-1").json()
    assert [e["text"] for e in mine["history"]] == ["営業時間は？"] and "owner" not in mine
    their_history = client.get("/sessions/private-1", headers=other).json()["history"]
    assert [e["text"] for e in their_history if e["role"] == "user"] == ["日曜日は？"]
    assert client.get("/sessions/private-1", headers={"Authorization": "Bearer wrong"}).status_code == 401


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"query": "営業時間は？"}, "sessionId"),
        ({"sessionId": "ok"}, "query"),
        ({"query": "営業時間は？", "sessionId": "has space"}, "sessionId"),
        ({"query": "営業時間は？", "sessionId": "x" * 129}, "sessionId"),
        ({"query": 42, "sessionId": "ok"}, "query"),
        ({"query": "営業時間は？", "sessionId": "ok", "extra": 1}, "extra"),
        ({"query": "\u0007\u0008", "sessionId": "ok"}, "query"),
        ({"query": "営業時間は？", "sessionId": "ok", "threshold": 2}, "confidence_threshold from request field"),
    ],
)
def test_bad_bodies_are_422_naming_the_field(client: httpx.Client, body: dict[str, object], field: str) -> None:
    answer = client.post("/route", json=body)
    assert answer.status_code == 422, answer.text
    assert field in answer.json()["error"]


def test_bad_ids_long_queries_and_broken_json(client: httpx.Client) -> None:
    assert client.get("/sessions/bad%20id").status_code == 422
    long = client.post("/route", json={"query": "あ" * 201, "sessionId": "ok"})
    assert long.status_code == 413 and "200" in long.json()["error"]
    broken = client.post("/route", content=b"{not json", headers={"content-type": "application/json"})
    assert broken.status_code == 422


def test_health_and_docs(client: httpx.Client) -> None:
    base = str(client.base_url).rstrip("/")
    health = httpx.get(f"{base}/healthz")  # open without a key: the bare status
    assert health.status_code == 200 and "parts" not in health.json()
    assert set(client.get("/healthz").json()["parts"]) == {"store", "rules", "sessions"}
    assert client.get("/openapi.json").json()["info"]["title"] == "MAGI Engineer Cafe router"
    assert httpx.get(f"{base}/openapi.json").status_code == 401


def _replicas() -> dict[str, Any]:
    """The router's live replica actors by their Serve replica id (named ``SERVE_REPLICA::app#deployment#id``)."""
    import ray

    prefix = "SERVE_REPLICA::router#RouterService#"
    names = [a["name"] for a in ray.util.list_named_actors(all_namespaces=True) if a["name"].startswith(prefix)]
    return {name.removeprefix(prefix): ray.get_actor(name, namespace="serve") for name in names}


async def test_fifty_writers_to_one_session_across_replicas_lose_no_turn(client: httpx.Client) -> None:
    assert len(_replicas()) == REPLICAS
    limits = httpx.Limits(max_connections=50)
    async with httpx.AsyncClient(base_url=client.base_url, headers=client.headers, timeout=60, limits=limits) as http:
        # no session header: Serve spreads the writers over both replicas, which both host the session
        answers = await asyncio.gather(
            *(http.post("/route", json={"query": f"質問{i}: 営業時間は？", "sessionId": "crowd"}) for i in range(50))
        )
    assert [a.status_code for a in answers] == [200] * 50
    history = client.get("/sessions/crowd").json()["history"]
    assert sorted(e["text"] for e in history) == sorted(f"質問{i}: 営業時間は？" for i in range(50))


def test_a_killed_replica_loses_no_turn(client: httpx.Client) -> None:
    import ray

    session = session_headers("kill-1")
    assert client.post(
        "/route", json={"query": "料金はいくらですか？", "sessionId": "kill-1"}, headers=session
    ).is_success
    assert client.post("/route", json={"query": "土日は？", "sessionId": "kill-1"}, headers=session).is_success
    replicas = _replicas()
    holder = affinity_rank("kill-1", list(replicas))[0]  # the replica the header's session lands on
    ray.kill(replicas[holder], no_restart=True)
    with pytest.raises(ray.exceptions.RayActorError):  # gone before the next turn is sent
        ray.get(replicas[holder].__ray_ready__.remote(), timeout=30)
    follow = client.post("/route", json={"query": "平日は？", "sessionId": "kill-1"}, headers=session)
    assert follow.status_code == 200, follow.text
    assert follow.json()["requestType"] == "price" and follow.json()["debugInfo"]["classification"]["inherited"]
    memory = client.post("/ask", json={"query": "さっき何を聞いたか覚えてる？", "sessionId": "kill-1"}, headers=session)
    assert "料金はいくらですか？" in memory.json()["answer"] and "土日は？" in memory.json()["answer"]
    history = client.get("/sessions/kill-1").json()["history"]
    assert [e["text"] for e in history if e["role"] == "user"][:3] == ["料金はいくらですか？", "土日は？", "平日は？"]
