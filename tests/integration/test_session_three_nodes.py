"""Session actors on a 3-node cluster with PostgreSQL as the store: a session whose actor is killed
comes back on ANOTHER node with its state, and concurrent writers still lose nothing.

This module runs its own cluster (tests/integration/conftest.py ``own_cluster``): the session's
single-node Ray is stopped meanwhile.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actors.session import SessionActor, session_actor
from core.runtime import RayRuntime
from core.settings import load_settings
from router.conversation import Reply, Turn, TurnOutcome
from sessions.models import SessionPolicy, SessionState
from tests.integration.conftest import own_cluster

POLICY = SessionPolicy(ttl_s=3600, previous_ttl_s=600, history_limit=500)
MAX_RESTARTS = 30


@pytest.fixture(scope="module")
def three_nodes() -> Iterator[Any]:
    with own_cluster(3) as cluster:
        yield cluster


async def test_killed_session_actor_returns_on_another_node(
    three_nodes: Any, postgres_server: Any, tmp_path: Path
) -> None:
    import ray

    settings = load_settings(
        overrides={"data_dir": tmp_path / "node-local", "store_url": postgres_server.create_database()}
    )
    runtime = RayRuntime()
    handle = await session_actor(runtime, settings, "roaming", POLICY, 300.0)
    first: TurnOutcome = await handle.call(SessionActor.update, "", Turn("What are your opening hours?", 0.5, POLICY))
    assert first.result.request_type == "hours"
    start_node = (await handle.call(SessionActor.where))["node"]
    nodes = {start_node}
    for _ in range(MAX_RESTARTS):  # killed until a successor lands elsewhere (placement is the scheduler's)
        ray.kill(handle.target, no_restart=True)
        await asyncio.sleep(0.2)
        handle = await session_actor(runtime, settings, "roaming", POLICY, 300.0)
        nodes.add((await handle.call(SessionActor.where))["node"])
        if len(nodes) > 1:
            break
    assert len(nodes) > 1, "every restart landed on the same node"
    outcome: TurnOutcome = await handle.call(SessionActor.update, "", Turn("what about Saturday?", 0.5, POLICY))
    assert outcome.result.request_type == "hours" and outcome.result.debug_info.classification.inherited

    await asyncio.gather(
        *(handle.call(SessionActor.update, "", Reply(f"w{i}", "en", "TestAgent", POLICY)) for i in range(50))
    )
    state: SessionState = await handle.call(SessionActor.read, "")
    texts = [e.text for e in state.history]
    assert texts[:2] == ["What are your opening hours?", "what about Saturday?"]
    assert sorted(texts[2:]) == sorted(f"w{i}" for i in range(50))
    assert not list((tmp_path / "node-local").rglob("*.sqlite3"))  # every node used PostgreSQL
