"""Claim candidates: sentences with figures, each figure tied to what it measures, whom, and when.

A later conflict detector groups claims by ``(subject, attribute, when)`` and compares their values
with :func:`nlp.values.values_agree`: 49.7% and 約6割 for ``(sme, pass_through_rate, 2024-09)``
disagree, 49.7% and 約5割 agree. Extraction is rule-based and explainable; the vocabulary lives in
``data/rules/claim_attributes.yaml`` (its header explains the format).

Use from an NLP worker (the pre-filter runs before GiNZA, which is the expensive part)::

    spans = candidate_spans(text)
    found = extract_entities_batch([text[s:e] for s, e in spans], lang=lang)
    entities = [e.model_copy(update={"start": e.start + s, "end": e.end + s})
                for (s, _), ents in zip(spans, found) for e in ents]
    claims = extract_claims(text, entities, lang, reference_date=published)

How one figure is read, within its sentence (the "local window" is the text since the previous figure):

* attribute: a vocabulary phrase inside or right after the figure (36,210社から有効回答, "9.5% of firms
  ... could not pass on any"), else the nearest phrase before it in the local window (価格転嫁率は49.7%),
  else the previous figure's when the two are in apposition (39.8%と約4割), else the nearest phrase
  earlier in the sentence when no figure of the same kind stands between them, else, when a sector or
  cost component is named next to the figure (トラック運送が34.2%, 労務費が44.7%), the last qualifiable
  attribute of the page, else a generic "<class>:<phrase>" fallback. A cost component next to a
  qualifiable attribute refines it: labour_cost_pass_through_rate.
* subject: a sector/population next to the figure ("34.2% in road freight"), a segment of firms
  (従業員20人以下の企業で14.8%, 一次取引先の価格転嫁率), one named earlier in the sentence (same proviso),
  else the page's most frequent population (else the sector of a single-sector page); 全体/all-industry
  mean that population.
* when: the reference period of the figure: a date in the local window or earlier in the sentence that
  names a period (令和6年9月調査, "the September 2024 round", 2024年度の, a table's date cell), in English
  also a date right after it ("in the September 2024 survey round"); else, in a sentence about 同調査 or
  "that round", the last period named before it; else the page's first period. Earlier
  readings (前回の11.2%から, "up from 44.7%", 令和4年9月調査時点の39.3%と比べ) only take a date
  attached to them and otherwise get no ``when``, so they are never compared with current figures.
  Changes (3.6ポイント上昇) share the ``when`` of the level they qualify. Dates without a year take
  it from the sentence, else from ``reference_date`` (the latest such month not after it).
* polarity: ``negative`` when the figure is asserted under a negation or as a decrease (the predicate
  after it in Japanese: 〜に達していない, 減った; the words between the attribute and the figure and
  after it in English: "fell to", "not"); ``positive`` otherwise. Negations inside the attribute
  phrase (全く転嫁できなかった企業の割合, "could not pass on any") belong to the attribute and do not
  count, so 9.5% of firms that could not pass on costs is a positive claim about that share.

One claim is made per sentence and ``(subject, attribute, when, polarity)``; a sentence with dates
or entities but no figure gives one claim without values.
"""

from __future__ import annotations

import bisect
import datetime as dt
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

from core.errors import InputError
from core.policy import PolicyModel, load_policy, validate_policy
from core.resources import data_path
from core.text.noise import is_listing_line
from nlp.findings import Sentence, split_sentences
from nlp.generic_claims import generic_readings
from nlp.values import Kind, Value, fold, parse_values, resolve_year

if TYPE_CHECKING:
    from nlp.entities import Entity

VOCABULARY_PATH = data_path("rules", "claim_attributes.yaml")
LANGS = ("ja", "en", "other")
MIN_CHARS = 4
Polarity = Literal["positive", "negative"]
SubjectType = Literal["population", "sector", "overall"]

