"""Answers the router can give truthfully without an LLM, in the visitor's language.

- MemoryAgent: what the visitor asked before in this session (their own words, from the history).
- TimeAgent: the current time in Asia/Tokyo.
- Any other agent: which desk the question belongs to (the routing is real without a model), that
  this desk cannot answer the topic yet and where the visitor can find out (the official site, the
  staff) - never the internal agent's name, nothing about Engineer Cafe made up - and, when no model
  is configured, why, and what it can answer here (the time, the conversation so far).
  Labels: ``data/router/messages.yaml``.
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from core.messages import Lang, catalogue
from sessions.models import HistoryEntry

TOKYO = ZoneInfo("Asia/Tokyo")
MEMORY_SHOWN = 5


def memory_answer(previous: list[HistoryEntry], language: str) -> str:
    """The visitor's earlier questions (newest last), at most ``MEMORY_SHOWN``."""
    c, lang = catalogue("router"), _lang(language)
    asked = [e.text for e in previous if e.role == "user"][-MEMORY_SHOWN:]
    if not asked:
        return c.text("answer.memory_none", lang)
    return c.text("answer.memory_list", lang, lines="\n".join(f"{i}. {q}" for i, q in enumerate(asked, start=1)))


def time_answer(now: datetime, language: str) -> str:
    local = now.astimezone(TOKYO)
    weekday = "月火水木金土日"[local.weekday()]
    return catalogue("router").text(
        "answer.time",
        _lang(language),
        year=local.year,
        month=local.month,
        day=local.day,
        weekday=weekday,
        clock=f"{local:%H:%M}",
        date=f"{local:%A, %d %B %Y}",
    )


def _lang(language: str) -> Lang:
    return "en" if language == "en" else "ja"


CLARIFY = {
    "cafe-clarification-needed": "answer.clarify_cafe",
    "meeting-room-clarification-needed": "answer.clarify_room",
}


def unavailable_answer(
    agent: str,
    language: str,
    *,
    category: str = "general",
    request_type: str | None = None,
    llm_configured: bool = False,
    llm_failed: bool = False,
    official_site: str = "https://engineercafe.jp/",
) -> str:
    """What a visitor reads when no answer can be given here: the topic in their words, what they can
    do next, and why (no model only when none is configured)."""
    c, lang = catalogue("router"), _lang(language)
    if agent == "ClarificationAgent":
        return c.text(CLARIFY.get(category, "answer.clarify_general"), lang)
    if request_type is not None:
        first = c.text("answer.topic_unavailable", lang, topic=c.text(f"request.{request_type}", lang))
    elif category != "general" and f"category.{category}" in c.messages:
        first = c.text("answer.topic_unavailable", lang, topic=c.text(f"category.{category}", lang))
    else:
        first = c.text("answer.general_unavailable", lang)
    parts = [first, c.text("answer.next_step", lang, url=official_site)]
    if llm_failed:
        parts.append(c.text("answer.model_failed", lang))
    elif not llm_configured:
        desk = (
            c.text("answer.routed", lang, desk=c.text(f"agent.{agent}", lang)) if f"agent.{agent}" in c.messages else ""
        )
        parts = [desk + first, parts[1], c.text("answer.no_model", lang), c.text("answer.can_do", lang)]
    return ("" if lang == "ja" else " ").join(parts)


__all__ = ["CLARIFY", "MEMORY_SHOWN", "TOKYO", "memory_answer", "time_answer", "unavailable_answer"]
