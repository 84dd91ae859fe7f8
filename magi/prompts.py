"""Prompt templates of the council (``data/magi/prompts.yaml``), checked at load for their fields."""

from __future__ import annotations

import string
from functools import cache
from pathlib import Path
from typing import ClassVar

from pydantic import model_validator

from core.policy import PolicyModel, load_policy
from core.resources import data_path

FIELDS = {
    "thinking": {"session", "question", "language", "labels"},
    "debate": {"session", "round", "rounds", "source", "peers", "language", "labels"},
    "voting": {"session", "peers", "blind", "language", "labels"},
    "summary": {"turns"},
    "labels": set(),
}
LANGUAGE_NAMES = {"ja": "Japanese", "en": "English"}


def _fields(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


class Prompts(PolicyModel):
    policy_name: ClassVar[str] = "MAGI prompts"

    thinking: str
    debate: str
    voting: str
    summary: str
    labels: str

    @model_validator(mode="after")
    def _known_fields(self) -> Prompts:
        for name, allowed in FIELDS.items():
            try:
                used = _fields(getattr(self, name))
            except ValueError as exc:
                raise ValueError(f"{name}: not a valid template ({exc}); double literal braces") from exc
            unknown = used - allowed
            if unknown:
                raise ValueError(f"{name}: unknown field(s) {sorted(unknown)}; allowed: {sorted(allowed)}")
        return self


def load_prompts(path: Path | None = None) -> Prompts:
    return load_policy(path or data_path("magi", "prompts.yaml"), Prompts)


@cache
def bundled_prompts() -> Prompts:
    return load_prompts()


__all__ = ["FIELDS", "LANGUAGE_NAMES", "Prompts", "bundled_prompts", "load_prompts"]
