"""Conflicts between sources, found by comparing normalised figures (49.7% vs 約6割), not strings.

The consensus engine (REQ-1.2.0-WFL-002) scores reports by the conflicts among the sources they cite;
:func:`detect_conflicts` finds them in claims from :mod:`nlp.claims` and returns :class:`Conflict`
records shaped like the spec's ``ConflictDetail`` (camelCase when dumped ``by_alias``).

Figures. Claims are grouped by ``(subject, attribute)``; claims without a subject, attribute or figure
are skipped, and a generic fallback key (``rate:回答率``) only meets the same wording. Each figure is a
:class:`~nlp.values.Value`. Figures are *related* (one family) when :func:`~nlp.values.comparable`
(kind, unit, change flag) and, for changes, their sentences name the same baseline period: 13.1 points
since 2022-09 and 2.7 points since 2024-09 are both true. A change is compared only as the movement of a
level stated in the same claim (52.4%, 令和6年9月調査の49.7%から2.7ポイント上昇) against a named
baseline; a gap between groups (全業種平均との差は10ポイント) or an undated "up 3 points" is not
compared. A figure is *negated* only when its claim is negative and a negation stands next to it
(5割に達していない, "did not reach 50%"); a decrease (9.5%に低下, "fell to 8.1%") does not deny it.

One thing. A key can be vaguer than what its figures measure ("The default is 50 tuples." keyed
``default/value``), so related figures must also be about the same thing (:func:`same_thing`): when both
sentences, with the context their page gives them (``SourcedClaim.context``: heading, defined term), name
identifiers (snake_case, camelCase, ``--options``), they share one; when both are bare numbers counting a
noun, it is the same noun (tuples vs transactions). Two parameters' values never conflict.

Origins. A syndicated copy is folded into its original (``SourcedClaim.origin``): a copy never conflicts
with its original, and agreeing copies count once. Two origins *agree* on a key, period and family when
any of their figures agree (:func:`~nlp.values.values_agree`, same negation), so a page that lists a total and
last year's value (21件, 13件) does not contradict one that gives only the total. They *conflict* when
no figure agrees but some are related.

Majority. In each period the origins form camps: in order of how many origins agree with them, then
source order (official > academic > news > community), then earliest publication, each origin joins the
first camp whose founder it agrees with. Every origin is reported once against each earlier camp it
conflicts with, represented by that camp's most reliable, earliest member: four sources with 49.7% and a
blog with 約6割 give one conflict, official page vs blog. ``statement1`` is always the reference side.

Types (thresholds in ``data/rules/conflict_policy.yaml``):

* same period (same granularity and interval: the 2024-09 round, FY2024; a month is not compared with a
  fiscal year, which is another statistic):
  ``contradiction`` for opposite polarity about agreeing figures, or a relative gap
  ``|a - b| / max(|a|, |b|)`` of at least ``contradiction_min_gap`` (and, for percentages and points, at
  least ``contradiction_min_points``): 49.7% vs 約6割 (0.17), 44.7% vs 31.2% (0.30);
  ``inconsistency`` for a smaller gap, or a likely transcription error whatever the gap: precise figures
  with the same precision and number of digits (at least ``transcription_min_digits``) that differ in one
  digit or by two swapped digits (36,210 vs 26,310).
* ``outdated``: a figure whose sentence presents it as the current state (``current_markers``: 最新,
  現状, にとどまる, latest, currently ...) when the key has a figure, from another origin, for a period of
  the same granularity that starts at least ``outdated_min_months`` later and does not agree with it; its
  page must give no later period for the key (then it is describing a series). Time series and
  "up from 39.3% in 2022" are never flagged, nor is a figure one survey round old (publication lag).
  It is compared with the newest period's majority.
* no period: the extractor leaves earlier readings (前回の11.2%から, "up from 44.7%") undated on purpose,
  so an undated figure is compared only with undated figures from pages published at most
  ``undated_window_days`` apart, and origins agree when any of their figures for the key (dated or not)
  agree; pages without a date are skipped. Standing facts (:func:`is_standing`: a default, a limit, a
  table cell read by :mod:`nlp.generic_claims`) are the exception: compared whatever the pages' dates.

Severity (1..5): ``1 + #{g in severity_gaps: gap >= g}`` (3 for a polarity contradiction), +1 when the
attribute is a ``headline_attributes`` entry about a population (not a sector or segment), -1 for
``minor_attributes`` (figures about the data, such as response counts); clamped to 1..5, then capped at
2 for an inconsistency and 3 for outdated (both figures are true for their own period).

Confidence (0..1): the product of 0.9 per side whose subject is not named in its sentence, 0.9 per side
whose period is not named in it (0.7 once when neither has a period), 0.85 per approximate or bounded
figure (約, 強, 以上, ranges), 0.8 for changes, 0.8 for a generic key, 0.8 for a polarity-only
contradiction, 0.85 per side whose subject and attribute were read from the dependency parse (a
parsed claim, :mod:`nlp.dependency_claims`); rounded to 2 decimals.

The suggested reading ranks sources by type only (reliability scoring comes later) and is data
(:class:`Reading`: which statement to prefer, its source type and date, how many others agree, what is wrong
with the other figure), so a report words it in its own language; ``resolution`` is the same in English.
``conflict_id`` is a hash of type, key, origins and figures, so reruns give the same ids.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from functools import cache, lru_cache
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from core import policy
from core.models import CamelModel
from core.policy import PolicyModel
from core.resources import data_path
from nlp.claims import Claim, load_vocabulary
from nlp.values import Value, fold, parse_values, values_agree

POLICY_PATH = data_path("rules", "conflict_policy.yaml")
ConflictType = Literal["contradiction", "inconsistency", "outdated"]
_Period = tuple[str, str, str]  # (granularity, date_from, date_to)
_NEGATION = {
    "ja": re.compile(r"ない|なかった|ず(?:[、。]|$)|ません"),
    "en": re.compile(r"\b(?:not|never|no)\b|n't\b", re.IGNORECASE),
}
PARSED_FACTOR = 0.85  # per side whose subject came from the dependency parse (nlp.dependency_claims)
_NEGATION_JA_CHARS = 8  # the predicate right after a Japanese figure: に達していない
_NEGATION_EN_CHARS = 40  # the words before an English figure, within its clause: "did not reach"


class ConflictPolicy(PolicyModel):
    """The contents of ``conflict_policy.yaml`` (its comments explain each entry)."""

    policy_name: ClassVar[str] = "conflict policy"

    contradiction_min_gap: float = Field(0.10, ge=0)
    contradiction_min_points: float = Field(1.0, ge=0)
    severity_gaps: tuple[float, ...] = (0.05, 0.15, 0.30, 0.50)
    transcription_min_digits: int = Field(3, ge=2)
    undated_window_days: int = Field(14, ge=0)
    outdated_min_months: int = Field(12, ge=0)
    headline_attributes: frozenset[str] = frozenset()
    minor_attributes: frozenset[str] = frozenset()
    current_markers: tuple[str, ...] = ()
    source_order: tuple[str, ...] = ("official", "academic", "news", "community")

    @field_validator("current_markers")
    @classmethod
    def _compiles(cls, markers: tuple[str, ...]) -> tuple[str, ...]:
        for marker in markers:
            try:
                re.compile(marker)
            except re.error as exc:
                raise ValueError(f"bad pattern {marker!r}: {exc}") from exc
        return markers

    @property
    def current(self) -> re.Pattern[str] | None:
        return (
            re.compile("|".join(f"(?:{m})" for m in self.current_markers), re.IGNORECASE)
            if self.current_markers
            else None
        )


@cache
def load_policy(path: Path = POLICY_PATH) -> ConflictPolicy:
    """The conflict policy, read once per process; ConfigError names the file and the bad entry."""
    return policy.load_policy(path, ConflictPolicy)


class SourcedClaim(BaseModel):
    """A claim and where it was read; ``origin`` is the original page of a syndicated copy (default: the URL)."""

    model_config = ConfigDict(frozen=True)

    claim: Claim
    source_url: str
    report_id: str | None = None
    published: date | None = None
    source_type: str | None = None
    origin: str = ""
    context: str = ""  # what its document makes the sentence about (heading, term): names the parameter

    @model_validator(mode="before")
    @classmethod
    def _default_origin(cls, data: Any) -> Any:
        if isinstance(data, dict) and not data.get("origin"):
            return {**data, "origin": data.get("source_url")}
        return data


def sourced(
    claims: Iterable[Claim],
    source_url: str,
    *,
    report_id: str | None = None,
    published: date | None = None,
    source_type: str | None = None,
    duplicate_of: str | None = None,
) -> list[SourcedClaim]:
    """The claims of one page with its provenance (``duplicate_of`` as in SourceReference)."""
    return [
        SourcedClaim(
            claim=c,
            source_url=source_url,
            report_id=report_id,
            published=published,
            source_type=source_type,
            origin=duplicate_of or source_url,
        )
        for c in claims
    ]


class Statement(CamelModel):
    """One side of a conflict: the sentence, its page and report, the figure as written and the claim key."""

    text: str
    source: str
    report_id: str | None = None
    value: str
    key: str  # subject/attribute@period, e.g. sme/pass_through_rate@2024-09


ReadingKind = Literal["prefer", "superseded", "check_wording"]
LoserNote = Literal["transcription", "approximate", "differs"]


class Reading(CamelModel):
    """Which side to believe and why, as data, so that a report can word it in its own language
    (``resolution`` is the same suggestion in English). ``preferred`` is the statement number (1 or 2)."""

    kind: ReadingKind
    preferred: Literal[1, 2]
    source_type: str | None = None  # of the preferred side
    published: date | None = None  # of the preferred side's origin
    agreeing: int = Field(0, ge=0)  # other independent sources agreeing with the preferred figure
    note: LoserNote | None = None  # what is wrong with the other figure (prefer only)


class Conflict(CamelModel):
    """The spec's ConflictDetail; ``statement1`` is the reference side (majority or newer figure)."""

    conflict_id: str
    type: ConflictType
    statement1: Statement
    statement2: Statement
    severity: int = Field(ge=1, le=5)
    confidence: float = Field(ge=0, le=1)
    resolution: str | None = None
    reading: Reading | None = None  # the resolution as data
    subject: str
    attribute: str
    when: str | None  # period of statement2's figure (the stale one for outdated)

    @property
    def preferred(self) -> Statement:
        """The statement to believe: the reading's choice (statement1, the reference, without one)."""
        return self.statement2 if self.reading is not None and self.reading.preferred == 2 else self.statement1


