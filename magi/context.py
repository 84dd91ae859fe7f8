"""Each sage's conversation history, kept within a token budget.

The history is a list of user/assistant turns. Before a new prompt is sent, when system prompt +
history + prompt would pass :data:`NEAR` of the budget, the oldest turns (all but the most recent
exchange) are replaced by one summary turn: written by the LLM when it can, otherwise by a
deterministic truncation that keeps the start of each turn and says how much was cut. Nothing is
dropped silently: every compaction is returned to the caller and recorded in the deliberation.

Token counts are estimated (no tokenizer dependency): ASCII text at ~4 characters per token, other
characters (Japanese) at 1 token each — deliberately pessimistic for Japanese.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from core.llm.base import Message

NEAR = 0.8  # compact when the request would use more than this share of the budget
KEEP_RECENT = 2  # messages (one exchange) never summarised: the sage's latest position
FALLBACK_CHARS = 240  # what truncation keeps of each summarised turn

Summarizer = Callable[[str], Awaitable[str]]


def estimate_tokens(text: str) -> int:
    ascii_chars = sum(1 for c in text if ord(c) < 128)
    return (ascii_chars + 3) // 4 + (len(text) - ascii_chars)


def render_turns(messages: list[Message]) -> str:
    return "\n\n".join(f"[{m.role}] {m.text}" for m in messages)


def truncate_text(text: str, keep_chars: int = FALLBACK_CHARS) -> str:
    """The deterministic fallback for one text: its start, and how many characters were left out."""
    text = " ".join(text.split())
    if len(text) > keep_chars:
        text = f"{text[:keep_chars]} [... {len(text) - keep_chars} characters left out by the context manager]"
    return text


def truncate_turns(messages: list[Message], keep_chars: int = FALLBACK_CHARS) -> str:
    """The deterministic fallback: the start of each turn, with the number of characters left out."""
    return "\n".join(f"[{m.role}] {truncate_text(m.text, keep_chars)}" for m in messages)


@dataclass
class Compaction:
    turns: int
    method: Literal["llm", "truncation"]


class ContextManager:
    """History of one sage plus the budget rule; ``prepare`` compacts, ``record`` appends an exchange."""

    def __init__(self, budget_tokens: int) -> None:
        self.budget_tokens = budget_tokens
        self.messages: list[Message] = []

    def size(self, system: str, prompt: str) -> int:
        return estimate_tokens(system) + sum(estimate_tokens(m.text) for m in self.messages) + estimate_tokens(prompt)

    def near_budget(self, system: str, prompt: str) -> bool:
        return self.size(system, prompt) > NEAR * self.budget_tokens

    async def prepare(self, system: str, prompt: str, summarize: Summarizer | None) -> Compaction | None:
        """Compact the oldest turns when the next request would near the budget; None when not needed."""
        old = self.messages[:-KEEP_RECENT] if len(self.messages) > KEEP_RECENT else []
        if not old or not self.near_budget(system, prompt):
            return None
        method: Literal["llm", "truncation"] = "llm"
        summary = ""
        if summarize is not None:
            try:
                summary = (await summarize(render_turns(old))).strip()
            except Exception:  # the fallback below is the recorded answer to any summariser failure
                summary = ""
        if not summary or estimate_tokens(summary) >= sum(estimate_tokens(m.text) for m in old):
            method, summary = "truncation", truncate_turns(old)
        self.messages = [
            Message(role="user", content=f"Summary of your earlier turns in this deliberation ({method}):\n{summary}"),
            Message(role="assistant", content="Noted."),
            *self.messages[len(old) :],
        ]
        return Compaction(turns=len(old), method=method)

    def record(self, prompt: str, answer: str) -> None:
        self.messages.extend([Message(role="user", content=prompt), Message(role="assistant", content=answer)])

    def request_messages(self, prompt: str) -> list[Message]:
        return [*self.messages, Message(role="user", content=prompt)]


__all__ = [
    "FALLBACK_CHARS",
    "KEEP_RECENT",
    "NEAR",
    "Compaction",
    "ContextManager",
    "Summarizer",
    "estimate_tokens",
    "render_turns",
    "truncate_text",
    "truncate_turns",
]