# Pre-filter: digits, kanji numerals with a unit, era names and English month names.
_FIGURE_OR_DATE = re.compile(
    r"[0-9０-９]|[〇一二三四五六七八九十百千万億兆]+(?:割|%|％|円|ドル|人|社|件|年|月|倍|ポイント|分の)|元年|令和|平成|昭和"
    r"|\b(?:January|February|March|April|June|July|August|September|October|November|December)\b"
)
# With names=True, also likely names: capitalised words inside a sentence, acronyms, long katakana
# words and kanji words ending in an organisation or place suffix.
_NAME = re.compile(
    r"(?<=[a-z,;:)] )[A-Z][A-Za-z]+|\b[A-Z]{2,}\b|[ァ-ヶー]{4,}"
    r"|[一-龥]{1,8}(?:省|庁|県|府|都|市|区|町|村|銀行|大学|協会|機構|センター|委員会|政府|局|会社|研究所)"
)
_CLAUSE_END = {
    "ja": re.compile(r"[、。，,;；！？!?\n]"),
    "en": re.compile(r"[,;:!?\n]|\.(?:\s|$)|\s(?:while|and|but|whereas|against|compared)\s"),
}
_ATTACHED_EN = re.compile(r"^\s*(?:of|in|for|among|at)\b", re.IGNORECASE)
_APPOSITION = re.compile(r"\s*(?:と|、|\(|（|,|, or|, about)?\s*")
_PREVIOUS_JA_AFTER = re.compile(r"^(?:から|より|と比べ|と比較|に比べ)")
_RANGE_JA = re.compile(r"^から[^。]*?まで")
_PREVIOUS_JA_BEFORE = re.compile(r"前回|前年|前期|前月|昨年|前年度")
_PREVIOUS_EN = re.compile(r"\b(?:from|than|compared (?:with|to)|versus|vs\.?)(?: the| a)?\s*$", re.IGNORECASE)
_RANGE_EN_AFTER = re.compile(r"^[^,;.]*?\bto\b", re.IGNORECASE)
_TABLE_CELL_END = re.compile(r"\s*\|")  # | 令和6年9月 | 49.7% |: a date cell names the row's period
_ADNOMINAL_JA = re.compile(r"^(?:の|における|時点|末)")
_PERIOD_PREP_EN = re.compile(r"\b(?:in|for|during|as of)(?: the)?\s*$", re.IGNORECASE)
_NEGATIVE = {
    "ja": re.compile(r"ない|なかった|ず(?:に|、|$)|ません|できず|減少|低下|下落|減っ|減り|縮小|下回"),
    "en": re.compile(
        r"\b(?:not|no|never|unable|without|failed|fell|declined|dropped|decreased|down|lower|less|below|cut)\b",
        re.IGNORECASE,
    ),
}
# A group of firms named right before a figure or its attribute: 従業員20人以下の企業で14.8%,
# 一次取引先の価格転嫁率が55.3%. It becomes the subject "segment:<phrase>".
_SEGMENT_JA = re.compile(r"([^、。，,\s]{2,40}?(?:企業|事業者|会社|取引先))(?P<link>で|では|のうち|の)$")
_FINISHED = re.compile(r"[.!?。！？][\"'”’)）」』\]]*$")
_RECORD_LINE = re.compile(r"^(?!\d{1,3}(?:\.\d{1,3})*\.?\s)[^:;\n]{1,80}: \S")  # not a numbered heading
_NUMBERED = re.compile(r"^\d{1,3}(?:\.\d{1,3})+\.?\s")  # a numbered heading: "5.14.4.1. What are ..."
_PROMPT = re.compile(r"^(?:\$|#|>>>|%|C:\\)\s")
_EN_STOPWORDS = frozenset({"the", "a", "an", "its", "their", "this", "that", "of", "with"})


class Claim(BaseModel):
    """Figures of one sentence that share subject, attribute, period and polarity (see module docstring)."""

    model_config = ConfigDict(frozen=True)

    text: str
    start: int
    end: int
    subject: str | None
    attribute: str | None
    values: list[Value]
    when: Value | None
    polarity: Polarity
    entities: list[str]
    lang: str
    parsed: bool = False  # subject and attribute read from the parse (nlp.dependency_claims): less sure


# --- vocabulary -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Attribute:
    key: str
    kinds: frozenset[str]
    qualified: bool
    before: tuple[re.Pattern[str], ...]
    after: tuple[re.Pattern[str], ...]


@dataclass(frozen=True)
class Vocabulary:
    """The compiled contents of ``claim_attributes.yaml``."""

    attributes: tuple[_Attribute, ...]
    qualifiers: tuple[tuple[str, re.Pattern[str]], ...]
    subjects: tuple[tuple[str, SubjectType, re.Pattern[str]], ...]
    markers: re.Pattern[str]
    markers_before: re.Pattern[str]
    not_period: re.Pattern[str]
    anaphora: re.Pattern[str]
    generic: tuple[tuple[str, frozenset[str], re.Pattern[str]], ...]


_GENERIC_KINDS = {
    "rate": frozenset({"percent", "points"}),
    "share": frozenset({"percent", "points"}),
    "amount": frozenset({"money"}),
    "count": frozenset({"count", "number"}),
}


def _regex(pattern: str) -> re.Pattern[str]:
    body = f"(?:{pattern})"
    if pattern.isascii():  # English: whole words only
        body = f"(?<![A-Za-z0-9]){body}(?![A-Za-z0-9])"
    return re.compile(body, re.IGNORECASE)


