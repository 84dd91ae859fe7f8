"""Sessions on a 3-node cluster with PostgreSQL as the store: a session hosted on one node whose host
is killed goes on with its history on ANOTHER node, and concurrent writers on two nodes lose nothing.

This module runs its own cluster (``three_nodes`` from tests/three_nodes.py): the session's
single-node Ray is stopped meanwhile.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from router.conversation import Reply, Turn, TurnOutcome
from sessions.models import SessionPolicy, SessionState
from tests.three_nodes import ThreeNodes, replicas_on_two_nodes

POLICY = SessionPolicy(ttl_s=3600, previous_ttl_s=600, history_limit=500)


async def test_a_session_goes_on_on_another_node(three_nodes: ThreeNodes, tmp_path: Path) -> None:
    import ray

    settings = three_nodes.settings(tmp_path / "node-local")
    here, there = replicas_on_two_nodes(settings, POLICY)
    assert await here.node.remote() != await there.node.remote()
    first: TurnOutcome = await here.update.remote("roaming", "", Turn("What are your opening hours?", 0.5, POLICY))
    assert first.result.request_type == "hours"
    ray.kill(here, no_restart=True)
    outcome: TurnOutcome = await there.update.remote("roaming", "", Turn("what about Saturday?", 0.5, POLICY))
    assert outcome.result.request_type == "hours" and outcome.result.debug_info.classification.inherited

    hosts = (there, *replicas_on_two_nodes(settings, POLICY))  # three hosts of the session, on two or more nodes
    await asyncio.gather(
        *(hosts[i % 3].update.remote("roaming", "", Reply(f"w{i}", "en", "TestAgent", POLICY)) for i in range(50))
    )
    state: SessionState = await there.read.remote("roaming", "")
    texts = [e.text for e in state.history]
    assert texts[:2] == ["What are your opening hours?", "what about Saturday?"]
    assert sorted(texts[2:]) == sorted(f"w{i}" for i in range(50))
    assert not list((tmp_path / "node-local").rglob("*.sqlite3"))  # every node used PostgreSQL
