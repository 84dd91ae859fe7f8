"""Session actors on a 3-node cluster with PostgreSQL as the store: a session whose actor is killed
comes back on ANOTHER node with its state, and concurrent writers still lose nothing.

This module runs its own cluster (``three_nodes`` from tests/three_nodes.py): the session's
single-node Ray is stopped meanwhile.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from core.runtime import RayRuntime
from router.conversation import Reply, Turn, TurnOutcome
from sessions.actor import SessionActor, session_actor
from sessions.models import SessionPolicy, SessionState
from tests.three_nodes import ThreeNodes, move_to_another_node

POLICY = SessionPolicy(ttl_s=3600, previous_ttl_s=600, history_limit=500)


async def test_killed_session_actor_returns_on_another_node(three_nodes: ThreeNodes, tmp_path: Path) -> None:
    settings = three_nodes.settings(tmp_path / "node-local")
    runtime = RayRuntime()
    handle = await session_actor(runtime, settings, "roaming", POLICY, 300.0)
    first: TurnOutcome = await handle.call(SessionActor.update, "", Turn("What are your opening hours?", 0.5, POLICY))
    assert first.result.request_type == "hours"
    handle = await move_to_another_node(runtime, settings, "roaming", POLICY, 300.0)
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