def _checked(patterns: tuple[str, ...]) -> tuple[str, ...]:
    for p in patterns:
        try:
            _regex(p)
        except re.error as exc:
            raise ValueError(f"bad pattern {p!r}: {exc}") from exc
    return patterns


# regular expressions as written in the file, checked to compile as :func:`_regex` compiles them
Patterns = Annotated[tuple[Annotated[str, StringConstraints(min_length=1)], ...], AfterValidator(_checked)]
Words = tuple[Annotated[str, StringConstraints(min_length=1)], ...]


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AttributeSpec(_Entry):
    """One ``attributes:`` entry (the file's header explains each key)."""

    kinds: tuple[Kind, ...] = Field(min_length=1)
    qualified: bool = False
    before: Patterns = ()
    after: Patterns = ()


class SubjectSpec(_Entry):
    type: SubjectType
    patterns: Patterns = ()


class ReferencePeriodSpec(_Entry):
    markers: Words = ("調査",)
    not_period: Words = ("から",)
    anaphora: Words = ("同調査",)


class VocabularyFile(PolicyModel):
    """The shape of ``claim_attributes.yaml``."""

    policy_name: ClassVar[str] = "claim vocabulary"

    attributes: dict[str, AttributeSpec]
    qualifiers: dict[str, Patterns] = Field(default_factory=dict)
    subjects: dict[str, SubjectSpec] = Field(default_factory=dict)
    reference_period: ReferencePeriodSpec = ReferencePeriodSpec()
    generic: dict[Literal["rate", "share", "amount", "count"], Words] = Field(default_factory=dict)


def _alternation(words: Sequence[str]) -> str:
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))


def _compile(spec: VocabularyFile) -> Vocabulary:
    attributes = tuple(
        _Attribute(
            key=key,
            kinds=frozenset(a.kinds),
            qualified=a.qualified,
            before=tuple(_regex(p) for p in a.before),
            after=tuple(_regex(p) for p in a.after),
        )
        for key, a in spec.attributes.items()
    )
    qualifiers = tuple((key, _regex(p)) for key, words in spec.qualifiers.items() for p in words)
    subjects = tuple((key, s.type, _regex(p)) for key, s in spec.subjects.items() for p in s.patterns)
    generic = []
    for cls, heads in spec.generic.items():
        ja = _alternation([h for h in heads if not h.isascii()])
        en = _alternation([h for h in heads if h.isascii()])
        alts = [f"[一-龥ァ-ヶー]{{1,10}}(?:{ja})"] if ja else []
        alts += [rf"\b(?:[a-z][a-z\-]*\s){{1,2}}(?:{en})\b"] if en else []
        generic.append((cls, _GENERIC_KINDS[cls], re.compile("|".join(alts), re.IGNORECASE)))
    period = spec.reference_period
    markers = _alternation(period.markers or ("調査",))
    return Vocabulary(
        attributes=attributes,
        qualifiers=qualifiers,
        subjects=subjects,
        markers=re.compile(markers, re.IGNORECASE),
        markers_before=re.compile(rf"(?:{markers})\s*[（(]\s*$", re.IGNORECASE),
        not_period=re.compile(rf"^\s*(?:{_alternation(period.not_period or ('から',))})"),
        anaphora=re.compile(_alternation(period.anaphora or ("同調査",)), re.IGNORECASE),
        generic=tuple(generic),
    )


def parse_vocabulary(raw: Any, file: str = VOCABULARY_PATH.name) -> Vocabulary:
    """Validate and compile already-parsed vocabulary data; a ConfigError names the offending entry."""
    return _compile(validate_policy(raw, VocabularyFile, file))


@cache
def load_vocabulary(path: Path = VOCABULARY_PATH) -> Vocabulary:
    """The claim vocabulary, read once per process."""
    return _compile(load_policy(path, VocabularyFile))


# --- pre-filter -------------------------------------------------------------------------------


def is_claim_candidate(sentence: str, *, names: bool = False) -> bool:
    """Whether a sentence may hold a claim: it has a figure or a date (with ``names``, a likely name).

    Only regexes, so it runs before GiNZA; it over-approximates :func:`nlp.values.parse_values`.
    """
    if len(sentence.strip()) < MIN_CHARS:
        return False
    return bool(_FIGURE_OR_DATE.search(sentence)) or (names and bool(_NAME.search(sentence)))


