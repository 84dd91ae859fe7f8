"""Answers the router can give truthfully without an LLM, in the visitor's language.

- MemoryAgent: what the visitor asked before in this session (their own words, from the history).
- TimeAgent: the current time in Asia/Tokyo.
- Any other agent: which agent would answer, and that no answer is available here - nothing about
  Engineer Cafe is made up.
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from sessions.models import HistoryEntry

TOKYO = ZoneInfo("Asia/Tokyo")
MEMORY_SHOWN = 5


def memory_answer(previous: list[HistoryEntry], language: str) -> str:
    """The visitor's earlier questions (newest last), at most ``MEMORY_SHOWN``."""
    asked = [e.text for e in previous if e.role == "user"][-MEMORY_SHOWN:]
    if language == "en":
        if not asked:
            return "You have not asked me anything earlier in this conversation."
        lines = "\n".join(f"{i}. {q}" for i, q in enumerate(asked, start=1))
        return f"Earlier in this conversation you asked:\n{lines}"
    if not asked:
        return "この会話では、まだ何も質問されていません。"
    lines = "\n".join(f"{i}. {q}" for i, q in enumerate(asked, start=1))
    return f"この会話でこれまでに聞かれた質問です：\n{lines}"


def time_answer(now: datetime, language: str) -> str:
    local = now.astimezone(TOKYO)
    if language == "en":
        return f"It is {local:%H:%M} on {local:%A, %d %B %Y} in Japan (Asia/Tokyo)."
    weekday = "月火水木金土日"[local.weekday()]
    return f"現在の日本時間は{local.year}年{local.month}月{local.day}日（{weekday}）{local:%H:%M}です。"


def unavailable_answer(agent: str, language: str) -> str:
    if language == "en":
        return (
            f"This question is for the {agent}, which has no answer to give on this server "
            "(no language model or knowledge base is configured). Nothing is guessed."
        )
    return (
        f"この質問は{agent}の担当ですが、このサーバーでは回答を用意できません"
        "（LLM・知識ベース未設定のため、推測では答えません）。"
    )


__all__ = ["MEMORY_SHOWN", "TOKYO", "memory_answer", "time_answer", "unavailable_answer"]
