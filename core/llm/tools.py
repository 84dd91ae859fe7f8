"""The tool loop: let the model call tools until it answers, feeding each result (or error) back.

Failures of a tool are the model's business, not a crash: an unknown tool name, arguments that do
not validate against the tool's pydantic model, or an exception in the handler each become a
``ToolResultPart(is_error=True)`` that the model sees on its next turn and can react to.

Turn limit: the loop makes at most ``max_turns`` model calls. If the model still asks for tools
on the last one, :func:`run_tools` raises :class:`ToolLoopLimitError`, which carries the partial
:class:`ToolRunResult` (history and steps so far). A typed error, not a flag, because a caller that
forgets to check a flag would treat an unfinished conversation as the answer.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from core.errors import LLMError
from core.llm.base import (
    LLMClient,
    LLMRequest,
    LLMResponse,
    Message,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    Usage,
)

Handler = Callable[[Any], Any] | Callable[[Any], Awaitable[Any]]


@dataclass(frozen=True)
class Tool:
    """A tool with typed arguments: ``args`` validates what the model sends and gives the schema."""

    name: str
    description: str
    args: type[BaseModel] | None = None
    input_schema: dict[str, Any] | None = None

    @property
    def spec(self) -> ToolSpec:
        schema = self.args.model_json_schema() if self.args else (self.input_schema or {"type": "object"})
        return ToolSpec(name=self.name, description=self.description, input_schema=schema)


@dataclass(frozen=True)
class ToolStep:
    """One tool call of the loop: what was asked, what came back (or the error), how long it took."""

    turn: int
    call: ToolCallPart
    result: str | None
    error: str | None
    duration_s: float

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass
class ToolRunResult:
    """The final answer, the whole conversation (input messages included) and every tool step."""

    response: LLMResponse
    messages: list[Message]
    steps: list[ToolStep] = field(default_factory=list)
    turns: int = 0
    usage: Usage = field(default_factory=Usage)

    @property
    def text(self) -> str:
        return self.response.text


class ToolLoopLimitError(LLMError):
    """The model still asked for tools after ``max_turns`` calls; ``result`` holds the partial run."""

    def __init__(self, message: str, result: ToolRunResult | None = None, **fields: Any) -> None:
        super().__init__(message, **fields)
        self.result = result


def _content(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    return json.dumps(value, ensure_ascii=False, default=str)


async def _call_handler(handler: Handler, argument: Any) -> Any:
    if inspect.iscoroutinefunction(handler):
        return await handler(argument)
    result = await asyncio.to_thread(handler, argument)
    return await result if inspect.isawaitable(result) else result


async def _run_one(
    turn: int, call: ToolCallPart, models: Mapping[str, type[BaseModel] | None], handlers: Mapping[str, Handler]
) -> ToolStep:
    started = time.perf_counter()

    def step(result: str | None, error: str | None) -> ToolStep:
        return ToolStep(turn, call, result, error, time.perf_counter() - started)

    handler = handlers.get(call.name)
    if handler is None:
        known = ", ".join(sorted(handlers)) or "(none)"
        return step(None, f"unknown tool {call.name!r}; available tools: {known}")
    model = models.get(call.name)
    argument: Any = call.arguments
    if model is not None:
        try:
            argument = model.model_validate(call.arguments)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in exc.errors())
            return step(None, f"arguments of {call.name} do not match its schema: {problems}; call it again corrected")
    try:
        value = await _call_handler(handler, argument)
    except Exception as exc:
        return step(None, f"{call.name} failed: {type(exc).__name__}: {exc}")
    return step(_content(value), None)


async def run_tools(
    client: LLMClient,
    system: str,
    messages: Sequence[Message],
    tools: Sequence[Tool | ToolSpec],
    handlers: Mapping[str, Handler],
    max_turns: int = 8,
    *,
    role: str | None = None,
    model: str | None = None,
    temperature: float = 0.0,
    max_tokens: int = 1024,
    timeout_s: float | None = None,
) -> ToolRunResult:
    """Call the model, run the tools it asks for, repeat until it answers without tool calls.

    Handlers take the validated arguments (an instance of the tool's ``args`` model, else the raw
    dict) and may be sync (run in a thread) or async; calls of one turn run concurrently, results
    go back in the order asked. Raises :class:`ToolLoopLimitError` after ``max_turns`` model calls.
    """
    if max_turns < 1:
        raise ValueError(f"run_tools needs max_turns >= 1, got {max_turns}")
    specs = [t.spec if isinstance(t, Tool) else t for t in tools]
    models = {t.name: t.args for t in tools if isinstance(t, Tool)}
    history = list(messages)
    result = ToolRunResult(response=LLMResponse(), messages=history)
    for turn in range(1, max_turns + 1):
        request = LLMRequest(
            system=system,
            messages=list(history),
            tools=specs,
            temperature=temperature,
            max_tokens=max_tokens,
            timeout_s=timeout_s,
            model=model,
            role=role,
        )
        response = await client.complete(request)
        result.response, result.turns, result.usage = response, turn, result.usage + response.usage
        history.append(response.as_message())
        if not response.tool_calls:
            return result
        if turn == max_turns:
            asked = ", ".join(c.name for c in response.tool_calls)
            raise ToolLoopLimitError(
                f"the model still called tools ({asked}) after max_turns={max_turns} model calls "
                f"(model {response.model or 'unknown'}); raise max_turns or make the tools' answers more conclusive",
                result,
                model=response.model or None,
            )
        steps = await asyncio.gather(*(_run_one(turn, c, models, handlers) for c in response.tool_calls))
        result.steps.extend(steps)
        history.append(
            Message(
                role="user",
                content=[
                    ToolResultPart(
                        tool_call_id=s.call.id,
                        content=s.error if s.error is not None else s.result or "",
                        is_error=s.error is not None,
                    )
                    for s in steps
                ],
            )
        )
    raise AssertionError("unreachable")  # pragma: no cover


__all__ = [
    "Handler",
    "Tool",
    "ToolLoopLimitError",
    "ToolRunResult",
    "ToolStep",
    "run_tools",
]
