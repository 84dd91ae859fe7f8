"""GeneralKnowledgeAgent's answer through the LLM layer, when an LLM is configured (else None).

The system prompt is policy (``data/router/general_prompt.md``): it forbids inventing facts about
Engineer Cafe and names the visitor's language. The recent turns of the session go along, so "and
in Python?" has its context; every visitor message is fenced as data (``<<<VISITOR``), so a
question cannot pass itself off as instructions.
"""

from __future__ import annotations

from functools import cache
from string import Template

from core.llm import LLMRequest, Message, make_llm, resolve_role
from core.llm.fencing import fence
from core.resources import data_path
from core.settings import LLMSettings
from sessions.models import HistoryEntry

ROLE = "router.general"
CONTEXT_TURNS = 6


LANGUAGES = {"ja": "Japanese", "en": "English"}
OFFICIAL_SITE = "https://engineercafe.jp/"


@cache
def _template() -> Template:
    return Template(data_path("router", "general_prompt.md").read_text(encoding="utf-8").strip())


def system_prompt(language: str = "ja", site: str = OFFICIAL_SITE) -> str:
    return _template().substitute(language=LANGUAGES.get(language, "Japanese"), site=site)


def _visitor(message: Message) -> Message:
    return Message(role="user", content=fence(message.text, "VISITOR")) if message.role == "user" else message


def llm_configured(llm: LLMSettings) -> bool:
    return resolve_role(llm, ROLE).endpoint is not None


async def general_answer(
    llm: LLMSettings, query: str, earlier: list[HistoryEntry], language: str = "ja", site: str = OFFICIAL_SITE
) -> str | None:
    """The LLM's answer to ``query`` in ``language`` (None when no LLM is configured)."""
    client = make_llm(llm, role=ROLE)
    if client is None:
        return None
    messages = [
        Message(role=e.role, content=e.text) for e in earlier[-CONTEXT_TURNS:] if e.role in ("user", "assistant")
    ]
    while messages and messages[0].role != "user":  # a conversation starts with the visitor
        messages.pop(0)
    messages.append(Message(role="user", content=query))
    request = LLMRequest(system=system_prompt(language, site), messages=[_visitor(m) for m in messages], max_tokens=600)
    response = await client.complete(request)
    return response.text.strip() or None


__all__ = ["CONTEXT_TURNS", "LANGUAGES", "OFFICIAL_SITE", "ROLE", "general_answer", "llm_configured", "system_prompt"]