# --- figures ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Figure:
    item: SourcedClaim
    value: Value
    period: _Period | None
    negated: bool
    baseline: frozenset[str]  # periods named beside a change (its baseline); empty for levels
    subject_named: bool
    when_named: bool
    current: bool  # presented as the current state
    names: frozenset[str] = frozenset()  # identifiers its sentence and context name (parameters, options)
    measure: str | None = None  # the noun a bare number counts ("50 tuples"), singular, lower case

    @property
    def approximate(self) -> bool:
        v = self.value
        return v.approx or v.lower is not None or v.upper is not None

    @property
    def family(self) -> tuple[Any, ...]:
        """Figures of one family are related: levels of one kind and unit, or changes since one baseline."""
        v = self.value
        return (v.kind, None if v.kind == "count" else v.unit, v.change, self.baseline)

    @property
    def order(self) -> tuple[Any, ...]:
        """Which figure of an origin to show: the original page, a level, precise, prose, explicit, first."""
        return (
            self.item.source_url != self.item.origin,
            self.value.change,
            self.approximate,
            self.item.claim.text.startswith("|"),  # a table row reads badly as a statement
            -(self.subject_named + self.when_named),
            self.item.source_url,
            self.item.report_id or "",
            self.value.start,
        )


@lru_cache(maxsize=4096)
def _dates(text: str) -> tuple[Value, ...]:
    return tuple(v for v in parse_values(text) if v.kind == "date" and v.date_from)


