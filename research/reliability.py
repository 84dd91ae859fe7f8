"""Source reliability (0..1) from rules in ``data/rules/source_reliability.yaml``.

The rules are data so that policy can change without code: a domain rule says what the host is
(government, university, major newspaper, blog platform), a type prior what the page declares
itself to be (official > academic > news > community). The YAML header documents how the two
combine. A syndicated copy (``duplicate_of``) is scored as its origin and :func:`origin_of` lets
report-level scores count each origin once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Annotated, Any, ClassVar
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator, model_validator

from core.policy import PolicyModel, load_policy, validate_policy
from core.resources import data_path
from research.models import SourceReference

RULES_PATH = data_path("rules", "source_reliability.yaml")


@dataclass(frozen=True)
class DomainRule:
    name: str
    score: float
    suffixes: tuple[str, ...]
    patterns: tuple[re.Pattern[str], ...]

    def match(self, host: str) -> str | None:
        """The suffix or pattern that matches ``host`` (for :func:`explain`), else None."""
        for suffix in self.suffixes:
            if host == suffix or host.endswith("." + suffix):
                return suffix
        for pattern in self.patterns:
            if pattern.search(host):
                return pattern.pattern
        return None


@dataclass(frozen=True)
class Assessment:
    score: float
    explanation: str


@dataclass(frozen=True)
class ReliabilityRules:
    """The parsed rule file; :meth:`assess` applies it to one source."""

    default: float
    domain_weight: float
    type_priors: Mapping[str, float]
    domains: tuple[DomainRule, ...]

    def assess(self, source: SourceReference) -> Assessment:
        url = source.duplicate_of or source.url
        host = (urlsplit(url).hostname or "").lower().rstrip(".")
        domain = next(((rule, hit) for rule in self.domains if (hit := rule.match(host)) is not None), None)
        prior = self.type_priors.get(source.source_type or "")
        if domain is not None and prior is not None:
            w = self.domain_weight
            score = w * domain[0].score + (1 - w) * prior
            why = (
                f"{w:g} × {domain[0].score:g} (domain rule '{domain[0].name}': {host} ~ {domain[1]}) "
                f"+ {1 - w:g} × {prior:g} (type prior '{source.source_type}') = {score:.3f}"
            )
        elif domain is not None:
            score = domain[0].score
            why = f"{score:g} (domain rule '{domain[0].name}': {host} ~ {domain[1]}; no known source type)"
        elif prior is not None:
            score = prior
            why = f"{score:g} (type prior '{source.source_type}'; no domain rule for {host or 'this URL'})"
        else:
            score = self.default
            why = f"{score:g} (default: no domain rule for {host or 'this URL'} and no known source type)"
        if source.duplicate_of:
            why = f"syndicated copy of {source.duplicate_of}, scored as its origin: {why}"
        return Assessment(score=score, explanation=why)


def origin_of(source: SourceReference) -> str:
    """The URL a source's content originates from: a syndicated copy and its origin share it."""
    return source.duplicate_of or source.url


def reliability_for(source: SourceReference, rules: ReliabilityRules | None = None) -> float:
    """Reliability of one source in 0..1 (its origin's, for a syndicated copy)."""
    return (rules or load_rules()).assess(source).score


def explain(source: SourceReference, rules: ReliabilityRules | None = None) -> str:
    """Which rule fired and the arithmetic, for the transparency section of a report."""
    return (rules or load_rules()).assess(source).explanation


# --- loading ----------------------------------------------------------------------------------

Unit = Annotated[float, Field(ge=0, le=1, strict=True)]
Words = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


class DomainRuleSpec(BaseModel):
    """One ``domains:`` entry as written in the file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    score: Unit
    suffixes: list[Words] = []
    patterns: list[Words] = []

    @field_validator("patterns")
    @classmethod
    def _compiles(cls, patterns: list[str]) -> list[str]:
        for p in patterns:
            try:
                re.compile(p)
            except re.error as exc:
                raise ValueError(f"bad pattern {p!r}: {exc}") from exc
        return patterns

    @model_validator(mode="after")
    def _matches_something(self) -> DomainRuleSpec:
        if not self.suffixes and not self.patterns:
            raise ValueError("needs 'suffixes' or 'patterns'")
        return self


class ReliabilityFile(PolicyModel):
    """The file's shape (its header explains how the scores combine)."""

    policy_name: ClassVar[str] = "source reliability rules"

    default: Unit
    domain_weight: Unit
    type_priors: dict[str, Unit] = Field(default_factory=dict)
    domains: tuple[DomainRuleSpec, ...] = ()


def _compile(spec: ReliabilityFile) -> ReliabilityRules:
    return ReliabilityRules(
        default=spec.default,
        domain_weight=spec.domain_weight,
        type_priors=dict(spec.type_priors),
        domains=tuple(
            DomainRule(
                d.name,
                d.score,
                tuple(s.lower().lstrip(".") for s in d.suffixes),
                tuple(re.compile(p, re.IGNORECASE) for p in d.patterns),
            )
            for d in spec.domains
        ),
    )


def parse_rules(raw: Any, file: str = RULES_PATH.name) -> ReliabilityRules:
    """Validate already-parsed rules; a ConfigError names the file and the offending entry."""
    return _compile(validate_policy(raw, ReliabilityFile, file))


@cache
def load_rules(path: Path = RULES_PATH) -> ReliabilityRules:
    """The rule file, read once per process."""
    return _compile(load_policy(path, ReliabilityFile))


__all__ = [
    "RULES_PATH",
    "Assessment",
    "DomainRule",
    "DomainRuleSpec",
    "ReliabilityFile",
    "ReliabilityRules",
    "Unit",
    "Words",
    "explain",
    "load_rules",
    "origin_of",
    "parse_rules",
    "reliability_for",
]