def candidate_spans(text: str, *, names: bool = False) -> list[tuple[int, int]]:
    """``(start, end)`` runs of consecutive candidate sentences: the only text worth sending to GiNZA."""
    spans: list[tuple[int, int]] = []
    previous_kept = False
    for sentence in split_sentences(text):
        if not is_claim_candidate(sentence.text, names=names):
            previous_kept = False
            continue
        if previous_kept and spans:
            spans[-1] = (spans[-1][0], sentence.end)
        else:
            spans.append((sentence.start, sentence.end))
        previous_kept = True
    return spans


# --- extraction -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Mention:
    role: Literal["before", "after", "qualifier", "subject", "generic"]
    key: str
    start: int
    end: int
    kinds: frozenset[str] = frozenset()
    qualified: bool = False
    subject_type: SubjectType | None = None

    @property
    def is_attribute(self) -> bool:
        return self.role in ("before", "after")


@dataclass
class _Reading:
    """How one figure was read."""

    value: Value
    attribute: str | None = None
    subject: str | None = None
    when: Value | None = None
    polarity: Polarity = "positive"
    previous: bool = False  # an earlier reading quoted for comparison (前回の11.2%から, "up from 44.7%")
    attribute_span: tuple[int, int] | None = None
    source: _Reading | None = None  # the reading this one took its attribute from


@dataclass(frozen=True)
class _Slot:
    """Where a figure sits in its sentence."""

    sentence: Sentence
    figures: list[Value]
    index: int
    local_start: int  # end of the previous figure, or the sentence start
    next_start: int  # start of the next figure, or the sentence end
    after_end: int  # end of the clause that follows the figure
    attached: bool  # English: an "of/in/for ..." phrase follows the figure
    inside: list[_Mention]  # mentions within the sentence, less those attached to earlier figures
    table_row: bool


def _nearest(mentions: list[_Mention]) -> _Mention | None:
    """The mention ending last (nearest before a figure), the longest on a tie."""
    return max(mentions, key=lambda m: (m.end, m.end - m.start), default=None)


def _earliest(mentions: list[_Mention]) -> _Mention | None:
    """The mention starting first (nearest after a figure), the longest on a tie."""
    return min(mentions, key=lambda m: (m.start, m.start - m.end), default=None)


def _covered(i: int, found: list[_Mention], roles: tuple[str, ...]) -> bool:
    """Whether ``found[i]`` lies inside a longer mention of the given roles (or an earlier one of the same span)."""
    m = found[i]
    return any(
        o.role in roles and o.start <= m.start and m.end <= o.end and (o.end - o.start > m.end - m.start or j < i)
        for j, o in enumerate(found)
        if j != i
    )


def _find_mentions(folded: str, vocab: Vocabulary) -> list[_Mention]:
    found: list[_Mention] = []
    for attr in vocab.attributes:
        for role, patterns in (("before", attr.before), ("after", attr.after)):
            for p in patterns:
                found += [
                    _Mention(role, attr.key, m.start(), m.end(), attr.kinds, attr.qualified)  # type: ignore[arg-type]
                    for m in p.finditer(folded)
                    if m.end() > m.start()
                ]
    for key, p in vocab.qualifiers:
        found += [_Mention("qualifier", key, m.start(), m.end()) for m in p.finditer(folded)]
    for key, kind, p in vocab.subjects:
        found += [_Mention("subject", key, m.start(), m.end(), subject_type=kind) for m in p.finditer(folded)]
    for cls, kinds, p in vocab.generic:
        for m in p.finditer(folded):
            phrase = " ".join(w for w in m.group().lower().split() if w not in _EN_STOPWORDS)
            if len(phrase.split()) > 1 or not phrase.isascii():
                found.append(_Mention("generic", f"{cls}:{phrase}", m.start(), m.end(), kinds))
    # A mention inside a longer one of its family is not separate: 中小 in 中小企業, "passed on" in
    # "passed on 70% or more".
    families = {
        "before": ("before", "after"),
        "after": ("before", "after"),
        "qualifier": ("qualifier",),
        "subject": ("subject",),
        "generic": (),
    }
    return [m for i, m in enumerate(found) if not _covered(i, found, families[m.role])]