def claim_period(when: Value | None) -> _Period | None:
    if when is None or not when.date_from or not when.date_to or when.date_from.startswith("--"):
        return None
    return (when.granularity or "day", when.date_from, when.date_to)


def _label(period: _Period | None) -> str:
    if period is None:
        return "undated"
    granularity, start, end = period
    if granularity == "month":
        return start[:7]
    if granularity == "year":
        return start[:4]
    if granularity == "fiscal_year":
        return f"FY{start[:4]}"
    return start if granularity == "day" else f"{start[:7]}..{end[:7]}"


def claim_key(claim: Claim) -> str | None:
    """``subject/attribute@period`` as conflicts label their statements; None for a claim that cannot conflict."""
    if not (claim.subject and claim.attribute):
        return None
    return f"{claim.subject}/{claim.attribute}@{_label(claim_period(claim.when))}"


def _months(start: str, later: str) -> int:
    return (int(later[:4]) - int(start[:4])) * 12 + int(later[5:7]) - int(start[5:7])


def _names_period(text: str, period: _Period) -> bool:
    """A date in the sentence that falls in the period (a year-less 9月 matches by month)."""
    for d in _dates(text):
        assert d.date_from is not None
        if d.date_from.startswith("--"):
            if d.date_from[2:4] == period[1][5:7]:
                return True
        elif d.date_to and d.date_from <= period[2] and period[1] <= d.date_to:
            return True
    return False


