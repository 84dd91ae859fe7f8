"""Test model of the router (a scripted LLM shipped with the package, never a real one).

Configure it as ``MAGI_LLM_PROVIDER=python:router.scripted:answer``: a deterministic
GeneralKnowledgeAgent stand-in for tests and demos. It says it is scripted and
states nothing about Engineer Cafe. ``MAGI_ROUTER_SCRIPTED_LATENCY_S`` adds a fixed delay (benchmarks).
"""

from __future__ import annotations

import os
import time

from core.llm.base import LLMRequest
from core.llm.fencing import fenced

LATENCY_ENV = "MAGI_ROUTER_SCRIPTED_LATENCY_S"
ROLES = ("router.",)  # the LLM roles it answers (core.llm.factory refuses it for others)


def answer(request: LLMRequest) -> str:
    delay = float(os.environ.get(LATENCY_ENV) or 0)
    if delay > 0:
        time.sleep(delay)
    last = request.messages[-1].text
    question = (fenced(last, "VISITOR") or [last])[0].strip()  # the visitor's words, out of their fence
    turns = len(request.messages)
    if any("\u3040" <= c <= "\u30ff" for c in question):
        return f"（スクリプト応答）「{question}」への一般的な回答です。会話の{turns}番目の発言として受け取りました。"
    return f"(scripted answer) A general answer to: {question!r} - message {turns} of this conversation."


__all__ = ["LATENCY_ENV", "ROLES", "answer"]
