"""The advisor's policy files under ``data/advisor/``: mode keywords and texts, the 14 reference steps,
the prompts. Each is validated at load (file and line in the error)."""

from __future__ import annotations

from functools import cache
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from core.errors import ConfigError
from core.policy import PolicyModel, load_policy
from core.resources import data_path

Mode = Literal["mode1", "mode2"]
MODES: tuple[Mode, ...] = ("mode1", "mode2")


class ConsentTexts(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    ask: str
    refused: str
    accepted: str


class ModesFile(PolicyModel):
    policy_name: ClassVar[str] = "advisor modes file"
    mode2_keywords: list[str] = Field(min_length=1)
    names: dict[Mode, str]
    consent: ConsentTexts


class Step(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str
    title: str
    tools: list[str] = Field(default_factory=list)


class StepsFile(PolicyModel):
    policy_name: ClassVar[str] = "advisor steps file"
    steps: list[Step] = Field(min_length=14, max_length=14)


@cache
def modes() -> ModesFile:
    return load_policy(data_path("advisor", "modes.yaml"), ModesFile)


@cache
def steps() -> list[Step]:
    return list(load_policy(data_path("advisor", "steps.yaml"), StepsFile).steps)


def steps_text() -> str:
    return "\n".join(f"- {s.id}: {s.title}" + (f"（{', '.join(s.tools)}）" if s.tools else "") for s in steps())


@cache
def prompt(name: str) -> str:
    """The prompt's text, without its ``[advisor:NAME]`` first line: the line identifies the file for
    people and the check below; a model is never sent it (the scripted model tells calls by role)."""
    path = data_path("advisor", "prompts", f"{name}.md")
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ConfigError(
            f"advisor prompt {path} cannot be read ({exc.strerror}); restore it from the release"
        ) from None
    if not text.startswith(f"[advisor:{name}]"):
        raise ConfigError(f"advisor prompt {path}:1: must start with the line [advisor:{name}]")
    return text.removeprefix(f"[advisor:{name}]").strip()


__all__ = ["MODES", "ConsentTexts", "Mode", "ModesFile", "Step", "StepsFile", "modes", "prompt", "steps", "steps_text"]
