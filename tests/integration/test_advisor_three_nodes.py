"""An advisor session on a 3-node cluster with PostgreSQL as the store: its session actor is killed until
a successor lands on ANOTHER node, and the conversation continues there with its mode, history and the
earlier tool results. Runs its own cluster (``own_cluster``); the session's single-node Ray is stopped
meanwhile."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actors.session import SessionActor, session_actor
from advisor.conversation import ActorSessions
from advisor.options import session_policy
from advisor.orchestrator import Orchestrator
from core.runtime import RayRuntime
from core.settings import load_settings
from tests.integration.conftest import own_cluster

MAX_RESTARTS = 30


@pytest.fixture(scope="module")
def three_nodes() -> Iterator[Any]:
    with own_cluster(3) as cluster:
        yield cluster


async def test_an_advisor_session_continues_on_another_node(
    three_nodes: Any, postgres_server: Any, tmp_path: Path
) -> None:
    import ray

    settings = load_settings(
        overrides={
            "data_dir": tmp_path,
            "store_url": postgres_server.create_database(),
            "llm": {"provider": "python:advisor.scripted:respond"},
        }
    )
    policy = session_policy(settings)
    runtime = RayRuntime()
    orchestrator = Orchestrator(settings, ActorSessions(runtime, settings, policy, 300.0))
    first = [e async for e in orchestrator.turn("roaming-advice", "", "値上げの試算をお願いします")]
    assert first[-1]["mode"] == "mode2"
    handle = await session_actor(runtime, settings, "roaming-advice", policy, 300.0)
    nodes = {(await handle.call(SessionActor.where))["node"]}
    for _ in range(MAX_RESTARTS):  # placement is the scheduler's: kill until a successor lands elsewhere
        ray.kill(handle.target, no_restart=True)
        await asyncio.sleep(0.2)
        handle = await session_actor(runtime, settings, "roaming-advice", policy, 300.0)
        nodes.add((await handle.call(SessionActor.where))["node"])
        if len(nodes) > 1:
            break
    assert len(nodes) > 1, "every restart landed on the same node"
    second = [e async for e in orchestrator.turn("roaming-advice", "", "申入書を作ってください")]
    assert second[-1]["mode"] == "mode2" and [f["type"] for f in second[-1]["files"]] == ["pdf"]
    state = await handle.call(SessionActor.read, "")
    assert [e.text for e in state.history if e.role == "user"] == [
        "値上げの試算をお願いします",
        "申入書を作ってください",
    ]
    assert [r["tool"] for r in state.attributes["tool_results"]] == ["calculate_cost_impact", "generate_document"]
    assert state.attributes["tool_results"][1]["input"]["include_cost_table"] is True
    assert not list(tmp_path.rglob("*.sqlite3"))  # every node used PostgreSQL