@cache
def _subject_patterns() -> tuple[dict[str, list[re.Pattern[str]]], dict[str, str]]:
    """Subject key -> patterns ("overall" words count for every subject), and subject key -> type."""
    patterns: dict[str, list[re.Pattern[str]]] = defaultdict(list)
    types: dict[str, str] = {}
    for key, kind, pattern in load_vocabulary().subjects:
        patterns["*" if kind == "overall" else key].append(pattern)
        types[key] = kind
    return dict(patterns), types


def _names_subject(text: str, subject: str) -> bool:
    if subject.startswith("segment:"):
        return True  # a segment is the phrase in the sentence
    patterns, _ = _subject_patterns()
    folded = fold(text)
    return any(p.search(folded) for p in patterns.get(subject, []) + patterns.get("*", []))


def _negated(claim: Claim, v: Value) -> bool:
    """A negation right after a Japanese figure or before an English one, in its clause."""
    if claim.polarity != "negative":
        return False
    text = fold(claim.text)
    start = v.start - claim.start
    if text[start : start + len(v.raw)] != fold(v.raw):  # offsets from another text: find the figure
        start = text.find(fold(v.raw))
        if start < 0:
            return False
    if claim.lang == "en":
        window = re.split(r"[,;:]", text[:start])[-1][-_NEGATION_EN_CHARS:]
        return bool(_NEGATION["en"].search(window))
    window = re.split(r"[、。,]", text[start + len(v.raw) :])[0][:_NEGATION_JA_CHARS]
    return bool(_NEGATION["ja"].search(window))


# Names of a thing in a manual: snake_case or SCREAMING_CASE, camelCase or PascalCase with an inner capital
# (MaxRequestWorkers, PostgreSQL), long options (--max-procs). Plain words and numbers are not names.
_IDENTIFIER = re.compile(
    r"(?<![\w-])(?:--[a-z][a-z0-9]*(?:-[a-z0-9]+)*|[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+"
    r"|[a-z]+(?:[A-Z][a-z0-9]*)+|[A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+)(?![\w-])"
)
_MEASURE_EN = re.compile(r"\s*([A-Za-z][a-z-]{2,})\b")
_MEASURE_JA = re.compile(r"([\u30a1-\u30fa\u30fc]{2,})")  # a katakana noun right after the figure: 50タプル
_NOT_A_MEASURE_WORDS = (
    "of the and or to in at on for from by with than per is are was were be been as that which this it its if "
    "when but not no nor so out up down more less fewer higher lower over under about after before times"
)
_NOT_A_MEASURE = frozenset(_NOT_A_MEASURE_WORDS.split())


def identifiers(text: str) -> list[str]:
    """The identifiers ``text`` names, as written, in order, each once (``autovacuum_naptime``, ``--jobs``)."""
    return list(dict.fromkeys(m.group(0) for m in _IDENTIFIER.finditer(text)))


@lru_cache(maxsize=4096)
def named_things(text: str) -> frozenset[str]:
    """The identifiers ``text`` names, lower case: what tells one parameter's sentence from another's."""
    return frozenset(name.lower() for name in identifiers(text))


