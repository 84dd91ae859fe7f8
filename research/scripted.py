"""Test model of research (a scripted LLM shipped with the package, never a real one): valid, offline answers.

Configure it as ``MAGI_LLM_PROVIDER=python:research.scripted:answer``. It answers the agents'
planning (:class:`~research.llm_agent.ResearchPlan`), reading (:class:`~research.llm_agent.ReadingNotes`:
it quotes the first passages of each page verbatim) and report writing, and the executive summary (it
restates the first verified claims). It is a stand-in for a real model in tests, demos and benchmarks,
not a reader: what it returns is derived from the request only. ``MAGI_SCRIPTED_LATENCY_S`` adds a fixed
delay per call (benchmarks of LLM-bound runs). Usage is reported as characters / 4 tokens under the
model name ``scripted-research`` (no price in ``data/llm/prices.yaml``: its cost shows as unknown).
"""

from __future__ import annotations

import asyncio
import os
import re
from typing import Any

from core.llm.base import LLMRequest, TextPart
from core.llm.fencing import fenced

MODEL = "scripted-research"
ROLES = ("research.",)  # the LLM roles it answers (core.llm.factory refuses it for others)
LATENCY_ENV = "MAGI_SCRIPTED_LATENCY_S"
_PAGE = re.compile(r"^## Page (\d+): ")
_SOURCE = re.compile(r"^\[(\d+)\] ")
_CLAIM = re.compile(r"^\d+\. (.*?) \[figures: ")
_FIGURE = re.compile(r"[-+]?\d[\d,.]*\s?%?")


def _user_text(request: LLMRequest) -> str:
    last = request.messages[-1].content
    if isinstance(last, str):
        return last
    return "\n".join(p.text for p in last if isinstance(p, TextPart))


def _plan(text: str) -> dict[str, Any]:
    asked = fenced(text, "QUESTION")
    question = (asked[0] if asked else text.splitlines()[0].removeprefix("Question: ")).strip()
    words = [w for w in re.split(r"\s+", question) if len(w) > 3 or any(c in w for c in "_:/%")]
    return {"sub_questions": [" ".join(words[:4])] if words else []}


def _notes(text: str) -> dict[str, Any]:
    notes: list[dict[str, Any]] = []
    page = 0
    taken = 0
    for line in text.splitlines():
        match = _PAGE.match(line)
        if match:
            page, taken = int(match.group(1)), 0
        elif line.startswith("- ") and page and taken < 2 and len(notes) < 8:
            quote = line[2:].strip()
            figure = _FIGURE.search(quote)
            notes.append({"quote": quote, "figure": figure.group().strip() if figure else None, "page": page})
            taken += 1
    return {"notes": notes}


def _report(text: str) -> dict[str, Any]:
    bullets: list[str] = []
    source = 0
    for line in text.splitlines():
        match = _SOURCE.match(line)
        if match:
            source = int(match.group(1))
        elif line.startswith("- ") and source:
            bullets.append(f"- {line[2:].strip()} [{source}]")
    if not bullets:
        return {"report": "No verified notes. [1]"}
    return {"report": "\n".join([bullets[0][2:], "", *bullets[1:]])}


def _summary(text: str) -> str:
    claims = [m.group(1) for line in text.splitlines() if (m := _CLAIM.match(line))]
    return " ".join(claims[:3])


async def answer(request: LLMRequest) -> dict[str, Any]:
    """The provider function (``python:research.scripted:answer``)."""
    delay = float(os.environ.get(LATENCY_ENV, "0") or 0)
    if delay > 0:
        await asyncio.sleep(delay)
    text = _user_text(request)
    builders = {"ResearchPlan": _plan, "ReadingNotes": _notes, "AgentReportText": _report}
    output = builders[request.output_name](text) if request.output_name in builders else None
    reply = "" if output is not None else _summary(text)
    usage = {"input_tokens": (len(request.system) + len(text)) // 4, "output_tokens": len(str(output or reply)) // 4}
    return {"text": reply, "output": output, "model": MODEL, "usage": usage}


__all__ = ["LATENCY_ENV", "MODEL", "ROLES", "answer"]
