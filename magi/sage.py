"""One MAGI sage as a resident agent (a long-lived Ray actor on a cluster), holding one conversation
per deliberation.

The three sages are created once per cluster and serve every deliberation (magi/seats.py picks them);
a deliberation opens a conversation on each (its persona, LLM settings, budget), asks through it and
closes it at the end. A conversation nobody has used for its expiry (its caller died) is dropped when
the next one opens, so histories never pile up.

Thin on purpose: the protocol (magi/protocol.py) decides what to ask and when; the sage keeps each
conversation's history (through the context manager, which summarises old turns near the budget),
calls its model (role ``magi.<sage>``, so each sage may run its own model) with the schema of the
phase, and returns the validated output or the reason there is none. Usage is counted per call.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from core.errors import LLMOutputError
from core.llm import LLMClient, Message, UsageMeter, generate, make_llm
from core.llm.factory import MeteredClient
from core.llm.fencing import fence
from core.settings import LLMSettings
from magi.context import ContextManager, truncate_text
from magi.models import DebateTurn, Phase, SageName, SageReply, Summary, ThinkingOutput, Vote
from magi.prompts import bundled_prompts

OUTPUT_TYPES: dict[str, type[BaseModel]] = {
    "thinking": ThinkingOutput,
    "debate": DebateTurn,
    "voting": Vote,
    "summary": Summary,
}
CLIENTS_KEPT = 4  # LLM configurations a sage keeps a client for (one in a deployment; tests use more)


class UnknownDeliberation(LookupError):
    """The sage holds no conversation for this deliberation (never opened, closed, expired, or the
    sage was restarted): the caller opens it again."""


@dataclass
class Conversation:
    """One deliberation's history with this sage, and what it was opened with."""

    system: str
    client: LLMClient
    context: ContextManager
    outputs: dict[str, type[BaseModel]]
    expires_after_s: float
    used: float = field(default_factory=time.monotonic)

    def expired(self, now: float) -> bool:
        return now - self.used > self.expires_after_s