def _measure(claim: Claim, v: Value) -> str | None:
    """The noun a bare number counts ("50 tuples", "150 million transactions", 50タプル), singular; None
    when the figure carries its own unit or kind (a percentage, 21件, 2 ms) or no noun follows."""
    if v.kind != "number" or v.unit:
        return None
    start = v.start - claim.start
    if claim.text[start : start + len(v.raw)] != v.raw:
        start = claim.text.find(v.raw)
        if start < 0:
            return None
    rest = claim.text[start + len(v.raw) :]
    found = _MEASURE_EN.match(rest) or _MEASURE_JA.match(rest)
    if found is None:
        return None
    word = found.group(1).lower()
    if word in _NOT_A_MEASURE:
        return None
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def claim_figures(item: SourcedClaim, current: re.Pattern[str] | None) -> list[Figure]:
    c = item.claim
    if not (c.subject and c.attribute and c.values):
        return []
    period = claim_period(c.when)
    own = {_label(period)}
    named = {_label(claim_period(d)) for d in _dates(c.text) if claim_period(d)}
    has_level = any(not v.change for v in c.values)
    subject_named = _names_subject(c.text, c.subject)
    when_named = period is not None and _names_period(c.text, period)
    is_current = bool(current and current.search(fold(c.text)))
    names = named_things(f"{c.text}\n{item.context}")
    figures = []
    for v in c.values:
        if v.value is None:
            continue
        baseline = frozenset(named - own) if v.change else frozenset()
        if v.change and not (has_level and baseline):
            continue  # not a dated movement of a level (a gap between groups, "up 3 points"): not comparable
        figures.append(
            Figure(
                item=item,
                value=v,
                period=period,
                negated=_negated(c, v),
                baseline=baseline,
                subject_named=subject_named,
                when_named=when_named,
                current=is_current,
                names=names,
                measure=_measure(c, v),
            )
        )
    return figures


def same_thing(a: Figure, b: Figure) -> bool:
    """Whether two figures can be about one quantity: when both sentences (with their context) name
    identifiers, they share one, and when both numbers count a noun, it is the same noun. "The default
    is 50 tuples" under ``autovacuum_vacuum_threshold`` and "The default is 150 million transactions"
    under ``vacuum_freeze_table_age`` measure two parameters, whatever key the extractor gave them."""
    if a.names and b.names and not a.names & b.names:
        return False
    return not (a.measure and b.measure and a.measure != b.measure)


def figures_related(a: Figure, b: Figure) -> bool:
    """Same family (comparable(), the same baseline for changes) and the same thing (:func:`same_thing`)."""
    return a.family == b.family and same_thing(a, b)


def figures_agree(a: Figure, b: Figure) -> bool:
    return figures_related(a, b) and a.negated == b.negated and values_agree(a.value, b.value)


# --- origins and camps ------------------------------------------------------------------------


@dataclass
class _Origin:
    name: str
    figures: list[Figure]  # figures in the period being compared
    known: list[Figure]  # figures it agrees by (for undated figures: all its figures for the key)
    rank: int
    published: date | None

    def agrees(self, other: _Origin) -> bool:
        return any(figures_agree(a, b) for a in self.known for b in other.known)

    def conflicts(self, other: _Origin) -> bool:
        return not self.agrees(other) and any(figures_related(a, b) for a in self.figures for b in other.figures)

    @property
    def reliability(self) -> tuple[int, date, str]:
        return (self.rank, self.published or date.max, self.name)


def _origins(figures: list[Figure], known: list[Figure], policy: ConflictPolicy) -> list[_Origin]:
    by_origin: dict[str, list[Figure]] = defaultdict(list)
    for f in figures:
        by_origin[f.item.origin].append(f)
    all_known: dict[str, list[Figure]] = defaultdict(list)
    for f in known:
        all_known[f.item.origin].append(f)
    origins = []
    for name, figs in sorted(by_origin.items()):
        figs.sort(key=lambda f: f.order)
        main = figs[0].item  # the original page when present
        rank = policy.source_order.index(main.source_type) if main.source_type in policy.source_order else 99
        dates = [f.item.published for f in figs if f.item.published]
        origins.append(_Origin(name, figs, all_known[name], rank, main.published or min(dates, default=None)))
    return origins


