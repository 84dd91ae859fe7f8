"""A ``python:`` LLM provider whose calls wait at a gate the test opens, for the fairness tests.

Loaded by file path in every Ray process that calls it (``python:/abs/path/gate_provider.py:answer``).
Each call reports itself to the :class:`Gate` actor (the last message's text), waits until the gate
is open, then answers as the shipped scripted models do (the council's sages need their structured
output); a call cancelled while it waits reports that too, so a test can wait for the cancellation of
the model calls of a request whose client left.
"""

from __future__ import annotations

import asyncio
from typing import Any

import ray

from core.llm.base import LLMRequest

GATE = "fairness-test-gate"
NAMESPACE = "magi-test"


class Gate:
    """Counts calls that entered, were cancelled or went through; ``wait`` returns once opened."""

    def __init__(self) -> None:
        self.opened = asyncio.Event()
        self.entered: list[str] = []
        self.cancelled: list[str] = []

    async def enter(self, text: str) -> None:
        self.entered.append(text)

    async def wait(self) -> None:
        await self.opened.wait()

    async def cancel(self, text: str) -> None:
        self.cancelled.append(text)

    async def open(self) -> None:
        self.opened.set()

    async def counts(self, needle: str) -> tuple[int, int]:
        """(calls entered, calls cancelled) whose text holds ``needle``."""
        return sum(needle in t for t in self.entered), sum(needle in t for t in self.cancelled)


def start_gate() -> Any:
    """The gate actor (closed), named so every provider call finds it."""
    return ray.remote(Gate).options(name=GATE, namespace=NAMESPACE, num_cpus=0).remote()


async def answer(request: LLMRequest) -> Any:
    from magi.scripted import respond

    gate = ray.get_actor(GATE, namespace=NAMESPACE)
    text = "\n".join(m.text for m in request.messages)
    await gate.enter.remote(text)
    try:
        await gate.wait.remote()
    except asyncio.CancelledError:
        await asyncio.shield(asyncio.ensure_future(gate.cancel.remote(text)))
        raise
    return await respond(request)
