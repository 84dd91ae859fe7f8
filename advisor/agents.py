"""The two mode agents. Each is an async generator of events for the chat (text deltas, tool calls,
files) ending with an :class:`AgentResult` that the orchestrator writes to the session.

- Mode 1 (よろず相談): searches the web through a configured web provider, else the knowledge base
  (and says web search is not configured), answers with the LLM (streamed) and lists the sources it
  was given, numbered as the answer cites them.
- Mode 2 (価格転嫁専門): the platform's tool loop (``core.llm.run_tools``) over the six tools; each
  tool call is reported as it finishes, its result goes back to the model fenced as data, into the
  session's tool results (the latest of each tool is shown to the model on later turns) and its
  files to the session.

Both prompts carry the shared rules (output format, not legal advice with the referral list,
confidentiality, distress, data fences); an answer to an owner in distress ends with the public
consultation contacts whatever the model wrote.
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

from advisor.care import contacts_text, distress_note, in_distress
from advisor.context import summary_of, tool_context
from advisor.events import AdvisorEvent, AnswerDelta, FileMade, ToolFinished
from advisor.fencing import as_data
from advisor.labels import labels, tool_label
from advisor.policy import prompt, steps_text
from advisor.sources import web_configured
from advisor.tools import REGISTRY, loop_tools
from advisor.tools.base import ToolContext
from advisor.tools.knowledge import KnowledgeInput
from advisor.tools.knowledge import run as kb_search
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
KB_SOURCES = 3
WEB_NOT_CONFIGURED = (
    "※Web検索は設定されていないため、知識ベース（法令・指針・公的な調査）の情報をもとにお答えしています。"
)


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
            if e.agent == "summary":  # tool results reach the model through tool_context, whole
                context.append(e.text)
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
    return as_data("user-attributes", json.dumps(attributes, ensure_ascii=False)) if attributes else "（未登録）"


def shared_rules() -> str:
    """The rules both modes follow, with the referral and distress contacts from the knowledge base."""
    return f"{prompt('rules')}\n\n## 相談先（知識ベースより）\n{contacts_text('legal')}\n{contacts_text('distress')}"


def with_care(message: str, text: str) -> str:
    """The answer, ending with the consultation contacts when the owner wrote in distress."""
    if not in_distress(message):
        return text
    return f"{text}\n\n{distress_note()}"


async def _sources(settings: Settings, message: str, results: int) -> tuple[list[dict[str, str]], str]:
    """(sources, kind): web results from a configured provider, else knowledge-base passages."""
    ctx = ToolContext(settings)
    if web_configured(settings):
        try:
            found = await web_search(WebSearchInput(query=message[:300], max_results=results), ctx)
            return [{"title": r.title, "url": r.url, "snippet": r.snippet[:300]} for r in found.results], "web"
        except MagiError as exc:
            log.warning("Mode 1 web search failed: %s", first_line(exc))
    hits = await kb_search(KnowledgeInput(query=message[:500], top_k=KB_SOURCES), ctx)
    kb = [
        {"title": f"{r.metadata['document']}「{r.metadata['section']}」", "url": r.source, "snippet": r.content[:300]}
        for r in hits.results
    ]
    return kb, "kb"


async def mode1(
    llm: LLMClient, settings: Settings, history: list[HistoryEntry], message: str, user: dict[str, Any], results: int
) -> AsyncIterator[AdvisorEvent | AgentResult]:
    sources, kind = await _sources(settings, message, results)
    if sources:
        name = "web_search" if kind == "web" else "search_knowledge_base"
        yield ToolFinished(name=name, label=tool_label(name), ok=True, summary=f"{len(sources)}件")
    messages, context = conversation(history, message)
    listing = "\n".join(f"[{i}] {s['title']} ({s['url']})\n{s['snippet']}" for i, s in enumerate(sources, 1))
    where = "Web検索の結果" if kind == "web" else "知識ベースの情報（Web検索は設定されていません）"
    system = (
        f"{prompt('mode1')}\n\n{shared_rules()}\n\nユーザー属性: {_attributes_text(user)}\n\n"
        f"会話の記録:\n{as_data('summary', context) if context else '（なし）'}"
        f"\n\n参考情報（{where}）:\n{as_data(kind, listing) if listing else '（なし）'}"
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
    tail = ""
    if kind == "kb":
        tail += f"\n\n{WEB_NOT_CONFIGURED}"
        if not sources:  # nothing in the knowledge base holds enough of the question: no source is cited
            tail += f"\n{labels().notices['kb_nothing_mode1']}"
    if sources:
        heading = "出典" if kind == "web" else "出典（知識ベース）"
        tail += f"\n\n{heading}:\n" + "\n".join(f"[{i}] {s['title']} {s['url']}" for i, s in enumerate(sources, 1))
    tail = with_care(message, tail)
    if tail:
        yield AnswerDelta(text=tail)
    yield AgentResult(text=text + tail)


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
                self.events.put_nowait(
                    ToolFinished(name=name, label=tool_label(name), ok=False, summary=first_line(exc))
                )
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
            self.events.put_nowait(
                ToolFinished(name=name, label=tool_label(name), ok=True, summary=summary_of(name, dumped))
            )
            return as_data(f"tool:{name}", text)

        return call

    def _entry(self, name: str, argument: BaseModel, text: str, ok: bool) -> HistoryEntry:
        return HistoryEntry(
            role="system",
            text=text,
            agent=f"tool:{name}",
            timestamp=now(),
            metadata={"tool": name, "ok": ok, "input": argument.model_dump(mode="json")},
        )


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
    earlier = tool_context(ctx.earlier, ctx.section.tool_context_tokens)
    system = (
        f"{prompt('mode2')}\n{steps_text()}\n\n{shared_rules()}\n\nユーザー属性: {_attributes_text(user)}\n\n"
        f"会話の記録（要約）:\n{as_data('summary', context) if context else '（なし）'}\n\n"
        f"これまでのツール結果:\n{earlier or '（なし）'}"
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
    text = with_care(message, with_notices(text, recorder.result.tool_results))
    for piece in chunks(text, DELTA_CHARS):
        yield AnswerDelta(text=piece)
    recorder.result.text = text
    yield recorder.result


def with_notices(text: str, results: list[dict[str, Any]]) -> str:
    """The answer, then what the tools established that the owner must know (a letter made as a draft, a
    rate below their own minimum), whatever the model wrote: said once each, in the tools' words."""
    notices = list(dict.fromkeys(n for r in results for n in (r.get("output") or {}).get("notices") or []))
    if not notices:
        return text
    return f"{text}\n\n**{labels().notices['title']}**\n" + "\n".join(f"- {n}" for n in notices)


__all__ = ["AgentResult", "conversation", "mode1", "mode2", "now", "shared_rules", "with_care", "with_notices"]