@dataclass
class _Page:
    """One document being read, with its page-level context."""

    text: str
    folded: str
    lang: str
    vocab: Vocabulary
    mentions: list[_Mention]
    reference_date: dt.date | None
    starts: list[int]  # start of every figure and date, sorted
    default_subject: str | None = None
    default_when: Value | None = None
    last_period: Value | None = None  # the last reference period named so far (for 同調査, "that round")
    consumed: set[int] = field(default_factory=set)  # starts of dates that belong to earlier readings
    context: list[_Reading] = field(default_factory=list)  # readings earlier in the paragraph

    @property
    def en(self) -> bool:
        return self.lang == "en"

    def clause_end(self, pos: int, limit: int) -> int:
        m = _CLAUSE_END["en" if self.en else "ja"].search(self.folded, pos, limit)
        return m.start() if m else limit

    def clause_start(self, start: int, pos: int) -> int:
        ends = list(_CLAUSE_END["en" if self.en else "ja"].finditer(self.folded, start, pos))
        return ends[-1].end() if ends else start

    def _follower(self, date: Value, limit: int) -> str:
        """The text after a date, up to the clause end, the next figure or date, or ``limit``."""
        following = bisect.bisect_right(self.starts, date.start)
        stop = self.starts[following] if following < len(self.starts) else len(self.folded)
        return self.folded[date.end : min(limit, stop, self.clause_end(date.end, date.end + 30))]

    def is_marked(self, date: Value, limit: int) -> bool:
        """A date that names a period: 令和6年9月調査, "the September 2024 round", 全国調査（2024年9月）."""
        follower = self._follower(date, limit)
        if self.vocab.not_period.match(follower):
            return False
        if self.vocab.markers.search(follower) or _TABLE_CELL_END.match(follower):
            return True
        return bool(self.vocab.markers_before.search(self.folded[max(0, date.start - 12) : date.start]))

    def is_period(self, date: Value, limit: int) -> bool:
        """A marked date, or one that modifies a noun (2024年度の最低賃金, "in 2024")."""
        if self.is_marked(date, limit):
            return True
        if self.en:
            return bool(_PERIOD_PREP_EN.search(self.folded[max(0, date.start - 12) : date.start]))
        follower = self._follower(date, limit)
        return not self.vocab.not_period.match(follower) and bool(_ADNOMINAL_JA.match(follower))

    # -- sentences --------------------------------------------------------------------------------

    def read_sentence(self, sentence: Sentence, values: list[Value], dates: list[Value]) -> list[_Reading]:
        inside = [m for m in self.mentions if sentence.start <= m.start and m.end <= sentence.end]
        spans = [(m.start, m.end) for m in inside if m.is_attribute]
        # A figure inside an attribute phrase (7割以上を転嫁できた企業) belongs to the phrase.
        figures = [
            v for v in values if not any(s <= v.start and v.end <= e and e - s > v.end - v.start for s, e in spans)
        ]
        readings: list[_Reading] = []
        attached: list[tuple[int, int]] = []  # English "of/in/for ..." phrases that belong to earlier figures
        for i, v in enumerate(figures):
            local_start = figures[i - 1].end if i else sentence.start
            if attached and attached[-1][0] == local_start:  # "78.5% of firms with ..., against 52.0%"
                local_start = max(local_start, attached[-1][1])
            next_start = figures[i + 1].start if i + 1 < len(figures) else sentence.end
            after_end = self.clause_end(v.end, next_start)
            slot = _Slot(
                sentence=sentence,
                figures=figures,
                index=i,
                local_start=local_start,
                next_start=next_start,
                after_end=after_end,
                attached=self.en and bool(_ATTACHED_EN.match(self.folded[v.end : after_end])),
                inside=[m for m in inside if not any(s <= m.start and m.end <= e for s, e in attached)],
                table_row=sentence.text.startswith("|"),
            )
            readings.append(self._read(v, slot, readings, dates))
            if slot.attached:
                attached.append((v.end, after_end))
        periods = [d for d in dates if d.start not in self.consumed and self.is_marked(d, sentence.end)]
        if periods:
            self.last_period = periods[-1]
        return readings

    def _read(self, v: Value, slot: _Slot, done: list[_Reading], dates: list[Value]) -> _Reading:
        r = _Reading(v)
        local = [m for m in slot.inside if slot.local_start <= m.start and m.end <= v.start]
        after = [
            m
            for m in slot.inside
            if m.role == "after"
            and v.kind in m.kinds
            and v.end <= m.start < min(slot.next_start, slot.after_end if self.en else v.end + 3)
        ]
        r.previous = self._is_previous(v, slot, after)
        self._attribute(r, slot, local, after, done)
        r.subject = r.subject or self._subject(r, slot, local)
        r.when = r.when or self._when(r, slot, done, dates)
        r.polarity = self._polarity(r, slot)
        return r

    def _is_previous(self, v: Value, slot: _Slot, after: list[_Mention]) -> bool:
        """Whether the figure is an earlier reading quoted for comparison."""
        if v.change:
            return False
        f = self.folded
        if self.en:
            return bool(_PREVIOUS_EN.search(f[slot.local_start : v.start])) and not _RANGE_EN_AFTER.match(
                f[v.end : v.end + 40]
            )
        if _PREVIOUS_JA_BEFORE.search(f[slot.local_start : v.start]):
            return True
        rest = f[v.end : slot.sentence.end]
        return bool(_PREVIOUS_JA_AFTER.match(rest)) and not after and not _RANGE_JA.match(rest)

    def _attribute(
        self, r: _Reading, slot: _Slot, local: list[_Mention], after: list[_Mention], done: list[_Reading]
    ) -> None:
        v, f = r.value, self.folded
        loose = r.previous or v.change
        first_in_row = not (slot.table_row and slot.index)

        def fits(m: _Mention) -> bool:
            return v.kind in m.kinds

        def reachable(m: _Mention) -> bool:  # no figure of the same kind stands between mention and figure
            return loose or not any(m.end <= o.start and o.end <= v.start and o.kind == v.kind for o in slot.figures)

        within = [m for m in slot.inside if m.is_attribute and v.start < m.start and m.end <= v.end and fits(m)]
        chosen = _earliest(within) or _earliest(after) or _nearest([m for m in local if m.is_attribute and fits(m)])
        prev = done[-1] if done else None
        if chosen is None and prev and prev.value.kind == v.kind and _APPOSITION.fullmatch(f[prev.value.end : v.start]):
            r.attribute, r.attribute_span, r.source = prev.attribute, prev.attribute_span, prev
            r.subject, r.when = prev.subject, prev.when
            return
        if chosen is None and loose and first_in_row:  # a comparison: the figure it is compared with says what it is
            source = next((p for p in reversed(self.context + done) if p.value.kind == v.kind and p.attribute), None)
            if source is not None:
                r.attribute, r.source = source.attribute, source
                return
        if chosen is None and first_in_row:
            chosen = _nearest(
                [m for m in slot.inside if m.is_attribute and m.end <= v.start and fits(m) and reachable(m)]
            )
        if chosen is None and first_in_row and self._breakdown(v, slot, local):
            # 原材料費が51.8%, トラック運送が34.2%: a breakdown of the page's last qualifiable attribute
            carried = _nearest(
                [m for m in self.mentions if m.is_attribute and m.qualified and m.end <= v.start and fits(m)]
            )
            if carried is not None:
                chosen = _Mention("before", carried.key, v.start, v.start, carried.kinds, True)
        if chosen is None:
            chosen = _nearest([m for m in local if m.role == "generic" and fits(m)])
        if chosen is None:
            return
        r.attribute, r.attribute_span = chosen.key, (chosen.start, chosen.end)
        if chosen.qualified:
            qualifier = self._qualifier(v, slot, local)
            if qualifier:
                r.attribute = f"{qualifier}_{chosen.key}"

    def _adjacent(self, m: _Mention, v: Value) -> bool:
        gap = self.folded[m.end : v.start]
        if self.en:
            return len(gap.split()) <= 5 and "," not in gap
        return len(gap) <= 5 and "、" not in gap

    def _breakdown(self, v: Value, slot: _Slot, local: list[_Mention]) -> bool:
        """A cost component or sector named right next to the figure (化学（61.4%）, "in chemicals")."""
        if slot.attached and any(
            m.role in ("qualifier", "subject") and v.end <= m.start < slot.after_end for m in slot.inside
        ):
            return True
        return any(
            (m.role == "qualifier" or m.subject_type in ("sector", "overall")) and self._adjacent(m, v) for m in local
        )

    def _qualifier(self, v: Value, slot: _Slot, local: list[_Mention]) -> str | None:
        if slot.attached:
            q = _earliest([m for m in slot.inside if m.role == "qualifier" and v.end <= m.start < slot.after_end])
            if q:
                return q.key
        q = _nearest([m for m in local if m.role == "qualifier"])
        return q.key if q else None

    def _subject(self, r: _Reading, slot: _Slot, local: list[_Mention]) -> str | None:
        v = r.value
        subjects = [m for m in slot.inside if m.role == "subject"]
        found = None
        if slot.attached:
            found = _earliest([m for m in subjects if v.end <= m.start < slot.after_end])
        if found is None and not self.en:
            segment = self._segment(r, slot, subjects)
            if segment:
                return segment
        found = found or _nearest([m for m in local if m.role == "subject"])
        if found is None and r.source is not None:
            return r.source.subject
        if found is None:
            loose = r.previous or v.change
            found = _nearest(
                [
                    m
                    for m in subjects
                    if m.end <= v.start
                    and (
                        loose
                        or not any(m.end <= o.start and o.end <= v.start and o.kind == v.kind for o in slot.figures)
                    )
                ]
            )
        if found is None or found.subject_type == "overall":
            return self.default_subject
        return found.key

    def _segment(self, r: _Reading, slot: _Slot, subjects: list[_Mention]) -> str | None:
        """A group of firms named right before the figure (…企業では) or its attribute (…取引先の価格転嫁率)."""
        start = slot.sentence.start
        ends: list[tuple[int, tuple[str, ...]]] = [(r.value.start, ("で", "では", "のうち"))]
        if r.attribute_span and start <= r.attribute_span[0] <= r.value.start:
            ends.append((r.attribute_span[0], ("の",)))
        for end, links in ends:
            m = _SEGMENT_JA.search(self.folded[start:end])
            if m and m.group("link") in links:
                phrase_end = start + m.end(1)
                if any(s.end == phrase_end for s in subjects):  # 中小企業の, 東京都の中小企業では: a known subject
                    return None
                return f"segment:{m.group(1)}"
        return None

    def _when(self, r: _Reading, slot: _Slot, done: list[_Reading], dates: list[Value]) -> Value | None:
        v = r.value
        free = [d for d in dates if d.start not in self.consumed]
        after = (
            [d for d in free if v.end <= d.start and d.end <= min(slot.after_end, slot.next_start)] if self.en else []
        )
        local = [d for d in free if slot.local_start <= d.start and d.end <= v.start and self.is_period(d, v.start)]
        if r.previous:  # only a date attached to it: 令和6年3月調査の46.1%から, "11.2% in March"
            chosen = after[0] if after else (local[-1] if local else None)
            if chosen is not None:
                self.consumed.add(chosen.start)
            return chosen
        if (
            v.change
        ):  # 3月の前回調査から3.6ポイント: the local date is the baseline; the change shares the level's period
            self.consumed.update(d.start for d in local)
            levels = [p for p in done if not p.previous and not p.value.change]
            if levels:
                return levels[-1].when
            local = []
        if after:
            return after[0]
        earlier = [
            d for d in free if slot.sentence.start <= d.start and d.end <= v.start and self.is_period(d, v.start)
        ]
        earlier = [d for d in earlier if d.start not in self.consumed]
        if local or earlier:
            return (local or earlier)[-1]
        if self.vocab.anaphora.search(self.folded[slot.sentence.start : slot.sentence.end]) and self.last_period:
            return self.last_period
        return self.default_when

    def _polarity(self, r: _Reading, slot: _Slot) -> Polarity:
        v, f = r.value, self.folded
        after = f[v.end : slot.after_end]
        if self.en:
            start = self.clause_start(slot.local_start, v.start)
            if r.attribute_span and start <= r.attribute_span[1] <= v.start:
                start = r.attribute_span[1]
            window = f[start : v.start] + " " + after
        else:
            window = after
        if r.attribute_span:  # negations inside the attribute phrase belong to it
            phrase = f[r.attribute_span[0] : r.attribute_span[1]]
            window = window.replace(phrase, " ") if phrase else window
        return "negative" if _NEGATIVE["en" if self.en else "ja"].search(window) else "positive"


