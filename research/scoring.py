"""Report scores and best-report selection (KATASHIRO REQ-1.2.0-WFL-002, WFL-003).

Every report gets three scores in 0..1 and the spec's weighted overall score:

* consistency  ``1 - min(1, conflict_rate)`` with
  ``conflict_rate = sum(severity/5 * confidence over the report's conflicts) / max(claims, 1)``:
  each conflict counts as the share of one contradicted claim given by its severity (1..5, spec's
  ConflictDetail) and detection confidence (0..1), and the sum is divided by the number of claims
  the report makes, so a long report is judged by its share of contradicted claims, not its size.
  One certain severity-5 conflict among 20 claims gives 0.95; it falls with every further, more
  severe or more confident conflict, down to 0.
* reliability  the mean reliability (research/reliability.py) of the report's distinct origins: a
  syndicated copy and its original count once, at the origin's reliability. No sources: 0.
* coverage     the share of the topic's facets (data/research/facets.yaml, or generic facets for
  other topics, see :func:`facets_for`) the report's text or claims address.
* overall      ``0.5*consistency + 0.3*reliability + 0.2*coverage`` (spec's formula).

Scores keep full precision; numbers are rounded only in the ``arithmetic`` and reason strings.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Annotated, Any, ClassVar, Protocol

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SerializeAsAny,
    StringConstraints,
    field_validator,
    model_validator,
)

from core.models import CamelModel
from core.policy import PolicyModel, load_policy, validate_policy
from core.resources import data_path
from nlp.values import fold
from research.models import Finding, SourceReference
from research.reliability import ReliabilityRules, load_rules, origin_of

FACETS_PATH = data_path("research", "facets.yaml")
WEIGHTS = (0.5, 0.3, 0.2)  # consistency, reliability, coverage (REQ-1.2.0-WFL-003)
MAX_SEVERITY = 5  # ConflictDetail.severity is 1..5
EPSILON = 1e-9  # scores closer than this are equal (float noise, not a real difference)
DEFAULT_CONFLICT_THRESHOLD = 0.1  # ConsensusResearchConfig.conflictThreshold


class ConflictLike(Protocol):
    """What scoring needs from a conflict (the spec's ConflictDetail has both fields)."""

    @property
    def severity(self) -> int: ...

    @property
    def confidence(self) -> float: ...


class ConflictSummary(CamelModel):
    """A conflict read back from JSON, where the detector's own model is not known; keeps every field."""

    model_config = ConfigDict(extra="allow")

    severity: int
    confidence: float


def _weight(conflict: ConflictLike) -> float:
    """Share of one contradicted claim this conflict stands for: severity/5 * confidence, in 0..1."""
    severity = min(max(conflict.severity, 1), MAX_SEVERITY)
    return severity / MAX_SEVERITY * min(max(conflict.confidence, 0.0), 1.0)


class ReportScore(CamelModel):
    report_id: str
    consistency_score: float = Field(ge=0, le=1)
    source_reliability_score: float = Field(ge=0, le=1)
    coverage_score: float = Field(ge=0, le=1)
    overall_score: float = Field(ge=0, le=1)
    # share of the question's terms the report's first findings contain: breaks ties before the score
    relevance_score: float = Field(0.0, ge=0, le=1)
    conflicts: list[SerializeAsAny[BaseModel]] = Field(default_factory=list)
    unverified_count: int = Field(0, ge=0)
    arithmetic: str = ""  # how the numbers were computed, for the transparency section

    @field_validator("conflicts", mode="before")
    @classmethod
    def _read_conflicts(cls, value: Any) -> Any:
        """Detector models pass through unchanged; plain mappings (report.json) become ConflictSummary."""
        if isinstance(value, list):
            return [ConflictSummary.model_validate(v) if isinstance(v, dict) else v for v in value]
        return value

    @field_validator("conflicts")
    @classmethod
    def _check_conflicts(cls, value: list[BaseModel]) -> list[BaseModel]:
        for i, c in enumerate(value):
            severity, confidence = getattr(c, "severity", None), getattr(c, "confidence", None)
            if isinstance(severity, bool) or not isinstance(severity, int) or not isinstance(confidence, int | float):
                raise ValueError(f"conflict {i} ({type(c).__name__}) needs an int severity and a float confidence")
        return value


# --- consistency ------------------------------------------------------------------------------


def conflict_rate(conflicts: Sequence[ConflictLike], claim_count: int) -> float:
    """Weighted conflicting claims per claim (may exceed 1 when claims conflict more than once)."""
    return sum(_weight(c) for c in conflicts) / max(claim_count, 1)


def consistency_score(conflicts: Sequence[ConflictLike], claim_count: int) -> float:
    """``1 - min(1, conflict_rate)``: 1.0 without conflicts, lower with more, severer, surer ones."""
    return 1.0 - min(1.0, conflict_rate(conflicts, claim_count))


def _consistency_arithmetic(conflicts: Sequence[ConflictLike], claim_count: int) -> str:
    if not conflicts:
        return f"consistency 1 (no conflicts among {claim_count} claims)"
    terms = " + ".join(f"{min(max(c.severity, 1), MAX_SEVERITY)}/5×{c.confidence:.2f}" for c in conflicts)
    return (
        f"consistency 1 − min(1, ({terms}) / {max(claim_count, 1)} claims) "
        f"= {consistency_score(conflicts, claim_count):.3f}"
    )


# --- reliability ------------------------------------------------------------------------------


def origin_reliabilities(sources: Iterable[SourceReference], rules: ReliabilityRules | None = None) -> dict[str, float]:
    """Reliability per distinct origin; an origin cited directly is scored as itself, not via a copy."""
    rules = rules or load_rules()
    best: dict[str, tuple[bool, float]] = {}
    for s in sources:
        origin, is_copy = origin_of(s), s.duplicate_of is not None
        if origin not in best or (best[origin][0] and not is_copy):
            best[origin] = (is_copy, rules.assess(s).score)
    return {origin: score for origin, (_, score) in best.items()}


def reliability_score(sources: Iterable[SourceReference], rules: ReliabilityRules | None = None) -> float:
    """Mean reliability of the distinct origins (0.0 for a report without sources)."""
    scores = origin_reliabilities(sources, rules)
    return sum(scores.values()) / len(scores) if scores else 0.0


def _reliability_arithmetic(scores: dict[str, float]) -> str:
    if not scores:
        return "reliability 0 (no sources)"
    terms = " + ".join(f"{v:.2f}" for v in scores.values())
    return f"reliability ({terms}) / {len(scores)} origins = {sum(scores.values()) / len(scores):.3f}"


# --- coverage ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Facet:
    """One aspect of a topic; covered by a keyword in the text or a claim with one of its keys."""

    name: str
    keywords: tuple[re.Pattern[str], ...] = ()
    claim_keys: frozenset[str] = field(default_factory=frozenset)
    label: str = ""

    def covered_by(self, folded_text: str, claim_keys: frozenset[str]) -> bool:
        return bool(self.claim_keys & claim_keys) or any(k.search(folded_text) for k in self.keywords)


def _keyword(pattern: str) -> re.Pattern[str]:
    """Case-insensitive; ASCII patterns match whole words only (as in claim_attributes.yaml)."""
    body = f"(?:{pattern})"
    if pattern.isascii():
        body = f"(?<![A-Za-z0-9]){body}(?![A-Za-z0-9])"
    return re.compile(body, re.IGNORECASE)


def _text_of(report: str | Sequence[Finding]) -> str:
    return report if isinstance(report, str) else "\n".join(f.text for f in report)


def covered_facets(
    report: str | Sequence[Finding], facets: Sequence[Facet], claim_keys: Iterable[str] = ()
) -> list[str]:
    """Names of the facets the report text (or its findings) or its claim keys address, in facet order."""
    folded, keys = fold(_text_of(report)), frozenset(claim_keys)
    return [f.name for f in facets if f.covered_by(folded, keys)]


def coverage_score(report: str | Sequence[Finding], facets: Sequence[Facet], claim_keys: Iterable[str] = ()) -> float:
    """Covered facets / facets, in 0..1 (0.0 when there are no facets: nothing shows coverage)."""
    return len(covered_facets(report, facets, claim_keys)) / len(facets) if facets else 0.0


_TERM = re.compile(r"[一-龥々〆ァ-ヶー]+|[A-Za-z0-9][A-Za-z0-9-]*")
_GENERIC_TERMS = frozenset(
    {
        "現状",
        "動向",
        "状況",
        "実態",
        "課題",
        "影響",
        "最新",
        "今後",
        "展望",
        "調査",
        "分析",
        "比較",
        "概要",
        "現在",
        "問題",
        "the",
        "and",
        "for",
        "with",
        "about",
        "state",
        "current",
        "latest",
        "trend",
        "trends",
        "impact",
        "analysis",
        "overview",
    }
)


def topic_terms(topic: str) -> list[str]:
    """Content words of a topic: runs of kanji/katakana (hiragana separates) or English words,
    without generic words (現状, trend ...) standing alone or ending a Japanese compound."""
    terms: list[str] = []
    for m in _TERM.finditer(fold(topic)):
        term = m.group().lower()
        while not term.isascii() and (tail := next((g for g in _GENERIC_TERMS if term.endswith(g)), "")):
            if len(term) - len(tail) < 2:
                break
            term = term[: -len(tail)]  # 導入状況 -> 導入: the generic word adds nothing to match on
        long_enough = len(term) >= (3 if term.isascii() else 2)
        if long_enough and term not in _GENERIC_TERMS and term not in terms:
            terms.append(term)
    return terms


def generic_facets(topic: str, claim_keys_seen: Iterable[str]) -> tuple[Facet, ...]:
    """Facets for a topic without an entry: its own terms, and every claim key any agent reported."""
    facets = [Facet(name=f"term:{t}", keywords=(_keyword(re.escape(t)),), label=t) for t in topic_terms(topic)]
    for key in sorted(set(claim_keys_seen)):
        # generic attributes ("rate:離職率") also count when the phrase itself appears
        phrase = key.split(":", 1)[1] if ":" in key else ""
        keywords = (_keyword(re.escape(phrase)),) if phrase else ()
        facets.append(Facet(name=f"claim:{key}", keywords=keywords, claim_keys=frozenset({key}), label=key))
    return tuple(facets)


@dataclass(frozen=True)
class _Topic:
    name: str
    match: tuple[re.Pattern[str], ...]
    facets: tuple[Facet, ...]


def _checked(patterns: tuple[str, ...]) -> tuple[str, ...]:
    for p in patterns:
        try:
            _keyword(p)
        except re.error as exc:
            raise ValueError(f"bad pattern {p!r}: {exc}") from exc
    return patterns


# regular expressions as written in the file, checked to compile as :func:`_keyword` compiles them
Patterns = Annotated[tuple[Annotated[str, StringConstraints(min_length=1)], ...], AfterValidator(_checked)]


class FacetSpec(BaseModel):
    """One ``facets:`` entry as written in the file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    label: str = ""
    keywords: Patterns = ()
    claim_keys: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _covers_something(self) -> FacetSpec:
        if not self.keywords and not self.claim_keys:
            raise ValueError("needs 'keywords' or 'claim_keys'")
        return self


class TopicSpec(BaseModel):
    """One ``topics:`` entry: when it applies (``match``) and what a report on it should address."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    match: Patterns = Field(min_length=1)
    facets: tuple[FacetSpec, ...] = Field(min_length=1)


class FacetFile(PolicyModel):
    """The file's shape (its header explains matching and coverage)."""

    policy_name: ClassVar[str] = "facet file"

    topics: tuple[TopicSpec, ...]


def _compile(spec: FacetFile) -> tuple[_Topic, ...]:
    return tuple(
        _Topic(
            t.name,
            tuple(_keyword(m) for m in t.match),
            tuple(
                Facet(f.name, tuple(_keyword(k) for k in f.keywords), frozenset(f.claim_keys), f.label)
                for f in t.facets
            ),
        )
        for t in spec.topics
    )


def parse_facets(raw: Any, file: str = FACETS_PATH.name) -> tuple[_Topic, ...]:
    """Validate already-parsed facet data; a ConfigError names the file and the offending entry."""
    return _compile(validate_policy(raw, FacetFile, file))


@cache
def load_facets(path: Path = FACETS_PATH) -> tuple[_Topic, ...]:
    return _compile(load_policy(path, FacetFile))


def facets_for(topic: str, claim_keys_seen: Iterable[str] = (), path: Path = FACETS_PATH) -> tuple[Facet, ...]:
    """The configured facets of the first matching topic entry, else :func:`generic_facets`.

    ``claim_keys_seen``: attribute/subject keys of the claims in all agents' reports (the union),
    used only by the generic fallback.
    """
    folded = fold(topic)
    for entry in load_facets(path):
        if any(p.search(folded) for p in entry.match):
            return entry.facets
    return generic_facets(topic, claim_keys_seen)


# --- overall, one report ----------------------------------------------------------------------


def overall_score(consistency: float, reliability: float, coverage: float) -> float:
    """The spec's weighted sum."""
    w_con, w_rel, w_cov = WEIGHTS
    return w_con * consistency + w_rel * reliability + w_cov * coverage


def score_report(
    report_id: str,
    *,
    conflicts: Sequence[ConflictLike],
    claim_count: int,
    sources: Sequence[SourceReference],
    text: str | Sequence[Finding],
    facets: Sequence[Facet],
    claim_keys: Iterable[str] = (),
    unverified_count: int = 0,
    rules: ReliabilityRules | None = None,
    relevance: float = 0.0,
) -> ReportScore:
    """All scores of one report, with the arithmetic spelled out; ``conflicts`` must be pydantic models."""
    consistency = consistency_score(conflicts, claim_count)
    origins = origin_reliabilities(sources, rules)
    reliability = sum(origins.values()) / len(origins) if origins else 0.0
    covered = covered_facets(text, facets, claim_keys)
    coverage = len(covered) / len(facets) if facets else 0.0
    overall = overall_score(consistency, reliability, coverage)
    arithmetic = "; ".join(
        [
            _consistency_arithmetic(conflicts, claim_count),
            _reliability_arithmetic(origins),
            f"coverage {len(covered)}/{len(facets)} facets ({', '.join(covered) or 'none'}) = {coverage:.3f}",
            f"overall 0.5×{consistency:.3f} + 0.3×{reliability:.3f} + 0.2×{coverage:.3f} = {overall:.3f}",
            f"answer relevance (question terms in the first findings) {relevance:.3f}",
        ]
    )
    return ReportScore(
        report_id=report_id,
        consistency_score=consistency,
        source_reliability_score=reliability,
        coverage_score=coverage,
        overall_score=overall,
        relevance_score=relevance,
        conflicts=list(conflicts),
        unverified_count=unverified_count,
        arithmetic=arithmetic,
    )


# --- selection and review ---------------------------------------------------------------------


def _top(scores: list[ReportScore], key: str) -> list[ReportScore]:
    best = max(getattr(s, key) for s in scores)
    return [s for s in scores if getattr(s, key) >= best - EPSILON]


def select_best(scores: Sequence[ReportScore]) -> tuple[str, str]:
    """The consensus report id and why it was chosen, with the numbers.

    Order: highest consistency (AC1); among reports within 1e-9 of it, highest coverage (AC2);
    then the highest answer relevance (the share of the question's terms its first findings contain:
    the report that answers more of the question); then highest overall score; only then the smallest
    report id, so the choice never depends on the order agents finished. The spec also writes
    ``Best = argmax(Score)``; AC1/AC2 are the acceptance criteria and the issue confirms them, so they
    rank first and the weighted score decides only among reports equal on both and on relevance
    (where it reduces to reliability). The two rules
    disagree only when a less consistent report has a higher overall score; the reason then says so.
    """
    if not scores:
        raise ValueError("select_best needs at least one report score")
    pool = list(scores)
    stages = []
    for key, label in (
        ("consistency_score", "consistency"),
        ("coverage_score", "coverage"),
        ("relevance_score", "answer relevance"),
        ("overall_score", "overall score"),
    ):
        top = _top(pool, key)
        stages.append((label, key, pool, top))
        pool = top
        if len(pool) == 1:
            break
    best = min(pool, key=lambda s: s.report_id)
    parts = []
    for label, key, before, top in stages:
        kept = {id(s) for s in top}
        others = sorted((s for s in before if id(s) not in kept), key=lambda s: (-getattr(s, key), s.report_id))
        value = getattr(best, key)
        if len(top) == 1:
            runner = f" (next: {others[0].report_id} {getattr(others[0], key):.3f})" if others else ""
            parts.append(f"highest {label} {value:.3f}{runner}")
        else:
            parts.append(f"{len(top)} reports tie on {label} {value:.3f}")
    if len(pool) > 1:
        parts.append(f"report id {best.report_id} comes first among {', '.join(sorted(s.report_id for s in pool))}")
    reason = (
        f"report {best.report_id} selected among {len(scores)}: "
        + "; ".join(parts)
        + f"; overall {best.overall_score:.3f}"
    )
    rival = max(scores, key=lambda s: (s.overall_score, s.report_id))
    if rival.overall_score > best.overall_score + EPSILON:
        reason += (
            f"; {rival.report_id} has a higher overall score ({rival.overall_score:.3f}) but lower "
            f"consistency ({rival.consistency_score:.3f}), which the spec ranks first"
        )
    return best.report_id, reason


def flag_for_review(scores: Sequence[ReportScore], threshold: float = DEFAULT_CONFLICT_THRESHOLD) -> bool:
    """True when every report's conflict rate exceeds ``threshold`` (spec WFL-002 AC4).

    The threshold (``conflictThreshold``, default 0.1) is read as a share of claims: a report is
    above it when its weighted conflicting claims per claim, ``1 - consistency``, is more than
    ``threshold`` (strictly, beyond float noise). No reports: nothing to review, False.
    """
    return bool(scores) and all(1.0 - s.consistency_score > threshold + EPSILON for s in scores)


__all__ = [
    "DEFAULT_CONFLICT_THRESHOLD",
    "EPSILON",
    "FACETS_PATH",
    "MAX_SEVERITY",
    "WEIGHTS",
    "ConflictLike",
    "ConflictSummary",
    "Facet",
    "FacetFile",
    "FacetSpec",
    "Patterns",
    "ReportScore",
    "TopicSpec",
    "conflict_rate",
    "consistency_score",
    "coverage_score",
    "covered_facets",
    "facets_for",
    "flag_for_review",
    "generic_facets",
    "load_facets",
    "origin_reliabilities",
    "overall_score",
    "parse_facets",
    "reliability_score",
    "score_report",
    "select_best",
    "topic_terms",
]
