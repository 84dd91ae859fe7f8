"""The sages' personas (``data/magi/personas/*.yaml``) and their system prompts with plugin overrides.

A persona file is policy: validated at load with file/line errors. Each system prompt must name its
sage first, so a model reading only the beginning still knows who it is; plugin instructions are
appended after the persona, never instead of it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import ClassVar

from pydantic import Field, model_validator

from core.errors import ConfigError
from core.policy import PolicyModel, load_policy
from core.resources import data_path
from magi.models import SAGES, SageName


class Persona(PolicyModel):
    policy_name: ClassVar[str] = "MAGI persona"

    sage: SageName
    title: str = Field(min_length=1)
    focus: str = Field(min_length=1)
    system: str = Field(min_length=1)

    @model_validator(mode="after")
    def _names_itself_first(self) -> Persona:
        if self.title != self.sage.display:
            raise ValueError(f"title must be {self.sage.display!r} for sage {self.sage.value!r}")
        if not self.system.lstrip().startswith(self.title):
            raise ValueError(f"system must start with the sage's title {self.title!r}")
        return self


def load_personas(folder: Path | None = None) -> dict[SageName, Persona]:
    """Every sage's persona from ``folder`` (default: the bundled ones); all three must be there."""
    root = folder or data_path("magi", "personas")
    found: dict[SageName, Persona] = {}
    for path in sorted(root.glob("*.yaml")):
        persona = load_policy(path, Persona)
        if persona.sage in found:
            raise ConfigError(f"MAGI persona {path}: sage {persona.sage.value!r} is defined twice in {root}")
        found[persona.sage] = persona
    missing = [s.value for s in SAGES if s not in found]
    if missing:
        raise ConfigError(f"MAGI personas in {root}: no persona for {', '.join(missing)}; add <sage>.yaml files")
    return found


@cache
def bundled_personas() -> dict[SageName, Persona]:
    return load_personas()


def system_prompt(persona: Persona, overrides: Sequence[tuple[str, str]] = ()) -> str:
    """The persona's system prompt, then each plugin's extra instructions as ``(plugin, text)``."""
    parts = [persona.system.strip()]
    for plugin, text in overrides:
        parts.append(f"Additional instructions from plugin {plugin!r} (your traits above still apply):\n{text.strip()}")
    return "\n\n".join(parts)


def system_prompts(
    overrides: Mapping[SageName, Sequence[tuple[str, str]]] | None = None,
    personas: Mapping[SageName, Persona] | None = None,
) -> dict[SageName, str]:
    chosen = personas or bundled_personas()
    return {sage: system_prompt(chosen[sage], (overrides or {}).get(sage, ())) for sage in SAGES}


__all__ = ["Persona", "bundled_personas", "load_personas", "system_prompt", "system_prompts"]
