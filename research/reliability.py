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
from typing import Any
from urllib.parse import urlsplit

from core.errors import ConfigError
from core.models import SourceReference
from core.resources import data_path
from core.yamlfile import read_yaml

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
            why = (f"{w:g} × {domain[0].score:g} (domain rule '{domain[0].name}': {host} ~ {domain[1]}) "
                   f"+ {1 - w:g} × {prior:g} (type prior '{source.source_type}') = {score:.3f}")
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


def _unit(value: Any, where: str, file: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ConfigError(f"source reliability rules {file}: {where} must be a number in 0..1, got {value!r}")
    return float(value)


def _strings(value: Any, where: str, file: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ConfigError(f"source reliability rules {file}: {where} must be a list of non-empty strings")
    return [v.strip() for v in value]


def _domain_rule(i: int, entry: Any, file: str) -> DomainRule:
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
        raise ConfigError(f"source reliability rules {file}: domains[{i}] must be a mapping with a 'name'")
    where = f"domains[{i}] ({entry['name']!r})"
    unknown = set(entry) - {"name", "score", "suffixes", "patterns"}
    if unknown:
        raise ConfigError(f"source reliability rules {file}: {where} has unknown keys {sorted(unknown)}")
    suffixes = tuple(s.lower().lstrip(".") for s in _strings(entry.get("suffixes"), f"{where}.suffixes", file))
    patterns = []
    for p in _strings(entry.get("patterns"), f"{where}.patterns", file):
        try:
            patterns.append(re.compile(p, re.IGNORECASE))
        except re.error as exc:
            raise ConfigError(f"source reliability rules {file}: {where}: bad pattern {p!r}: {exc}") from exc
    if not suffixes and not patterns:
        raise ConfigError(f"source reliability rules {file}: {where} needs 'suffixes' or 'patterns'")
    return DomainRule(str(entry["name"]), _unit(entry.get("score"), f"{where}.score", file), suffixes, tuple(patterns))


def parse_rules(raw: Any, file: str = RULES_PATH.name) -> ReliabilityRules:
    """Validate the YAML mapping; a ConfigError names the file and the offending entry."""
    if not isinstance(raw, dict):
        raise ConfigError(f"source reliability rules {file} must be a mapping")
    priors = raw.get("type_priors") or {}
    domains = raw.get("domains") or []
    if not isinstance(priors, dict):
        raise ConfigError(f"source reliability rules {file}: type_priors must map a source type to a score")
    if not isinstance(domains, list):
        raise ConfigError(f"source reliability rules {file}: domains must be a list")
    return ReliabilityRules(
        default=_unit(raw.get("default"), "default", file),
        domain_weight=_unit(raw.get("domain_weight"), "domain_weight", file),
        type_priors={str(k): _unit(v, f"type_priors.{k}", file) for k, v in priors.items()},
        domains=tuple(_domain_rule(i, entry, file) for i, entry in enumerate(domains)),
    )


@cache
def load_rules(path: Path = RULES_PATH) -> ReliabilityRules:
    """The rule file, read once per process."""
    return parse_rules(read_yaml(path, "source reliability rules"), str(path))
