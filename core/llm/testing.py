"""Test doubles shipped with the package, so every system tests its LLM use the same way.

* :class:`ScriptedClient`: answers from a queue (text, tool calls, structured output, errors),
  records every request, and streams scripted text in chunks.
* :class:`FunctionClient`: answers by calling a function of the request (sync or async).
* :func:`echo`: a ``python:core.llm.testing:echo`` provider importable in any Ray worker.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from core.errors import LLMError
from core.llm.base import LLMRequest, LLMResponse, ToolCallPart, Usage
from core.llm.python_provider import to_response
from core.llm.streaming import StreamEnd, StreamEvent, TextDelta, chunks

Script = str | LLMResponse | dict[str, Any] | ToolCallPart | list[ToolCallPart] | BaseException
_ids = itertools.count(1)


def tool_call(name: str, arguments: dict[str, Any] | None = None, *, id: str | None = None) -> ToolCallPart:
    """A scripted tool call (ids are made up when not given)."""
    return ToolCallPart(id=id or f"call_{next(_ids)}", name=name, arguments=arguments or {})


def scripted_response(item: Script, model: str) -> LLMResponse:
    """The response a script item stands for (exceptions are raised by the caller, not here)."""
    usage = Usage(input_tokens=1, output_tokens=1)
    if isinstance(item, LLMResponse):
        return item if item.model else item.model_copy(update={"model": model})
    if isinstance(item, str):
        return LLMResponse(text=item, model=model, usage=usage, stop_reason="end_turn")
    if isinstance(item, dict):
        return LLMResponse(output=item, model=model, usage=usage, stop_reason="end_turn")
    if isinstance(item, BaseException):
        raise item
    calls = [item] if isinstance(item, ToolCallPart) else list(item)
    return LLMResponse(tool_calls=calls, model=model, usage=usage, stop_reason="tool_use")


class ScriptedClient:
    """An ``LLMClient`` that plays a script: each call takes the next item.

    Items: ``str`` (answer text), ``dict`` (structured output), ``ToolCallPart`` or a list of them
    (tool calls), ``LLMResponse`` (anything else), an exception (raised). ``requests`` keeps every
    request in order. Running out of script is an ``LLMError`` saying how many items were used.
    """

    def __init__(self, *script: Script, model: str = "scripted", chunk_size: int = 4) -> None:
        self.script: list[Script] = list(script)
        self.model = model
        self.chunk_size = chunk_size
        self.requests: list[LLMRequest] = []

    def add(self, *items: Script) -> ScriptedClient:
        self.script.extend(items)
        return self

    @property
    def remaining(self) -> int:
        return len(self.script)

    def _next(self, request: LLMRequest) -> LLMResponse:
        self.requests.append(request)
        if not self.script:
            raise LLMError(
                f"ScriptedClient ran out of script after {len(self.requests) - 1} call(s); "
                "add more items (ScriptedClient(...).add(...)) or check why the code calls the LLM again"
            )
        item = self.script.pop(0)
        if isinstance(item, BaseException):
            raise item
        return scripted_response(item, self.model)

    async def complete(self, request: LLMRequest) -> LLMResponse:
        return self._next(request)

    async def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        response = self._next(request)
        for piece in chunks(response.text, self.chunk_size):
            await asyncio.sleep(0)  # a real stream yields to the loop between deltas
            yield TextDelta(piece)
        yield StreamEnd(response)


Responder = Callable[[LLMRequest], Any]


class FunctionClient:
    """An ``LLMClient`` whose answers come from ``fn(request)``: ``LLMResponse``, dict or str; sync or async."""

    def __init__(self, fn: Responder | Callable[[LLMRequest], Awaitable[Any]], *, model: str = "function") -> None:
        self.fn = fn
        self.model = model
        self.requests: list[LLMRequest] = []

    async def complete(self, request: LLMRequest) -> LLMResponse:
        self.requests.append(request)
        result = self.fn(request)
        if inspect.isawaitable(result):
            result = await result
        return to_response(result, self.model)


def echo(request: LLMRequest) -> str:
    """A provider for ``python:core.llm.testing:echo``: the last user message's text."""
    return next((m.text for m in reversed(request.messages) if m.role == "user"), "")


__all__ = [
    "FunctionClient",
    "Responder",
    "Script",
    "ScriptedClient",
    "echo",
    "scripted_response",
    "tool_call",
]