def _camps(origins: list[_Origin]) -> list[list[_Origin]]:
    """Origins grouped by agreement, most supported first (see the module docstring)."""
    support = {o.name: sum(o.agrees(p) for p in origins if p is not o) for o in origins}
    camps: list[list[_Origin]] = []
    for o in sorted(origins, key=lambda o: (-support[o.name], o.reliability)):
        camp = next((c for c in camps if c[0].agrees(o)), None)
        if camp is None:
            camps.append([o])
        else:
            camp.append(o)
    return camps


# --- conflicts --------------------------------------------------------------------------------


def detect_conflicts(claims: Sequence[SourcedClaim], policy: ConflictPolicy | None = None) -> list[Conflict]:
    """Conflicts among claims of different origins, most severe first (rules in the module docstring)."""
    policy = policy or load_policy()
    current = policy.current
    by_key: dict[tuple[str, str], list[Figure]] = defaultdict(list)
    for item in claims:
        for f in claim_figures(item, current):
            assert item.claim.subject and item.claim.attribute
            by_key[(item.claim.subject, item.claim.attribute)].append(f)
    found: dict[str, Conflict] = {}
    for key, figures in sorted(by_key.items()):
        for conflict in [*_same_period(key, figures, policy), *_outdated(key, figures, policy)]:
            found.setdefault(conflict.conflict_id, conflict)
    return sorted(found.values(), key=lambda c: (-c.severity, c.subject, c.attribute, c.when or "", c.conflict_id))


@cache
def _vocabulary_attributes() -> frozenset[str]:
    return frozenset(a.key for a in load_vocabulary().attributes)


def is_standing(attribute: str) -> bool:
    """Whether an attribute is a standing fact read from a sentence's shape (a default, a limit, a
    record's cell: :mod:`nlp.generic_claims`), not a statistic of the topic vocabulary. Undated standing
    facts are compared whatever their pages' dates: a manual states them without a period, and they
    are not earlier readings quoted for comparison."""
    return ":" not in attribute and attribute not in _vocabulary_attributes()


def _near(a: _Origin, b: _Origin, window: int | None) -> bool:
    """Whether two origins may be compared: always for dated figures, else when published close together."""
    if window is None:
        return True
    return bool(a.published and b.published and abs((a.published - b.published).days) <= window)


def _same_period(key: tuple[str, str], figures: list[Figure], policy: ConflictPolicy) -> list[Conflict]:
    buckets: dict[tuple[Any, ...], list[Figure]] = defaultdict(list)
    for f in figures:
        buckets[(f.period or ("", "", ""), f.family)].append(f)
    out = []
    for (period, family), figs in sorted(buckets.items(), key=lambda kv: repr(kv[0])):
        dated = period != ("", "", "")
        known = figs if dated else [f for f in figures if f.family == family]
        window = None if dated or is_standing(key[1]) else policy.undated_window_days
        camps = _camps(_origins(figs, known, policy))
        for k, camp in enumerate(camps):
            for o in camp if k else []:
                for earlier in camps[:k]:
                    ref = next(
                        (
                            m
                            for m in sorted(earlier, key=lambda m: m.reliability)
                            if _near(m, o, window) and m.conflicts(o)
                        ),
                        None,
                    )
                    if ref is not None:
                        out.append(_make(key, ref, o, policy, support=len(earlier)))
    return out


def _outdated(key: tuple[str, str], figures: list[Figure], policy: ConflictPolicy) -> list[Conflict]:
    latest: dict[str, str] = {}
    for f in figures:
        if f.period:
            latest[f.item.origin] = max(latest.get(f.item.origin, ""), f.period[1])
    families: dict[tuple[Any, ...], list[Figure]] = defaultdict(list)
    for f in figures:
        if f.period and not f.value.change:
            families[f.family].append(f)
    out = []
    for _, levels in sorted(families.items(), key=lambda kv: repr(kv[0])):
        out += _stale(key, levels, latest, policy)
    return out


