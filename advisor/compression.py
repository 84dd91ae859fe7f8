"""Compression of long sessions: the older entries become one summary entry, the newest stay verbatim.

The summary is written by the LLM (``prompts/summary.md``); if that fails, a deterministic digest
(the first words of each older message) takes its place, so a session never grows without bound
because of a failing summariser. Earlier summaries are part of what is summarised next time.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from advisor.policy import prompt
from core.errors import MagiError, first_line
from core.llm.base import LLMClient, Message, generate
from sessions.models import HistoryEntry

log = logging.getLogger(__name__)
SUMMARY_AGENT = "summary"
FALLBACK_LINE_CHARS = 60
FALLBACK_MAX_LINES = 30
LABEL = {"user": "ユーザー", "assistant": "アドバイザー", "system": "記録"}


@dataclass(frozen=True)
class Compression:
    summary: HistoryEntry
    cutoff_index: int  # entries [0, cutoff_index) are replaced

    @property
    def until(self) -> datetime:
        return self.summary.timestamp


def transcript(entries: list[HistoryEntry]) -> str:
    return "\n".join(f"{LABEL[e.role]}: {e.text}" for e in entries)


def fallback_summary(entries: list[HistoryEntry]) -> str:
    lines = [
        f"{LABEL[e.role]}: {e.text[:FALLBACK_LINE_CHARS]}{'…' if len(e.text) > FALLBACK_LINE_CHARS else ''}"
        for e in entries
        if e.role != "system" or e.agent == SUMMARY_AGENT
    ]
    if len(lines) > FALLBACK_MAX_LINES:
        lines = [*lines[:5], f"…（{len(lines) - FALLBACK_MAX_LINES + 5}件省略）…", *lines[-(FALLBACK_MAX_LINES - 5) :]]
    return "（自動要約・簡易版）\n" + "\n".join(lines)


async def compress(llm: LLMClient, history: list[HistoryEntry], after: int, keep: int) -> Compression | None:
    """A compression of ``history`` when it has more than ``after`` entries, else None."""
    if len(history) <= after or len(history) <= keep:
        return None
    old = history[: len(history) - keep]
    by = "llm"
    try:
        done = await generate(
            llm,
            system=prompt("summary"),
            messages=[Message(role="user", content=transcript(old))],
            role="advisor.summary",
            max_tokens=800,
        )
        text = done.response.text.strip()
        if not text:
            raise MagiError("the summary is empty")
    except MagiError as exc:
        log.warning("summarising %d entries failed (%s); using the deterministic digest", len(old), first_line(exc))
        text, by = fallback_summary(old), "fallback"
    entry = HistoryEntry(
        role="system",
        text=f"これまでの会話の要約:\n{text}",
        agent=SUMMARY_AGENT,
        timestamp=old[-1].timestamp,
        metadata={"summarised": len(old), "by": by},
    )
    return Compression(entry, len(old))


__all__ = ["SUMMARY_AGENT", "Compression", "compress", "fallback_summary", "transcript"]