def _resolve_dates(dates: list[Value], reference_date: dt.date | None) -> list[Value]:
    """Give year-less dates the year of an earlier date in the sentence, else the reference date's."""
    resolved: list[Value] = []
    year: int | None = None
    for d in dates:
        if d.date_from and not d.date_from.startswith("--"):
            year = int(d.date_from[:4])
        elif d.date_from and year is not None:
            d = resolve_year(d, year)
        elif d.date_from and reference_date is not None:
            month = int(d.date_from[2:4])
            d = resolve_year(d, reference_date.year if month <= reference_date.month else reference_date.year - 1)
        resolved.append(d)
    return resolved


def _default_subject(mentions: list[_Mention]) -> str | None:
    """The page's most frequent population (中小企業); failing that, the one sector of a single-sector page."""
    populations = Counter(m.key for m in mentions if m.subject_type == "population")
    if populations:
        return populations.most_common(1)[0][0]
    sectors = Counter(m.key for m in mentions if m.subject_type == "sector")
    if len(sectors) == 1 and sum(sectors.values()) >= 2:
        return next(iter(sectors))
    return None


def extract_claims(
    text: str,
    entities: list[Entity],
    lang: str,
    *,
    reference_date: dt.date | None = None,
    vocabulary: Vocabulary | None = None,
) -> list[Claim]:
    """Claims of one document (see the module docstring); ``reference_date`` is usually its publication date."""
    if lang not in LANGS:
        raise InputError(f"unsupported language {lang!r} for claim extraction; use one of {', '.join(LANGS)}")
    if lang == "other" or not text.strip():
        return []
    vocab = vocabulary or load_vocabulary()
    folded = fold(text)
    mentions = _find_mentions(folded, vocab)
    all_values = parse_values(text)
    starts = [v.start for v in all_values]
    page = _Page(
        text, folded, lang, vocab, mentions, reference_date, starts, default_subject=_default_subject(mentions)
    )
    sentences = []
    for s in split_sentences(text):
        in_sentence = [v for v in all_values if s.start <= v.start and v.end <= s.end]
        dates = _resolve_dates([v for v in in_sentence if v.kind == "date"], reference_date)
        sentences.append((s, [v for v in in_sentence if v.kind != "date"], dates))
        if page.default_when is None:
            page.default_when = next((d for d in dates if page.is_marked(d, s.end)), None)

    claims: list[Claim] = []
    previous_end = 0
    for s, figures, dates in sentences:
        if "\n" in text[previous_end : s.start]:
            page.context = []
        previous_end = s.end
        names = [e.text for e in entities if e.start < s.end and e.end > s.start]
        if not (figures or dates or names) or not (names or is_claim_candidate(s.text)):
            continue
        if not is_statement(s.text):
            continue
        readings = page.read_sentence(s, figures, dates)
        page.context.extend(readings)
        if not any(r.subject or (r.attribute and ":" not in r.attribute) for r in readings):
            generic = _generic(s, names, lang, dates)
            if generic:
                claims.extend(generic)
                continue
        if readings:
            claims.extend(_group(s, readings, names, lang))
            continue
        subject = _nearest([m for m in mentions if m.role == "subject" and s.start <= m.start < s.end])
        claims.append(
            Claim(
                text=s.text,
                start=s.start,
                end=s.end,
                attribute=None,
                values=[],
                when=dates[0] if dates else None,
                subject=None
                if subject is None
                else page.default_subject
                if subject.subject_type == "overall"
                else subject.key,
                polarity="positive",
                entities=names,
                lang=lang,
            )
        )
    return claims