def _stale(
    key: tuple[str, str], levels: list[Figure], latest: dict[str, str], policy: ConflictPolicy
) -> list[Conflict]:
    """Outdated conflicts among level figures of one family (rule in the module docstring)."""
    out = []
    for name in sorted({f.item.origin for f in levels if f.current and not f.negated}):
        stale = [f for f in levels if f.item.origin == name and f.current and not f.negated]
        stale = [f for f in stale if f.period and f.period[1] == latest[name]]  # a series is not stale
        if not stale:
            continue
        period = stale[0].period
        assert period
        newer = [
            f
            for f in levels
            if f.item.origin != name
            and f.period
            and f.period[0] == period[0]
            and f.period[1] > period[2]
            and _months(period[1], f.period[1]) >= policy.outdated_min_months
        ]
        if not newer:
            continue
        newest = max(f.period[1] for f in newer if f.period)
        figs = [f for f in newer if f.period and f.period[1] == newest]
        camps = _camps(_origins(figs, figs, policy))
        old = _origins(stale, stale, policy)[0]
        ref = min(camps[0], key=lambda m: m.reliability)
        if ref.conflicts(old):
            out.append(_make(key, ref, old, policy, support=len(camps[0]), kind="outdated"))
    return out


def _transcription(a: Value, b: Value, min_digits: int) -> bool:
    """One digit wrong or two digits swapped, between precise figures written alike (36,210 / 26,310)."""
    if any(v.approx or v.lower is not None or v.upper is not None for v in (a, b)) or a.precision != b.precision:
        return False
    da, db = (re.sub(r"[^0-9]", "", fold(v.raw)) for v in (a, b))
    if len(da) != len(db) or len(da) < min_digits:
        return False
    diff = [i for i in range(len(da)) if da[i] != db[i]]
    return len(diff) == 1 or (len(diff) == 2 and da[diff[0]] == db[diff[1]] and da[diff[1]] == db[diff[0]])


def _gap(a: Value, b: Value) -> float:
    assert a.value is not None and b.value is not None
    scale = max(abs(a.value), abs(b.value))
    return abs(a.value - b.value) / scale if scale else 0.0


def _make(
    key: tuple[str, str],
    ref: _Origin,
    other: _Origin,
    policy: ConflictPolicy,
    *,
    support: int,
    kind: ConflictType | None = None,
) -> Conflict:
    """One conflict between the reference origin and another, on their best related pair of figures."""
    pairs = [(a, b) for a in ref.figures for b in other.figures if figures_related(a, b)]
    polar = [(a, b) for a, b in pairs if values_agree(a.value, b.value)]
    a, b = min(polar or pairs, key=lambda p: (p[0].order, p[1].order))
    gap = _gap(a.value, b.value)
    typo = not polar and _transcription(a.value, b.value, policy.transcription_min_digits)
    if kind is None:
        points = abs((a.value.value or 0.0) - (b.value.value or 0.0))
        big = gap >= policy.contradiction_min_gap and (
            a.value.kind not in ("percent", "points") or points >= policy.contradiction_min_points
        )
        kind = "contradiction" if polar or (big and not typo) else "inconsistency"
    subject, attribute = key
    severity = _severity(kind, subject, attribute, gap, bool(polar), policy)
    confidence = _confidence(a, b, attribute, bool(polar))
    reading = _reading(kind, a, b, ref, other, support, bool(polar), typo)
    ident = "|".join(
        [kind, subject, attribute, ref.name, _label(a.period), a.value.raw, other.name, _label(b.period), b.value.raw]
    )
    return Conflict(
        conflict_id="conflict-" + hashlib.sha256(ident.encode()).hexdigest()[:16],
        type=kind,
        statement1=_statement(a, key),
        statement2=_statement(b, key),
        severity=severity,
        confidence=confidence,
        resolution=_resolution(reading, a, b),
        reading=reading,
        subject=subject,
        attribute=attribute,
        when=None if b.period is None else _label(b.period),
    )


def _statement(f: Figure, key: tuple[str, str]) -> Statement:
    return Statement(
        text=f.item.claim.text,
        source=f.item.source_url,
        report_id=f.item.report_id,
        value=f.value.raw,
        key=f"{key[0]}/{key[1]}@{_label(f.period)}",
    )