class Sage:
    """A resident sage: ``open`` a deliberation's conversation, ``ask`` it one phase's prompt (a
    :class:`SageReply`, never raising for bad output), ``close`` it. Many deliberations at once."""

    def __init__(self, name: SageName) -> None:
        self.name = SageName(name)
        self._conversations: dict[str, Conversation] = {}
        self._clients: list[tuple[LLMSettings, LLMClient]] = []  # most recently used last

    def _client(self, llm: LLMSettings) -> LLMClient:
        """The client of ``llm`` for this sage's role, built once per configuration."""
        for index, (known, client) in enumerate(self._clients):
            if known == llm:
                self._clients.append(self._clients.pop(index))
                return client
        built = make_llm(llm, role=self.name.role)
        if built is None:
            raise RuntimeError(f"sage {self.name.display}: no LLM configured (the caller checks this first)")
        self._clients = [*self._clients[-(CLIENTS_KEPT - 1) :], (llm, built)]
        return built

    async def open(
        self,
        deliberation: str,
        *,
        system: str,
        llm: LLMSettings,
        budget_tokens: int,
        expires_after_s: float,
        client: LLMClient | None = None,
        outputs: Mapping[str, type[BaseModel]] | None = None,
    ) -> bool:
        """Start the conversation of ``deliberation`` (True), or keep the one already open (False).
        ``client`` (tests, in-process callers) replaces the configured LLM; ``outputs`` are extra
        phases with their schema (a plugin's workflow, e.g. the sdd review)."""
        now = time.monotonic()
        for stale in [d for d, c in self._conversations.items() if c.expired(now)]:
            del self._conversations[stale]  # its caller is gone: nobody will close it
        found = self._conversations.get(deliberation)
        if found is not None:
            found.used = now
            return False
        self._conversations[deliberation] = Conversation(
            system=system,
            client=client if client is not None else self._client(llm),
            context=ContextManager(budget_tokens),
            outputs=dict(outputs or {}),
            expires_after_s=expires_after_s,
        )
        return True

    async def close(self, deliberation: str) -> list[dict[str, str]]:
        """Drop the conversation; its last history is the answer (the deliberation's transcript)."""
        found = self._conversations.pop(deliberation, None)
        return [] if found is None else _plain(found.context.messages)

    async def conversations(self) -> int:
        """How many conversations this sage holds now (tests and benchmarks: none may leak)."""
        return len(self._conversations)

    def _conversation(self, deliberation: str) -> Conversation:
        found = self._conversations.get(deliberation)
        if found is None:
            raise UnknownDeliberation(f"sage {self.name.display} holds no conversation {deliberation}; open it first")
        found.used = time.monotonic()
        return found

    async def _summarize(self, conversation: Conversation, client: LLMClient, turns: str) -> str:
        prompt = bundled_prompts().summary.format(turns=fence(turns, "TURNS"))
        result = await generate(
            client,
            system=conversation.system,
            messages=[Message(role="user", content=prompt)],
            output_type=Summary,
            role=self.name.role,
        )
        return result.parsed.summary if result.parsed is not None else ""

    async def ask(self, deliberation: str, phase: Phase, prompt: str, output: str | None = None) -> SageReply:
        """Send ``prompt`` with the history; validate against the phase's schema (one repair)."""
        conversation = self._conversation(deliberation)
        output_type = conversation.outputs.get(output or phase) or OUTPUT_TYPES[output or phase]
        started = time.monotonic()
        meter = UsageMeter()  # per call: the deliberations this sage serves at once do not mix
        client = MeteredClient(conversation.client, meter)
        context = conversation.context

        async def summarize(turns: str) -> str:
            return await self._summarize(conversation, client, turns)

        compaction = await context.prepare(conversation.system, prompt, summarize)
        reply: dict[str, Any] = {"sage": self.name, "phase": phase}
        try:
            result = await generate(
                client,
                system=conversation.system,
                messages=context.request_messages(prompt),
                output_type=output_type,
                role=self.name.role,
            )
        except LLMOutputError as exc:
            reply.update(error=str(exc), error_kind="invalid_output")
        else:
            assert result.parsed is not None
            data = result.parsed.model_dump(mode="json")
            context.record(prompt, json.dumps(data, ensure_ascii=False))
            reply.update(output=data, model=result.response.model, provider=result.response.provider)
        return SageReply(
            **reply,
            **_usage(meter),
            duration_ms=int((time.monotonic() - started) * 1000),
            summarised_turns=compaction.turns if compaction else 0,
            summary_method=compaction.method if compaction else None,
        )

    async def condense(self, deliberation: str, text: str) -> SageReply:
        """A summary of this sage's own (long) position for its peers: by the LLM, else truncated
        deterministically (``output.method`` says which); the history is not touched."""
        conversation = self._conversation(deliberation)
        started = time.monotonic()
        meter = UsageMeter()
        method = "llm"
        try:
            summary = (await self._summarize(conversation, MeteredClient(conversation.client, meter), text)).strip()
        except Exception as exc:  # the truncation below is the recorded answer to a failed summary
            summary = ""
            error = f"{type(exc).__name__}: {exc}"
        else:
            error = ""
        if not summary:
            method, summary = "truncation", truncate_text(text)
        return SageReply(
            sage=self.name,
            phase="summary",
            output={"summary": summary, "method": method},
            error=error or None,
            **_usage(meter),
            duration_ms=int((time.monotonic() - started) * 1000),
        )

    async def history(self, deliberation: str) -> list[dict[str, str]]:
        """The conversation's current history (after any summaries), as plain role/content pairs."""
        return _plain(self._conversation(deliberation).context.messages)


def _plain(messages: list[Message]) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.text} for m in messages]


def _usage(meter: UsageMeter) -> dict[str, Any]:
    """One call's counts for a :class:`SageReply` (cost None when a model has no known price)."""
    summary = meter.summary()
    return {
        "calls": summary.calls,
        "input_tokens": summary.input_tokens,
        "output_tokens": summary.output_tokens,
        "cost_usd": None if summary.cost_usd == "unknown" else round(summary.priced_cost_usd, 8),
    }


__all__ = ["CLIENTS_KEPT", "OUTPUT_TYPES", "Conversation", "Sage", "UnknownDeliberation"]
