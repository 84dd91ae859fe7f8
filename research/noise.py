"""Sentences that are not findings about the question's subject: ranked last, or dropped.

A report on "StepLimit's default" that lists "the survey was sent to 300,000 firms", "Table 3.2
explains the severity levels", "Prev / Next" or "Changed in version 2.4.7" has not answered anything,
however many words those share with the question. The kinds (survey methodology, navigation,
captions, version history) and their patterns are policy: ``data/research/noise.yaml``. Headings (a
short line without a verb's end) rank last too. A question that asks about a kind (a survey's
method, a version) keeps those sentences at full weight. A reference record ("Description: ...; Default:
AuthFormSize 8192; Compatibility: Available in Apache 2.3 and later") is noise only when every field
is: one version-history field does not make its default a piece of history.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from core.policy import PatternTuple, PolicyModel, load_policy
from core.resources import data_path
from nlp.context import is_heading
from research.question import Question

NOISE_PATH = data_path("research", "noise.yaml")
HEADING_FACTOR = 0.2
_RECORD_FIELD = re.compile(r"; (?=[^;:]{1,40}: \S)")  # the field separator of a record (scrapers.structure)


class NoiseKind(BaseModel):
    """One ``kinds:`` entry (the file's header explains the keys)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    factor: float = Field(ge=0, le=1)
    patterns: PatternTuple = Field(min_length=1)
    unless_asked: PatternTuple = ()


class NoiseFile(PolicyModel):
    policy_name: ClassVar[str] = "noise file"

    kinds: tuple[NoiseKind, ...] = Field(min_length=1)


@dataclass(frozen=True, slots=True)
class _Kind:
    name: str
    factor: float
    pattern: re.Pattern[str]
    asked: re.Pattern[str] | None


def _join(patterns: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE)


@cache
def _kinds(path: Path = NOISE_PATH) -> tuple[_Kind, ...]:
    spec = load_policy(path, NoiseFile)
    return tuple(
        _Kind(k.name, k.factor, _join(k.patterns), _join(k.unless_asked) if k.unless_asked else None)
        for k in spec.kinds
    )


def _kind_of(text: str, asked: str) -> str | None:
    for kind in _kinds():
        if kind.pattern.search(text) and not (kind.asked is not None and asked and kind.asked.search(asked)):
            return kind.name
    return None


def noise_kind(text: str, question: Question | None = None, *, heading: bool | None = None) -> str | None:
    """The noise kind of a sentence ("survey methodology", "heading" ...), or None for a finding.
    ``heading``: whether the sentence's block is a heading, when the caller knows its page (a short
    sentence ending a paragraph is none); else judged from the sentence alone."""
    folded = unicodedata.normalize("NFKC", text).strip()
    asked = unicodedata.normalize("NFKC", question.text) if question else ""
    kinds = [_kind_of(part, asked) for part in _RECORD_FIELD.split(folded)]
    if all(kinds):
        return kinds[0]
    if len(kinds) == 1 and (is_heading(folded) if heading is None else heading):
        return "heading"
    return None


def noise_factor(text: str, question: Question | None = None, *, heading: bool | None = None) -> float:
    """What a sentence's ranking score is multiplied by: 1 for a finding, less for noise."""
    kind = noise_kind(text, question, heading=heading)
    if kind is None:
        return 1.0
    if kind == "heading":
        return HEADING_FACTOR
    return next(k.factor for k in _kinds() if k.name == kind)


__all__ = ["HEADING_FACTOR", "NOISE_PATH", "NoiseFile", "NoiseKind", "noise_factor", "noise_kind"]