def is_statement(sentence: str) -> bool:
    """Whether a sentence can state a fact: a finished sentence or a record, not a fragment or noise.

    A finished sentence ends with a full stop, ! or ? (closing quotes and brackets allowed); a record
    is ``key: value`` (a table row or definition, see :mod:`scrapers.structure`). Left out: headings
    and cut sentences ("If X is -1 (the default),"), lead-ins to a list or listing ("Run:"), shell
    prompts and log or process-table lines, which read as figures but assert nothing.
    """
    text = sentence.strip()
    if len(text) < MIN_CHARS or _PROMPT.match(text) or is_listing_line(text) or _NUMBERED.match(text):
        return False
    if text.endswith(("?", "？")):
        return False  # a question asks, it does not state
    return bool(_FINISHED.search(text)) or bool(_RECORD_LINE.match(text))


def _generic(s: Sentence, names: list[str], lang: str, dates: list[Value]) -> list[Claim]:
    """Claims from the sentence's shape (records, defaults, copulas, changes): see :mod:`nlp.generic_claims`."""
    groups: dict[tuple[str, str, bool], list[Value]] = {}
    for subject, attribute, value, change in generic_readings(s.text):
        moved = value.model_copy(update={"start": value.start + s.start, "end": value.end + s.start, "change": change})
        groups.setdefault((subject, attribute, change), []).append(moved)
    return [
        Claim(
            text=s.text,
            start=s.start,
            end=s.end,
            subject=subject,
            attribute=attribute,
            values=values,
            when=dates[0] if dates and not change else None,
            polarity="positive",
            entities=names,
            lang=lang,
        )
        for (subject, attribute, change), values in groups.items()
    ]


