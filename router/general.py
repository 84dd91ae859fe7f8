"""GeneralKnowledgeAgent's answer through the LLM layer, when an LLM is configured (else None).

The system prompt is policy (``data/router/general_prompt.md``): it forbids inventing facts about
Engineer Cafe. The recent turns of the session go along, so "and in Python?" has its context.
"""

from __future__ import annotations

from functools import cache

from core.llm import LLMRequest, Message, make_llm, resolve_role
from core.resources import data_path
from core.settings import LLMSettings
from sessions.models import HistoryEntry

ROLE = "router.general"
CONTEXT_TURNS = 6


@cache
def system_prompt() -> str:
    return data_path("router", "general_prompt.md").read_text(encoding="utf-8").strip()


def llm_configured(llm: LLMSettings) -> bool:
    return resolve_role(llm, ROLE).endpoint is not None


async def general_answer(llm: LLMSettings, query: str, earlier: list[HistoryEntry]) -> str | None:
    """The LLM's answer to ``query`` (None when no LLM is configured)."""
    client = make_llm(llm, role=ROLE)
    if client is None:
        return None
    messages = [
        Message(role=e.role, content=e.text) for e in earlier[-CONTEXT_TURNS:] if e.role in ("user", "assistant")
    ]
    while messages and messages[0].role != "user":  # a conversation starts with the visitor
        messages.pop(0)
    messages.append(Message(role="user", content=query))
    response = await client.complete(LLMRequest(system=system_prompt(), messages=messages, max_tokens=600))
    return response.text.strip() or None


__all__ = ["CONTEXT_TURNS", "ROLE", "general_answer", "llm_configured", "system_prompt"]
