"""The ``magi`` Serve app over real HTTP on 127.0.0.1 (two replicas): API keys, JSON decision, SSE
progress, 422, and concurrent asks served by both replicas with the same three resident sages."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from core.settings import load_settings
from tests.ports import free_port
from tests.sse import named_events

KEY = "magi-test-key"
OTHER_KEY = "magi-other-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
OTHER = {"Authorization": f"Bearer {OTHER_KEY}"}
QUESTION = "Adopt a four-day week?\nmagi-script: melchior=APPROVE balthasar=DENY casper=APPROVE"


@pytest.fixture(scope="module")
def client(ray_cluster: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    from ray import serve

    from deployments import proxy
    from deployments.magi import APP_NAME, ROUTE_PREFIX, build_app

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MAGI_API_KEYS", f"{KEY},{OTHER_KEY}")
        settings = load_settings(
            overrides={
                "data_dir": tmp_path_factory.mktemp("magi-serve"),  # the kept decisions
                "llm": {"provider": "python:magi.scripted:respond"},
                "council": {"replicas": 2},
            }
        )
    port = free_port()
    proxy.start_serve("127.0.0.1", port)
    try:
        serve.run(build_app(settings), name=APP_NAME, route_prefix=ROUTE_PREFIX)
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120) as http:
            yield http
    finally:
        serve.shutdown()


def test_healthz_is_open_and_everything_else_needs_a_key(client: httpx.Client) -> None:
    health = client.get("/magi/healthz")
    assert health.status_code == 200 and "parts" not in health.json()  # no parts without the key
    assert client.get("/magi/healthz", headers=AUTH).json()["parts"]["llm"]["ready"]
    refused = client.post("/magi/ask", json={"prompt": QUESTION})
    assert refused.status_code == 401 and "API key" in refused.json()["error"]


def test_ask_returns_the_json_decision(client: httpx.Client) -> None:
    answer = client.post("/magi/ask", json={"prompt": QUESTION, "rounds": 1, "seed": 3}, headers=AUTH)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["decision"] == "APPROVE" and body["exitCode"] == 0
    assert [v["sage"] for v in body["votes"]] == ["melchior", "balthasar", "casper"]
    assert body["dissent"][0]["sage"] == "balthasar"


def test_bad_options_are_422_naming_the_field(client: httpx.Client) -> None:
    bad = client.post("/magi/ask", json={"prompt": QUESTION, "rounds": -1}, headers=AUTH)
    assert bad.status_code == 422 and "rounds" in bad.json()["error"]
    strict = client.post("/magi/ask", json={"prompt": QUESTION, "quorum": 4}, headers=AUTH)  # from the section
    assert strict.status_code == 422 and "council.quorum from request field 'quorum'" in strict.json()["error"]
    empty = client.post("/magi/ask", json={"prompt": "  "}, headers=AUTH)
    assert empty.status_code == 422 and "prompt is empty" in empty.json()["error"]
    unknown = client.post("/magi/ask", json={"prompt": "x", "shell": "rm"}, headers=AUTH)
    assert unknown.status_code == 422


def test_stream_sends_progress_then_the_result(client: httpx.Client) -> None:
    with client.stream("POST", "/magi/ask/stream", json={"prompt": QUESTION, "rounds": 1}, headers=AUTH) as response:
        events = named_events(response)
    kinds = [k for k, _ in events]
    assert kinds[0] == "phase" and events[0][1]["phase"] == "thinking"
    assert "sage" in kinds and "decided" in kinds and kinds[-1] == "result"
    assert events[-1][1]["decision"] == "APPROVE"
    decided = next(data for kind, data in events if kind == "decided")
    assert decided["progress"] == 100 and decided["runId"].startswith("s")  # typed events (magi/events.py)


def test_each_key_lists_and_reopens_its_own_decisions_only(client: httpx.Client) -> None:
    """Issue 37 (7): every answered ask is kept for the key that asked; one key never sees another's."""
    asked = {}
    for n in range(3):
        body = {"prompt": f"Hire engineer {n}?\nmagi-script: melchior=DENY balthasar=DENY casper=APPROVE", "rounds": 0}
        assert client.post("/magi/ask", json=body, headers=AUTH).status_code == 200
    runs = {"prompt": "Split it?\nmagi-script: melchior=APPROVE balthasar=CONDITIONAL casper=DENY", "runs": 2}
    with client.stream("POST", "/magi/ask/stream", json={**runs, "rounds": 0}, headers=OTHER) as response:
        asked["other"] = named_events(response)[-1][1]
    first = client.get("/magi/decisions", params={"limit": 2}, headers=AUTH).json()
    assert [i["title"] for i in first["items"]] == ["Hire engineer 2?", "Hire engineer 1?"]  # newest first
    assert all(i["outcome"] == "DENY" for i in first["items"]) and first["nextCursor"]
    rest = client.get("/magi/decisions", params={"limit": 2, "cursor": first["nextCursor"]}, headers=AUTH).json()
    assert "Hire engineer 0?" in [i["title"] for i in rest["items"]]
    mine = {i["id"] for i in first["items"] + rest["items"]}
    theirs = client.get("/magi/decisions", headers=OTHER).json()["items"]
    assert [(i["title"], i["outcome"], i["summary"]["runs"]) for i in theirs] == [("Split it?", "SPLIT", 2)]
    assert not mine & {i["id"] for i in theirs}
    reopened = client.get(f"/magi/decisions/{theirs[0]['id']}", headers=OTHER).json()
    assert reopened["result"] == asked["other"] and reopened["record"]["id"] == theirs[0]["id"]
    for stranger in (AUTH, {}):  # another key, or none: not found, or no key at all
        answer = client.get(f"/magi/decisions/{theirs[0]['id']}", headers=stranger)
        assert answer.status_code == (404 if stranger else 401)
    assert client.get("/magi/decisions", params={"cursor": "nonsense!"}, headers=AUTH).status_code == 422
    assert client.get("/magi/decisions", params={"limit": 0}, headers=AUTH).status_code == 422


def test_two_replicas_answer_concurrent_asks_with_the_same_three_resident_sages(client: httpx.Client) -> None:
    import ray
    from ray import serve

    from deployments.magi import APP_NAME
    from magi.models import SageName
    from magi.seats import sage_key

    (deployment,) = serve.status().applications[APP_NAME].deployments.values()
    assert deployment.replica_states.get("RUNNING") == 2

    def ask(seed: int) -> httpx.Response:
        return client.post("/magi/ask", json={"prompt": QUESTION, "rounds": 1, "seed": seed}, headers=AUTH)

    with ThreadPoolExecutor(4) as pool:  # at most serve.client_in_flight (4) from one client
        answers = list(pool.map(ask, range(4)))
    assert [a.status_code for a in answers] == [200] * 4, [a.text for a in answers if a.status_code != 200]
    assert {a.json()["decision"] for a in answers} == {"APPROVE"}
    found = ray.util.list_named_actors(all_namespaces=True)
    sages = sorted(a["name"] for a in found if a["namespace"] == "magi" and a["name"].startswith("Sage:"))
    assert sages == sorted(f"Sage:{sage_key(s, 0)}" for s in SageName)  # not three per ask or per replica
    held = [ray.get(ray.get_actor(name, namespace="magi").conversations.remote()) for name in sages]
    assert held == [0, 0, 0]  # every ask closed its conversations
