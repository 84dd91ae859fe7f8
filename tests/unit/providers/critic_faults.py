"""A critic judge with scripted faults, keyed on words in the idea's title (tests only).

``FAIL`` always raises; ``FLAKY`` raises on its first call only; ``HALF`` raises for sample 2;
``SLOW`` sleeps 30 s; ``WILD`` answers a market size of 99 (out of range); ``LOW`` answers scores that total
17.3 of 100. Everything else is critic.scripted's answer.
``CALLS`` counts calls per title, so tests can prove a cache hit made none.
"""

from __future__ import annotations

import asyncio
from collections import Counter

from core.llm.base import LLMRequest, LLMResponse
from critic import scripted

CALLS: Counter[str] = Counter()


def _title(request: LLMRequest) -> str:
    text = next((m.text for m in request.messages if m.role == "user"), "")
    return next((line.split(": ", 1)[1] for line in text.splitlines() if line.startswith("タイトル: ")), "")


async def judge(request: LLMRequest) -> LLMResponse:
    title = _title(request)
    CALLS[title] += 1
    if "FAIL" in title:
        raise RuntimeError(f"scripted outage for {title}")
    if "HALF" in title and "判定番号: 2" in request.messages[0].text:
        raise RuntimeError("scripted failure of sample 2")
    if "FLAKY" in title and CALLS[title] == 1:
        raise RuntimeError("scripted transient failure")
    if "SLOW" in title:
        await asyncio.sleep(30)
    response = await scripted.judge(request)
    if "WILD" in title and response.output is not None:
        response.output["market"]["size"] = 99
    if "LOW" in title and response.output is not None:
        out = response.output
        out["market"].update(size=5, growth=4, profitability=3.5)  # 12.5 of 50
        out["capabilities"].update(development=3, operations=2, finance=2, innovation=1)  # mapping 8, none strong
        out["scenario"].update(resourceUse=2, brand=2, strategicValue=2)
        out["verification"].update(logic=1, feasibility=1, uniqueness=1, scale=1)  # quality 0.6: synergy 4.8
    return response
