"""Scripted answers for the sdd plugin's prompts (drafting, review, revision); see magi/scripted.py."""

from __future__ import annotations

from typing import Any

from core.errors import LLMError
from magi.models import SageName


def sdd_answer(sage: SageName, output_name: str, prompt: str) -> dict[str, Any]:
    raise LLMError(f"the scripted MAGI LLM has no answer for output {output_name!r} (sage {sage.display})")


__all__ = ["sdd_answer"]
