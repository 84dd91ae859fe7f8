"""Streaming: text deltas as they arrive, then the whole response.

``stream(client, request)`` works with every client: one that has a ``stream`` method streams,
any other answers through ``complete`` and yields its text as one delta. The last event is
always a :class:`StreamEnd` carrying the same ``LLMResponse`` that ``complete`` would return.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from core.llm.base import LLMClient, LLMRequest, LLMResponse


@dataclass(frozen=True)
class TextDelta:
    """A piece of the answer text, in order."""

    text: str


@dataclass(frozen=True)
class StreamEnd:
    """The end of the stream: the complete response (text, tool calls, usage, model, stop reason)."""

    response: LLMResponse


StreamEvent = TextDelta | StreamEnd


@runtime_checkable
class StreamingClient(Protocol):
    """A client that can stream natively."""

    def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]: ...


async def _from_complete(client: LLMClient, request: LLMRequest) -> AsyncIterator[StreamEvent]:
    response = await client.complete(request)
    if response.text:
        yield TextDelta(response.text)
    yield StreamEnd(response)


def stream(client: LLMClient, request: LLMRequest) -> AsyncIterator[StreamEvent]:
    """Events of one call: ``TextDelta``s, then exactly one ``StreamEnd``."""
    if isinstance(client, StreamingClient):
        return client.stream(request)
    return _from_complete(client, request)


async def collect(events: AsyncIterator[StreamEvent]) -> tuple[list[str], LLMResponse]:
    """(deltas, final response) of a stream; a stream without ``StreamEnd`` is a bug of its client."""
    deltas: list[str] = []
    async for event in events:
        if isinstance(event, TextDelta):
            deltas.append(event.text)
        else:
            return deltas, event.response
    raise RuntimeError("the LLM stream ended without a StreamEnd event; the client's stream() is broken")


def chunks(text: str, size: int) -> list[str]:
    """``text`` cut into pieces of ``size`` characters (for clients that fake streaming)."""
    return [text[i : i + size] for i in range(0, len(text), max(1, size))]


__all__ = [
    "StreamEnd",
    "StreamEvent",
    "StreamingClient",
    "TextDelta",
    "chunks",
    "collect",
    "stream",
]
