"""One tool run on its own that is recorded in a session, as a chat turn's tool call would be: the
tool sees the session's earlier results, files and role-play rounds, and its result, files and round
are written back, so ``magi tool calculate_cost_impact --session S`` followed by a letter with
``include_cost_table`` works."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel

from advisor.conversation import Begin, Commit
from advisor.settings import AdvisorSettings
from advisor.tools import REGISTRY, dump
from advisor.tools.base import ToolContext
from core.llm.base import LLMClient
from core.settings import Settings
from sessions.gateway import SessionGateway


async def run_in_session(
    settings: Settings,
    sessions: SessionGateway,
    key: str,
    owner: str,
    name: str,
    data: BaseModel,
    llm: LLMClient | None,
) -> dict[str, Any]:
    """Run tool ``name`` on validated ``data`` in session ``key`` and record it; its JSON output."""
    policy = AdvisorSettings.of(settings).session_policy()
    state = await sessions.update(key, owner, Begin())
    ctx = ToolContext(
        settings,
        session_id=key,
        llm=llm,
        earlier=list(state.attributes.get("tool_results", [])),
        negotiation_rounds=list(state.attributes.get("negotiation", [])),
        files=list(state.attributes.get("files", [])),
    )
    result = dump(await REGISTRY[name].run(data, ctx))
    record = {
        "tool": name,
        "input": data.model_dump(mode="json"),
        "output": result,
        "at": datetime.now(UTC).isoformat(),
    }
    rounds = []
    if name == "simulate_negotiation":
        rounds = [
            {
                "round": result["round"],
                "user_response": getattr(data, "user_response", ""),
                "opponent_response": result["opponent_response"],
                "score": result["feedback"]["score"],
            }
        ]
    change = Commit([], policy, files=result.get("files") or [], tool_results=[record], negotiation=rounds)
    await sessions.update(key, owner, change)
    return result


__all__ = ["run_in_session"]
