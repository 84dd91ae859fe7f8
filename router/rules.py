"""The router's policy files (``data/router/*.yaml``), validated at load with file/line errors.

Every keyword is compiled into a :class:`~router.text.Term` and every pattern into a regular
expression while the file is validated, so a keyword with no words or a broken pattern is reported
with its file, line and key, not at the first query that reaches it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Annotated, ClassVar, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from core.policy import PatternList, PolicyModel, compile_patterns, load_policy
from core.resources import data_path
from router.models import AGENT_NAMES
from router.text import Term, TermSet, term

Kind = Literal["aspect", "thing", "place"]
REQUEST_TYPES = ("wifi", "hours", "price", "location", "facility", "basement", "meeting-room", "event")


def _terms(words: list[str]) -> TermSet:
    out: list[Term] = []
    for word in words:
        try:
            out.append(term(word))
        except ValueError as exc:
            raise ValueError(str(exc)) from None
    return TermSet(out)


def _checked_words(words: list[str]) -> list[str]:
    _terms(words)
    return words


# A policy field of keywords (each must make a term) or of patterns (each must compile), checked
# while the file is validated so that the error carries its file, line and key.
Words = Annotated[list[str], AfterValidator(_checked_words)]
Patterns = PatternList


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)


class RequestTypeRule(_Strict):
    kind: Kind
    questions: Words = Field(default_factory=list)
    keywords: Words = Field(min_length=1)
    patterns: Patterns = Field(default_factory=list)
    qualifiers: Words = Field(default_factory=list)


class RequestTypesPolicy(PolicyModel):
    policy_name: ClassVar[str] = "router request types"
    request_types: dict[str, RequestTypeRule]

    @field_validator("request_types")
    @classmethod
    def _known(cls, types: dict[str, RequestTypeRule]) -> dict[str, RequestTypeRule]:
        unknown = sorted(set(types) - set(REQUEST_TYPES))
        if unknown:
            raise ValueError(f"unknown request type(s) {unknown}; the spec's are {list(REQUEST_TYPES)}")
        return types


class CategoriesPolicy(PolicyModel):
    policy_name: ClassVar[str] = "router categories"
    events: Words = Field(min_length=1)
    calendar: Words = Field(min_length=1)
    saino: Words = Field(min_length=1)
    engineer_cafe: Words = Field(min_length=1)
    generic_cafe: Words = Field(min_length=1)
    cafe_items: Words = Field(default_factory=list)
    current_time: Patterns = Field(min_length=1)
    membership: Words = Field(default_factory=list)
    purpose: Patterns = Field(default_factory=list)


class MemoryCue(_Strict):
    weight: float = Field(gt=0, le=10)
    words: Words = Field(min_length=1)


class MemoryPolicy(PolicyModel):
    policy_name: ClassVar[str] = "router memory cues"
    threshold: float = Field(gt=0, le=10)
    cues: list[MemoryCue] = Field(min_length=1)
    exclusions: list[Words] = Field(default_factory=list)


class FollowupPolicy(PolicyModel):
    policy_name: ClassVar[str] = "router follow-up patterns"
    patterns: Patterns = Field(min_length=1)
    # Words an elliptical follow-up may carry besides the pattern (days, people, pronouns); a query
    # with another content word starts a new topic (「明日の天気は？」 is not about opening hours).
    context_words: Words = Field(default_factory=list)


class AgentsPolicy(PolicyModel):
    policy_name: ClassVar[str] = "router agent mapping"
    agents: list[str] = Field(min_length=1)
    fallback: str
    categories: dict[str, str]
    request_types: dict[str, str] = Field(default_factory=dict)
    abstain_domain: str
    abstain_general: str

    @model_validator(mode="after")
    def _agents_known(self) -> AgentsPolicy:
        unknown = sorted(set(self.agents) - set(AGENT_NAMES))
        if unknown:
            raise ValueError(f"unknown agent(s) {unknown} in agents; the router knows {list(AGENT_NAMES)}")
        named = [self.fallback, self.abstain_domain, self.abstain_general]
        named += list(self.categories.values()) + list(self.request_types.values())
        missing = sorted({a for a in named if a not in self.agents})
        if missing:
            raise ValueError(f"agent(s) {missing} are used but not listed under agents")
        bad_types = sorted(set(self.request_types) - set(REQUEST_TYPES))
        if bad_types:
            raise ValueError(f"unknown request type(s) {bad_types} under request_types")
        return self


@dataclass(frozen=True)
class TypeRule:
    """A request type ready to match: its terms by rank, and its patterns."""

    name: str
    kind: Kind
    questions: TermSet
    keywords: TermSet
    patterns: tuple[re.Pattern[str], ...]
    qualifiers: TermSet


@dataclass(frozen=True)
class RouterRules:
    """Every policy file of the router, compiled."""

    types: tuple[TypeRule, ...]
    events: TermSet
    calendar: TermSet
    saino: TermSet
    engineer_cafe: TermSet
    generic_cafe: TermSet
    cafe_items: TermSet
    current_time: tuple[re.Pattern[str], ...]
    membership: TermSet
    purpose: tuple[re.Pattern[str], ...]
    memory: MemoryPolicy
    memory_cues: tuple[tuple[float, TermSet], ...]
    memory_exclusions: TermSet
    followups: tuple[re.Pattern[str], ...]
    context_words: TermSet
    agents: AgentsPolicy
    topic_vocabulary: TermSet  # every word a rule knows, plus the follow-up vocabulary

    def type_rule(self, name: str) -> TypeRule:
        return next(r for r in self.types if r.name == name)


def load_rules(folder: Path | None = None) -> RouterRules:
    """Read and compile ``data/router`` (or ``folder``); a ConfigError names the file, line and key."""
    root = folder or data_path("router")
    types = load_policy(root / "request_types.yaml", RequestTypesPolicy)
    cats = load_policy(root / "categories.yaml", CategoriesPolicy)
    memory = load_policy(root / "memory.yaml", MemoryPolicy)
    followups = load_policy(root / "followups.yaml", FollowupPolicy)
    agents = load_policy(root / "agents.yaml", AgentsPolicy)
    return RouterRules(
        types=tuple(
            TypeRule(
                name,
                rule.kind,
                _terms(rule.questions),
                _terms(rule.keywords),
                compile_patterns(rule.patterns),
                _terms(rule.qualifiers),
            )
            for name, rule in types.request_types.items()
        ),
        events=_terms(cats.events),
        calendar=_terms(cats.calendar),
        saino=_terms(cats.saino),
        engineer_cafe=_terms(cats.engineer_cafe),
        generic_cafe=_terms(cats.generic_cafe),
        cafe_items=_terms(cats.cafe_items),
        current_time=compile_patterns(cats.current_time),
        membership=_terms(cats.membership),
        purpose=compile_patterns(cats.purpose),
        memory=memory,
        memory_cues=tuple((cue.weight, _terms(cue.words)) for cue in memory.cues),
        memory_exclusions=TermSet(t for group in memory.exclusions for t in _terms(group)),
        followups=compile_patterns(followups.patterns),
        context_words=_terms(followups.context_words),
        agents=agents,
        topic_vocabulary=TermSet(
            term(w)
            for w in followups.context_words
            + cats.saino
            + cats.engineer_cafe
            + cats.membership
            + cats.generic_cafe
            + cats.events
            + cats.calendar
            + [w for rule in types.request_types.values() for w in rule.keywords + rule.questions]
        ),
    )


@lru_cache(maxsize=1)
def default_rules() -> RouterRules:
    """The bundled policy, loaded once per process."""
    return load_rules()


__all__ = [
    "REQUEST_TYPES",
    "AgentsPolicy",
    "CategoriesPolicy",
    "FollowupPolicy",
    "Kind",
    "MemoryCue",
    "MemoryPolicy",
    "Patterns",
    "RequestTypeRule",
    "RequestTypesPolicy",
    "RouterRules",
    "TypeRule",
    "Words",
    "default_rules",
    "load_rules",
]
