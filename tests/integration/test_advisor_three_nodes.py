"""An advisor session on a 3-node cluster with PostgreSQL as the store: its session actor is killed until
a successor lands on ANOTHER node, and the conversation continues there with its mode, history and the
earlier tool results. Runs its own cluster (``three_nodes`` from tests/three_nodes.py); the session's
single-node Ray is stopped meanwhile."""

from __future__ import annotations

from pathlib import Path

from advisor.orchestrator import Orchestrator
from advisor.settings import AdvisorSettings
from core.runtime import RayRuntime
from sessions.actor import SessionActor
from sessions.gateway import ActorSessions
from tests.three_nodes import ThreeNodes, move_to_another_node


async def test_an_advisor_session_continues_on_another_node(three_nodes: ThreeNodes, tmp_path: Path) -> None:
    settings = three_nodes.settings(tmp_path, llm={"provider": "python:advisor.scripted:respond"})
    policy = AdvisorSettings.of(settings).session_policy()
    runtime = RayRuntime()
    orchestrator = Orchestrator(settings, ActorSessions(runtime, settings, policy, 300.0))
    first = [e async for e in orchestrator.turn("roaming-advice", "", "値上げの試算をお願いします")]
    assert first[-1].mode == "mode2"
    handle = await move_to_another_node(runtime, settings, "roaming-advice", policy, 300.0)
    second = [e async for e in orchestrator.turn("roaming-advice", "", "申入書を作ってください")]
    assert second[-1].mode == "mode2" and sorted(f["type"] for f in second[-1].files) == ["pdf", "word"]
    state = await handle.call(SessionActor.read, "")
    assert [e.text for e in state.history if e.role == "user"] == [
        "値上げの試算をお願いします",
        "申入書を作ってください",
    ]
    tools = [r["tool"] for r in state.attributes["tool_results"]]
    assert tools == ["calculate_cost_impact", "generate_document", "generate_document"]  # the letter: PDF, Word
    assert all(r["input"]["include_cost_table"] is True for r in state.attributes["tool_results"][1:])
    assert not list(tmp_path.rglob("*.sqlite3"))  # every node used PostgreSQL
