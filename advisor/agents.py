"""The two mode agents. Each is an async generator of events for the chat (text deltas, tool calls,
files) ending with an :class:`AgentResult` that the orchestrator writes to the session.

- Mode 1 (よろず相談): searches the web through the project's search providers, answers with the
  LLM (streamed) and lists the sources it was given, numbered as the answer cites them.
- Mode 2 (価格転嫁専門): the platform's tool loop (``core.llm.run_tools``) over the six tools; each
  tool call is reported as it finishes, its result goes into the history, its files to the session.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel

from advisor.events import AdvisorEvent, AnswerDelta, FileMade, ToolFinished
from advisor.policy import prompt, steps_text
from advisor.tools import REGISTRY, loop_tools
from advisor.tools.base import ToolContext
from advisor.tools.web import WebSearchInput
from advisor.tools.web import run as web_search
from core.errors import MagiError, first_line
from core.llm.base import LLMClient, LLMRequest, Message
from core.llm.streaming import StreamEnd, TextDelta, chunks, stream
from core.llm.tools import ToolLoopLimitError, run_tools
from core.settings import Settings
from core.telemetry.tracing import span
from sessions.models import HistoryEntry

log = logging.getLogger(__name__)
TOOL_TEXT_CHARS = 3000
DELTA_CHARS = 24


@dataclass
class AgentResult:
    text: str
    entries: list[HistoryEntry] = field(default_factory=list)  # tool entries, in order
    files: list[dict[str, Any]] = field(default_factory=list)
    tool_results: list[dict[str, Any]] = field(default_factory=list)
    negotiation: list[dict[str, Any]] = field(default_factory=list)


def now() -> datetime:
    return datetime.now(UTC)


def conversation(history: list[HistoryEntry], message: str) -> tuple[list[Message], str]:
    """(messages for the model, context for its system prompt): user/assistant texts alternate as
    the model expects; summaries and tool results go to the context."""
    messages: list[Message] = []
    context: list[str] = []
    for e in history:
        if e.role == "system":
            context.append(e.text if e.agent == "summary" else f"[{e.agent}] {e.text[:600]}")
            continue
        if messages and messages[-1].role == e.role:
            messages[-1] = Message(role=e.role, content=f"{messages[-1].text}\n\n{e.text}")
        else:
            messages.append(Message(role=e.role, content=e.text))
    while messages and messages[0].role != "user":
        messages.pop(0)
    if messages and messages[-1].role == "user":
        messages[-1] = Message(role="user", content=f"{messages[-1].text}\n\n{message}")
    else:
        messages.append(Message(role="user", content=message))
    return messages, "\n".join(context)


def _attributes_text(attributes: dict[str, Any]) -> str:
    return json.dumps(attributes, ensure_ascii=False) if attributes else "（未登録）"


async def mode1(
    llm: LLMClient, settings: Settings, history: list[HistoryEntry], message: str, user: dict[str, Any], results: int
) -> AsyncIterator[AdvisorEvent | AgentResult]:
    sources: list[dict[str, str]] = []
    try:
        found = await web_search(WebSearchInput(query=message[:300], max_results=results), ToolContext(settings))
        sources = [{"title": r.title, "url": r.url, "snippet": r.snippet[:300]} for r in found.results]
    except MagiError as exc:
        log.warning("Mode 1 web search failed: %s", first_line(exc))
    if sources:
        yield ToolFinished(name="web_search", ok=True, summary=f"{len(sources)}件の検索結果")
    messages, context = conversation(history, message)
    listing = "\n".join(f"[{i}] {s['title']} ({s['url']})\n{s['snippet']}" for i, s in enumerate(sources, 1))
    system = (
        f"{prompt('mode1')}\n\nユーザー属性: {_attributes_text(user)}\n\n会話の記録:\n{context or '（なし）'}"
        f"\n\nWeb検索の結果:\n{listing or '（結果なし）'}"
    )
    request = LLMRequest(system=system, messages=messages, role="advisor.mode1", max_tokens=1500)
    pieces: list[str] = []
    async for event in stream(llm, request):
        if isinstance(event, TextDelta):
            pieces.append(event.text)
            yield AnswerDelta(text=event.text)
        elif isinstance(event, StreamEnd) and not pieces and event.response.text:
            pieces.append(event.response.text)
            yield AnswerDelta(text=event.response.text)
    text = "".join(pieces)
    if sources:
        cited = "\n\n出典:\n" + "\n".join(f"[{i}] {s['title']} {s['url']}" for i, s in enumerate(sources, 1))
        yield AnswerDelta(text=cited)
        text += cited
    yield AgentResult(text=text)


class _Recorder:
    """Handlers for the tool loop that run the advisor's tools and report each call as it ends."""

    def __init__(self, ctx: ToolContext, events: asyncio.Queue[AdvisorEvent]) -> None:
        self.ctx = ctx
        self.events = events
        self.result = AgentResult(text="")

    def handler(self, name: str) -> Any:
        tool = REGISTRY[name]

        async def call(argument: BaseModel) -> str:
            try:
                with span("tool.call", tool=name):
                    output = await tool.run(argument, self.ctx)
            except Exception as exc:
                self.events.put_nowait(ToolFinished(name=name, ok=False, summary=first_line(exc)))
                self.result.entries.append(self._entry(name, argument, f"error: {first_line(exc)}", ok=False))
                raise
            dumped = output.model_dump(mode="json", by_alias=True)
            files = dumped.get("files") or []
            for f in files:
                self.result.files.append(f)
                self.events.put_nowait(FileMade(file=f))
            record = {
                "tool": name,
                "input": argument.model_dump(mode="json"),
                "output": dumped,
                "at": now().isoformat(),
            }
            self.ctx.earlier.append(record)
            self.result.tool_results.append(record)
            if name == "simulate_negotiation":
                user_response = getattr(argument, "user_response", "")
                rnd = {
                    "round": dumped["round"],
                    "user_response": user_response,
                    "opponent_response": dumped["opponent_response"],
                    "score": dumped["feedback"]["score"],
                }
                self.ctx.negotiation_rounds.append(rnd)
                self.result.negotiation.append(rnd)
            text = json.dumps(dumped, ensure_ascii=False)
            self.result.entries.append(self._entry(name, argument, text[:TOOL_TEXT_CHARS], ok=True))
            self.events.put_nowait(ToolFinished(name=name, ok=True, summary=_summary(name, dumped)))
            return text

        return call

    def _entry(self, name: str, argument: BaseModel, text: str, ok: bool) -> HistoryEntry:
        return HistoryEntry(
            role="system",
            text=text,
            agent=f"tool:{name}",
            timestamp=now(),
            metadata={"tool": name, "ok": ok, "input": argument.model_dump(mode="json")},
        )


