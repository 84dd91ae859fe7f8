"""An advisor session on a 3-node cluster with PostgreSQL as the store: the node hosting it loses its
host mid-conversation, and the conversation continues on ANOTHER node with its mode, history and the
earlier tool results. Runs its own cluster (``three_nodes`` from tests/three_nodes.py); the session's
single-node Ray is stopped meanwhile."""

from __future__ import annotations

from pathlib import Path

from advisor.orchestrator import Orchestrator
from advisor.settings import AdvisorSettings
from tests.three_nodes import RemoteSessions, ThreeNodes, replicas_on_two_nodes


async def test_an_advisor_session_continues_on_another_node(three_nodes: ThreeNodes, tmp_path: Path) -> None:
    import ray

    settings = three_nodes.settings(tmp_path, llm={"provider": "python:advisor.scripted:respond"})
    policy = AdvisorSettings.of(settings).session_policy()
    here, there = replicas_on_two_nodes(settings, policy)
    first = [
        e
        async for e in Orchestrator(settings, RemoteSessions(here)).turn(
            "roaming-advice", "", "値上げの試算をお願いします"
        )
    ]
    assert first[-1].mode == "mode2"
    ray.kill(here, no_restart=True)
    orchestrator = Orchestrator(settings, RemoteSessions(there))
    second = [e async for e in orchestrator.turn("roaming-advice", "", "申入書を作ってください")]
    assert second[-1].mode == "mode2" and sorted(f["type"] for f in second[-1].files) == ["pdf", "word"]
    state = await there.read.remote("roaming-advice", "")
    assert [e.text for e in state.history if e.role == "user"] == [
        "値上げの試算をお願いします",
        "申入書を作ってください",
    ]
    tools = [r["tool"] for r in state.attributes["tool_results"]]
    assert tools == ["calculate_cost_impact", "generate_document", "generate_document"]  # the letter: PDF, Word
    assert all(r["input"]["include_cost_table"] is True for r in state.attributes["tool_results"][1:])
    assert not list(tmp_path.rglob("*.sqlite3"))  # every node used PostgreSQL
