"""A scripted LLM for engine tests: restates the first verified claim that has a figure, then invents one."""

from __future__ import annotations

import re

from core.llm.base import LLMRequest


def write(request: LLMRequest) -> str:
    claims = re.findall(r"^\d+\. (.+?) \[figures: (?!none)", request.messages[-1].content, re.MULTILINE)
    return f"{claims[0]} 全体の99.9%が満足している。"