def _summary(name: str, out: dict[str, Any]) -> str:
    if name == "calculate_cost_impact":
        return (
            f"総コスト {out['current_total_cost']}→{out['new_total_cost']}円（{float(out['cost_increase_rate']):+.2%}）"
        )
    if name in ("web_search", "search_knowledge_base"):
        return f"{len(out.get('results', []))}件"
    if name == "generate_chart":
        return str(out.get("summary", ""))
    if name == "generate_document":
        return f"{out.get('document_format')} を作成"
    if name == "simulate_negotiation":
        return f"第{out['round']}ラウンド {out['feedback']['score']}点"
    return "完了"


async def mode2(
    llm: LLMClient,
    ctx: ToolContext,
    history: list[HistoryEntry],
    message: str,
    user: dict[str, Any],
    max_turns: int,
) -> AsyncIterator[AdvisorEvent | AgentResult]:
    events: asyncio.Queue[AdvisorEvent] = asyncio.Queue()
    recorder = _Recorder(ctx, events)
    messages, context = conversation(history, message)
    system = (
        f"{prompt('mode2')}\n{steps_text()}\n\nユーザー属性: {_attributes_text(user)}\n\n"
        f"会話の記録（要約・これまでのツール結果）:\n{context or '（なし）'}"
    )
    handlers = {name: recorder.handler(name) for name in REGISTRY}
    loop = asyncio.create_task(
        run_tools(llm, system, messages, loop_tools(), handlers, max_turns, role="advisor.mode2", max_tokens=2000)
    )
    while not loop.done() or not events.empty():
        getter = asyncio.ensure_future(events.get())
        done, _ = await asyncio.wait({getter, loop}, return_when=asyncio.FIRST_COMPLETED)
        if getter in done:
            yield getter.result()
        else:
            getter.cancel()
    try:
        text = loop.result().text
    except ToolLoopLimitError as exc:
        partial = exc.result.text if exc.result is not None else ""
        text = (
            partial + "\n\n" if partial else ""
        ) + "（ツールの呼び出し回数の上限に達したため、ここまでの結果をお伝えします）"
    for piece in chunks(text, DELTA_CHARS):
        yield AnswerDelta(text=piece)
    recorder.result.text = text
    yield recorder.result


__all__ = ["AgentResult", "conversation", "mode1", "mode2", "now"]
