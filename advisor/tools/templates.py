"""Document templates and tones (``data/advisor/templates/*.yaml``), validated at load with file/line errors."""

from __future__ import annotations

import string
from collections.abc import Mapping
from functools import cache
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from core.policy import PolicyModel, load_policy
from core.resources import data_path

DOCUMENT_TYPES = ("quotation", "request_letter", "negotiation_materials", "agreement", "cost_breakdown")
TONES = ("formal", "friendly", "assertive", "urgent")


class Tone(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    opening: str = Field(min_length=1)
    closing: str = Field(min_length=1)


class ToneFile(PolicyModel):
    policy_name: ClassVar[str] = "advisor tone file"
    tones: dict[str, Tone]


class DocumentTemplate(PolicyModel):
    policy_name: ClassVar[str] = "advisor document template"
    title: str = Field(min_length=1)
    body: list[str] = Field(min_length=1)


class _Keep(dict[str, str]):
    """format_map mapping that leaves unknown placeholders as written."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def fill(text: str, values: Mapping[str, object]) -> str:
    """``text`` with ``{name}`` placeholders filled from ``values``; unknown ones stay as they are."""
    names = {field for _, field, _, _ in string.Formatter().parse(text) if field}
    mapping = _Keep({k: str(v) for k, v in values.items() if k in names})
    return text.format_map(mapping)


@cache
def tones() -> dict[str, Tone]:
    loaded = load_policy(data_path("advisor", "templates", "tones.yaml"), ToneFile).tones
    missing = [t for t in TONES if t not in loaded]
    if missing:
        from core.errors import ConfigError

        raise ConfigError(f"advisor tone file {data_path('advisor', 'templates', 'tones.yaml')}: no tone {missing}")
    return loaded


@cache
def template(document_type: str) -> DocumentTemplate:
    return load_policy(data_path("advisor", "templates", f"{document_type}.yaml"), DocumentTemplate)


__all__ = ["DOCUMENT_TYPES", "TONES", "DocumentTemplate", "Tone", "ToneFile", "fill", "template", "tones"]
