"""What a research question asks: the things it is about and the attribute it wants of them.

"How long is a digest authentication server nonce valid by default?" is about a *server nonce* and
asks for a *default* and a *duration*; 「/var パーティションには最低どれだけ割り当てるべきですか」 is
about */var* and asks for a *minimum* and a *size*. A sentence answers the question when it names
the thing (in its words or in the context its document gives it) and states the attribute (its
words or the kind of figure: "300 seconds", "200MB"). Sharing words with the question is not enough:
"Table 20.3 explains the message severity levels" shares words with many questions and answers none.

The attributes and their cues are policy (``data/research/question_attributes.yaml``).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from core.policy import PatternTuple, PolicyModel, load_policy
from core.resources import data_path
from nlp.language import detect_language
from research.retrieval import identifiers, question_terms

ATTRIBUTES_PATH = data_path("research", "question_attributes.yaml")
# Clause breaks of a question that asks several things: "..., and what was ...", 「…と、…」.
_CLAUSES = re.compile(
    r",?\s+and\s+(?=(?:what|which|how|when|why|where|who|is|are|does|do)\b)|[、,]\s*(?:また|および)|？|\?\s+(?=\S)",
    re.IGNORECASE,
)

# English question words that say what is asked, not what the question is about: "How long may the short
# description be?" is about no long thing, "How many characters ..." about nothing many.
_ASKING_WORDS = re.compile(r"\bhow\s+(?:long|many|much|large|big|small|often|old|far|soon|high|low)\b", re.IGNORECASE)


def asked_about(text: str) -> str:
    """The question without its asking words ("How long may X be?" -> " may X be?"), for matching words."""
    return _ASKING_WORDS.sub(" ", text)


class AttributeSpec(BaseModel):
    """One ``attributes:`` entry: when a question asks it and how a sentence states it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    role: Literal["asks", "qualifies"]
    asked: PatternTuple = Field(min_length=1)
    stated: PatternTuple = Field(min_length=1)


class AttributeFile(PolicyModel):
    """The file's shape (its header explains matching)."""

    policy_name: ClassVar[str] = "question attribute file"

    attributes: tuple[AttributeSpec, ...] = Field(min_length=1)


@dataclass(frozen=True, slots=True)
class _Attribute:
    name: str
    role: str
    asked: re.Pattern[str]
    stated: re.Pattern[str]


@cache
def _attributes(path: Path = ATTRIBUTES_PATH) -> tuple[_Attribute, ...]:
    spec = load_policy(path, AttributeFile)
    return tuple(
        _Attribute(
            a.name,
            a.role,
            re.compile("|".join(f"(?:{p})" for p in a.asked), re.IGNORECASE),
            re.compile("|".join(f"(?:{p})" for p in a.stated), re.IGNORECASE),
        )
        for a in spec.attributes
    )


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


@dataclass(frozen=True, slots=True)
class Question:
    """A parsed question: ``entities`` are the names it asks about exactly (identifiers such as
    ``KeepAliveTimeout``, ``/var``, ``%D``), ``terms`` its content words, ``attributes`` what it asks
    for, ``clauses`` the separate things asked when it asks several."""

    text: str
    lang: str
    entities: tuple[str, ...]
    terms: tuple[str, ...]
    attributes: tuple[str, ...]
    clauses: tuple[str, ...]


def parse_question(text: str) -> Question:
    """The question's entities, content terms, asked attributes and clauses (see the module docstring)."""
    folded = _fold(text)
    asked = tuple(a.name for a in _attributes() if a.asked.search(folded))
    clauses = tuple(c.strip() for c in _CLAUSES.split(folded) if c and len(c.strip()) > 3)
    return Question(
        text=text,
        lang=detect_language(text),
        entities=tuple(dict.fromkeys(identifiers(folded))),
        terms=tuple(question_terms(asked_about(folded))),
        attributes=asked,
        clauses=clauses or (folded,),
    )


def stated_attributes(text: str, wanted: tuple[str, ...] | None = None) -> set[str]:
    """The attributes (of ``wanted``, default all) that a sentence with its context states."""
    folded = _fold(text)
    return {a.name for a in _attributes() if (wanted is None or a.name in wanted) and a.stated.search(folded)}


def answer_fit(question: Question, text: str) -> tuple[bool, float]:
    """How a sentence (with its context) answers the question, from one reading of its attributes:
    whether it gives what is asked (:func:`answers`) and the share of asked attributes it states
    (:func:`answered_share`)."""
    if not question.attributes:
        return True, 0.0
    stated = stated_attributes(text, question.attributes)
    wanted = asked_forms(question) or question.attributes
    return any(a in stated for a in wanted), len(stated) / len(question.attributes)


def asked_forms(question: Question) -> tuple[str, ...]:
    """The question's asked ``asks`` attributes: the form its answer takes (a path, a duration)."""
    role = {a.name: a.role for a in _attributes()}
    return tuple(a for a in question.attributes if role[a] == "asks")


def answered_share(question: Question, text: str) -> float:
    """Share of the question's asked attributes that the text states (0 when it asks none)."""
    return answer_fit(question, text)[1]


def answers(question: Question, text: str) -> bool:
    """Whether a sentence (with its context) gives what the question asks: one of its asked ``asks``
    attributes (a date for "when", a duration for "how long") when it has any, else one of its
    ``qualifies`` attributes (a default); any sentence when the question asks no attribute."""
    return answer_fit(question, text)[0]


__all__ = [
    "ATTRIBUTES_PATH",
    "AttributeFile",
    "AttributeSpec",
    "Question",
    "answer_fit",
    "answered_share",
    "answers",
    "asked_about",
    "asked_forms",
    "parse_question",
    "stated_attributes",
]