def _group(s: Sentence, readings: list[_Reading], names: list[str], lang: str) -> list[Claim]:
    """One claim per (subject, attribute, when, polarity), in the order the figures appear."""
    groups: dict[tuple[Any, ...], list[_Reading]] = {}
    for r in readings:
        when_key = (r.when.date_from, r.when.date_to) if r.when else None
        groups.setdefault((r.subject, r.attribute, when_key, r.polarity), []).append(r)
    return [
        Claim(
            text=s.text,
            start=s.start,
            end=s.end,
            subject=rs[0].subject,
            attribute=rs[0].attribute,
            values=[r.value for r in rs],
            when=rs[0].when,
            polarity=rs[0].polarity,
            entities=names,
            lang=lang,
        )
        for rs in groups.values()
    ]


__all__ = [
    "LANGS",
    "MIN_CHARS",
    "VOCABULARY_PATH",
    "AttributeSpec",
    "Claim",
    "Patterns",
    "Polarity",
    "ReferencePeriodSpec",
    "SubjectSpec",
    "SubjectType",
    "Vocabulary",
    "VocabularyFile",
    "Words",
    "candidate_spans",
    "extract_claims",
    "is_claim_candidate",
    "is_statement",
    "load_vocabulary",
    "parse_vocabulary",
]
