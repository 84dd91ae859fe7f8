"""Cross-language search queries from a small glossary (``data/rules/query_glossary.yaml``).

No translation model runs offline, so an agent that should also read sources in the other language
builds that query from the glossary: every entry the text mentions contributes its words in the other
language. Topics the glossary does not cover get no cross-language query (``None``) rather than a bad one.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from core.policy import PolicyModel, load_policy, validate_policy
from core.resources import data_path
from nlp.values import fold

GLOSSARY_PATH = data_path("rules", "query_glossary.yaml")
Words = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


class GlossaryEntry(BaseModel):
    """One ``terms:`` item: Japanese patterns (any of them) and the English words they stand for."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ja: list[Words] = Field(min_length=1)
    en: Words


class GlossaryFile(PolicyModel):
    """The file's shape (its header explains how entries are used)."""

    policy_name: ClassVar[str] = "query glossary"

    terms: list[GlossaryEntry]


@dataclass(frozen=True)
class Term:
    ja: tuple[str, ...]
    en: str


def _compile(glossary: GlossaryFile) -> tuple[Term, ...]:
    return tuple(Term(tuple(fold(j) for j in entry.ja), entry.en) for entry in glossary.terms)


def parse_glossary(raw: Any, file: str = GLOSSARY_PATH.name) -> tuple[Term, ...]:
    """Validate already-parsed glossary data; a ConfigError names the file and the bad entry."""
    return _compile(validate_policy(raw, GlossaryFile, file))


@cache
def load_glossary(path: Path = GLOSSARY_PATH) -> tuple[Term, ...]:
    return _compile(load_policy(path, GlossaryFile))


def cross_language_query(text: str, lang: str, glossary: tuple[Term, ...] | None = None) -> str | None:
    """The text's glossary terms in the other language (``lang`` is the text's: ja or en), or None."""
    terms = glossary if glossary is not None else load_glossary()
    folded = fold(text).lower()
    if lang == "ja":
        words = [t.en for t in terms if any(j in folded for j in t.ja)]
    else:
        words = [t.ja[0] for t in terms if any(w.lower() in folded for w in t.en.split() if len(w) > 3)]
    return " ".join(dict.fromkeys(words)) or None


__all__ = [
    "GLOSSARY_PATH",
    "GlossaryEntry",
    "GlossaryFile",
    "Term",
    "Words",
    "cross_language_query",
    "load_glossary",
    "parse_glossary",
]
