"""One MAGI sage as an agent (a Ray actor on a cluster): its persona, its own LLM client and history.

Thin on purpose: the protocol (magi/protocol.py) decides what to ask and when; the sage only keeps
its conversation (through the context manager, which summarises old turns near the budget), calls
its model (role ``magi.<sage>``, so each sage may run its own model) with the schema of the phase,
and returns the validated output or the reason there is none. Usage is counted per call.
"""

from __future__ import annotations

import json
import time
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
from magi.settings import CouncilSettings

OUTPUT_TYPES: dict[str, type[BaseModel]] = {
    "thinking": ThinkingOutput,
    "debate": DebateTurn,
    "voting": Vote,
    "summary": Summary,
}


class Sage:
    """A sage: ``ask`` one phase's prompt, get a :class:`SageReply` (never raises for bad output)."""

    def __init__(
        self, name: SageName, council: CouncilSettings, llm: LLMSettings, system: str, client: LLMClient | None = None
    ) -> None:
        self.name = SageName(name)
        self.system = system
        self.meter = UsageMeter()
        if client is not None:  # tests and in-process callers bring their own (scripted) client
            self.client: LLMClient = MeteredClient(client, self.meter)
        else:
            built = make_llm(llm, role=self.name.role, meter=self.meter)
            if built is None:
                raise RuntimeError(f"sage {self.name.display}: no LLM configured (the caller checks this first)")
            self.client = built
        self.context = ContextManager(council.context_budget_tokens)
        self.extra_types: dict[str, type[BaseModel]] = {}

    def register_output(self, phase: str, output_type: type[BaseModel]) -> None:
        """Let a plugin workflow ask with its own schema (e.g. the sdd review findings)."""
        self.extra_types[phase] = output_type

    async def _summarize(self, turns: str) -> str:
        prompt = bundled_prompts().summary.format(turns=fence(turns, "TURNS"))
        result = await generate(
            self.client,
            system=self.system,
            messages=[Message(role="user", content=prompt)],
            output_type=Summary,
            role=self.name.role,
        )
        return result.parsed.summary if result.parsed is not None else ""

    async def ask(self, phase: Phase, prompt: str, output: str | None = None) -> SageReply:
        """Send ``prompt`` with the history; validate against the phase's schema (one repair)."""
        output_type = self.extra_types.get(output or phase) or OUTPUT_TYPES[output or phase]
        started = time.monotonic()
        before = self.meter.summary()
        compaction = await self.context.prepare(self.system, prompt, self._summarize)
        reply: dict[str, Any] = {"sage": self.name, "phase": phase}
        try:
            result = await generate(
                self.client,
                system=self.system,
                messages=self.context.request_messages(prompt),
                output_type=output_type,
                role=self.name.role,
            )
        except LLMOutputError as exc:
            reply.update(error=str(exc), error_kind="invalid_output")
        else:
            assert result.parsed is not None
            data = result.parsed.model_dump(mode="json")
            self.context.record(prompt, json.dumps(data, ensure_ascii=False))
            reply.update(output=data, model=result.response.model, provider=result.response.provider)
        after = self.meter.summary()
        cost: float | None = None
        if after.cost_usd != "unknown":
            cost = round(after.priced_cost_usd - before.priced_cost_usd, 8)
        return SageReply(
            **reply,
            calls=after.calls - before.calls,
            input_tokens=after.input_tokens - before.input_tokens,
            output_tokens=after.output_tokens - before.output_tokens,
            cost_usd=cost,
            duration_ms=int((time.monotonic() - started) * 1000),
            summarised_turns=compaction.turns if compaction else 0,
            summary_method=compaction.method if compaction else None,
        )

    async def condense(self, text: str) -> SageReply:
        """A summary of this sage's own (long) position for its peers: by the LLM, else truncated
        deterministically (``output.method`` says which); the history is not touched."""
        started = time.monotonic()
        before = self.meter.summary()
        method = "llm"
        try:
            summary = (await self._summarize(text)).strip()
        except Exception as exc:  # the truncation below is the recorded answer to a failed summary
            summary = ""
            error = f"{type(exc).__name__}: {exc}"
        else:
            error = ""
        if not summary:
            method, summary = "truncation", truncate_text(text)
        after = self.meter.summary()
        return SageReply(
            sage=self.name,
            phase="summary",
            output={"summary": summary, "method": method},
            error=error or None,
            calls=after.calls - before.calls,
            input_tokens=after.input_tokens - before.input_tokens,
            output_tokens=after.output_tokens - before.output_tokens,
            cost_usd=None if after.cost_usd == "unknown" else round(after.priced_cost_usd - before.priced_cost_usd, 8),
            duration_ms=int((time.monotonic() - started) * 1000),
        )

    def history(self) -> list[dict[str, str]]:
        """The sage's current history (after any summaries), as plain role/content pairs."""
        return [{"role": m.role, "content": m.text} for m in self.context.messages]


__all__ = ["OUTPUT_TYPES", "Sage"]
