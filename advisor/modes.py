"""Mode detection: the spec's keywords first (no LLM call), the LLM's classification otherwise.

The classifier sees the message and the last ``classify_history`` entries and returns a confidence
that the conversation is about price pass-through; above ``mode_threshold`` it is Mode 2. A failed
or malformed classification keeps the current mode (a chat must not break on a flaky classifier).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from pydantic import BaseModel, Field

from advisor.fencing import as_data
from advisor.policy import Mode, modes, prompt
from core.errors import MagiError, first_line
from core.llm.base import LLMClient, Message, generate
from sessions.models import HistoryEntry

log = logging.getLogger(__name__)


class ModeGuess(BaseModel):
    mode2_confidence: float = Field(ge=0, le=1)
    reason: str = ""


@dataclass(frozen=True)
class Detection:
    mode: Mode
    by: str  # "keyword", "llm" or "fallback"
    keyword: str | None = None
    confidence: float | None = None


def keyword_of(message: str) -> str | None:
    return next((k for k in modes().mode2_keywords if k in message), None)


async def detect(
    llm: LLMClient, message: str, history: list[HistoryEntry], current: Mode | None, threshold: float, recent: int
) -> Detection:
    found = keyword_of(message)
    if found is not None:
        return Detection("mode2", "keyword", keyword=found)
    lines = (
        [f"{e.role}: {e.text[:300]}" for e in history[-recent:] if e.role in ("user", "assistant")] if recent else []
    )
    content = as_data(
        "conversation", "直近の会話:\n" + ("\n".join(lines) or "（なし）") + f"\n\n最新のユーザー発言: {message}"
    )
    try:
        guess = await generate(
            llm,
            system=prompt("classify"),
            messages=[Message(role="user", content=content)],
            output_type=ModeGuess,
            role="advisor.orchestrator",
            max_tokens=200,
        )
    except MagiError as exc:
        log.warning("mode classification failed (%s); keeping %s", first_line(exc), current or "mode1")
        return Detection(current or "mode1", "fallback")
    assert guess.parsed is not None
    confidence = guess.parsed.mode2_confidence
    return Detection("mode2" if confidence > threshold else "mode1", "llm", confidence=confidence)


__all__ = ["Detection", "ModeGuess", "detect", "keyword_of"]