def _severity(kind: ConflictType, subject: str, attribute: str, gap: float, polar: bool, p: ConflictPolicy) -> int:
    base = 3 if polar else 1 + sum(gap >= g for g in p.severity_gaps)
    headline = attribute in p.headline_attributes and _subject_patterns()[1].get(subject) == "population"
    weight = 1 if headline else -1 if attribute in p.minor_attributes else 0
    cap = {"contradiction": 5, "inconsistency": 2, "outdated": 3}[kind]
    return min(cap, max(1, base + weight))


def _confidence(a: Figure, b: Figure, attribute: str, polar: bool) -> float:
    score = 1.0
    for f in (a, b):
        score *= (1.0 if f.subject_named else 0.9) * (0.85 if f.approximate else 1.0)
        if f.period is not None:
            score *= 1.0 if f.when_named else 0.9
    if a.period is None and b.period is None:
        score *= 0.7
    if a.value.change:
        score *= 0.8
    if ":" in attribute:
        score *= 0.8
    if polar:
        score *= 0.8
    for f in (a, b):
        if f.item.claim.parsed:
            score *= PARSED_FACTOR
    return round(score, 2)


def _reading(
    kind: ConflictType, a: Figure, b: Figure, ref: _Origin, other: _Origin, support: int, polar: bool, typo: bool
) -> Reading:
    """Which side to believe: the newer figure over an outdated one; else the side whose origin ranks
    first by source type (the reference on a tie), with what is wrong with the other figure."""
    if kind == "outdated":
        return Reading(kind="superseded", preferred=1, source_type=a.item.source_type, published=ref.published)
    second = other.rank < ref.rank
    win, win_origin, lose = (b, other, a) if second else (a, ref, b)
    agreeing = support - 1 if win is a and support > 1 else 0
    if polar:
        note: LoserNote | None = None
        reading_kind: ReadingKind = "check_wording"
    else:
        reading_kind = "prefer"
        note = "transcription" if typo else "approximate" if lose.approximate and not win.approximate else "differs"
    return Reading(
        kind=reading_kind,
        preferred=2 if second else 1,
        source_type=win.item.source_type,
        published=win_origin.published,
        agreeing=agreeing,
        note=note,
    )


def _source(kind: str | None, published: date | None) -> str:
    kind = kind or "unclassified"
    return f"the {kind} source dated {published}" if published else f"the {kind} source"


def _resolution(reading: Reading, a: Figure, b: Figure) -> str:
    """The reading in English (the spec's ``resolution`` field; reports word :class:`Reading` themselves)."""
    win, lose = (b, a) if reading.preferred == 2 else (a, b)
    source = _source(reading.source_type, reading.published)
    if reading.kind == "superseded":
        newer = f"{a.value.raw} ({_label(a.period)}, {source})"
        return f"the {b.value.raw} figure refers to {_label(b.period)}; superseded by {newer}"
    if reading.kind == "check_wording":
        return f"one source denies {a.value.raw}; prefer {source} and check the wording"
    text = f"prefer {source} ({win.value.raw}"
    if reading.agreeing:
        text += f"; {reading.agreeing} other independent source{'s agree' if reading.agreeing > 1 else ' agrees'}"
    text += ")"
    if reading.note == "transcription":
        return text + f"; {lose.value.raw} looks like a transcription error"
    if reading.note == "approximate":
        return text + f"; the {lose.item.source_type or 'other'} figure ({lose.value.raw}) is approximate"
    return text + f"; the {lose.item.source_type or 'other'} source gives {lose.value.raw}"


__all__ = [
    "PARSED_FACTOR",
    "POLICY_PATH",
    "Conflict",
    "ConflictPolicy",
    "ConflictType",
    "Figure",
    "LoserNote",
    "Reading",
    "ReadingKind",
    "SourcedClaim",
    "Statement",
    "claim_figures",
    "claim_key",
    "claim_period",
    "detect_conflicts",
    "figures_agree",
    "figures_related",
    "identifiers",
    "is_standing",
    "load_policy",
    "named_things",
    "same_thing",
    "sourced",
]
