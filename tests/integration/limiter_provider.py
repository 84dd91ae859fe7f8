"""A ``python:`` LLM provider for the limiter cluster test: it reports each call to a counting actor.

Loaded by file path in every Ray worker (``python:/abs/path/limiter_provider.py:answer``). The
counter sees a call from before its work starts until after it ends, all inside the caller's
permit, so its peak is the real number of provider calls in flight on the cluster.
"""

from __future__ import annotations

import asyncio
import os

import ray

from core.errors import LLMError
from core.llm.base import LLMRequest

COUNTER = "limiter-test-counter"
NAMESPACE = "magi-test"
WORK_S = 0.15


async def answer(request: LLMRequest) -> str:
    counter = ray.get_actor(COUNTER, namespace=NAMESPACE)
    text = request.messages[-1].text
    await counter.enter.remote(text, os.getpid())
    try:
        if text == "rate-limit-me":
            raise LLMError("HTTP 429: slow down", status_code=429, retry_after_s=1.0, retryable=True)
        await asyncio.sleep(WORK_S)
        return f"done {text}"
    finally:
        await counter.leave.remote()
