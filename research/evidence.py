"""Claim-level evidence: which read pages support or contradict each final claim, checked citations, confidence.

A consensus report should not say "49.7%" on the word of one page when six pages were read that state
the same figure, nor hide the blog that says 約6割. :func:`build_evidence` takes the key findings of
every iteration and, for each, lists the verified pages that agree and disagree, checks every citation
against the page text and scores a confidence whose arithmetic is shown to the reader.

Claims. A finding is matched with its own :class:`~nlp.claims.Claim` in the page it was read from (same
sentence and, when the finding has one, same key; among several, the one sharing most of its figures). Only
the figures the finding reports are compared; without a matching claim a finding can be verified in its page
but gets no support or contradiction from other pages. Its *key* is ``subject/attribute@period`` exactly as
:mod:`nlp.conflicts` writes ``Statement.key`` (:func:`claim_key`), so evidence and conflicts speak about the
same statistic. The same sentence from the same page reported in several iterations is one claim whose
``iterations`` lists them all.

Support and contradiction. Figures are compared the way conflict detection compares them, so the two
never disagree about what "agrees" means: only related figures (same kind, unit and change flag, and the
same baseline for changes; a gap between groups or an undated "up 3 points" is not compared), agreeing
when :func:`~nlp.values.values_agree` holds and both or neither are denied (5割に達していない denies 50%).

* supporting: the finding's own page, every page with a claim on the same key with an agreeing figure,
  and every page that holds the finding's sentence word for word (at least ``MIN_REPEATED_CHARS``);
* contradicting: every other page with a claim on the same key whose related figures all disagree, and
  the other side of a detected conflict whose one side is this key and a supporting page. An undated key
  is supported but not contradicted by key alone: undated figures are often earlier readings quoted for
  comparison, so only the conflict detector (which dates them by publication) may oppose them. An outdated
  conflict counts only against its stale side: the stale page does not contradict the newer figure, it
  merely predates it.
* an origin (:func:`~research.reliability.origin_of`) that supports is never also counted against, and a
  syndicated copy (``duplicate_of``) is its original's origin: copies are cited, but counted once.

``disputed`` is set when a detected conflict has this key on one side and a page of this claim's evidence
(supporting or contradicting) on either side (for an outdated conflict: on the stale side's key only).

Citation check. A citation is listed only if the page text says what it is cited for, so a report never
points at a page that does not contain its figure. Texts are compared after :func:`~nlp.values.fold`
(full-width to ASCII) with whitespace removed. The finding's own page must contain the sentence itself and
every figure the finding states; another page must contain its own matching sentence and the figure it is
cited for (the agreeing one, or for a contradiction the disagreeing one). (The sentence carries the claim's
entities and subject and attribute words, so no separate keyword test is needed.) A failed citation goes to
:attr:`CitationCheck.dropped` with what was missing; ``checked`` and ``passed`` count every citation tried.
A claim whose own page fails keeps its other verified supporters; with none it is returned with confidence 0
for the caller to drop.

Confidence (0..1) = agreement × reliability × recency × support share, each a separate reason to doubt:

* agreement ``1 - 0.5**n`` for ``n`` independent supporting origins: one source is a coin toss that it was
  read and reported right, each independent one halves the remaining doubt (diminishing returns), and a
  syndicated copy adds nothing. ``n = 0`` gives 0.
* reliability: mean over supporting origins of the origin's best page score
  (:func:`~research.reliability.reliability_for`): many weak pages should not outweigh what they are.
* recency: the age of the figure's period (its end), else of its page's publication date, at ``today``.
  No penalty within :data:`RECENCY_GRACE_YEARS` (a statistic is normally superseded by the next survey
  round, which takes a year or two); then halving every :data:`RECENCY_HALF_LIFE_YEARS`, never below
  :data:`RECENCY_FLOOR`, because an old figure is still true of its period. Undated: 1.
* support share ``W_s / (W_s + W_c)``, the reliability weights (per origin, as above) of the supporting
  and contradicting origins: one blog against six official pages costs little, an even split halves it.
* a reference entry: a statement read in a manual's own entry for what it states (an undated page, the
  sentence inside a definition or record: "autovacuum_naptime (integer): ... The default is one minute")
  is the primary source on it; no second page makes it truer. Its agreement x reliability is at least
  :data:`REFERENCE_ENTRY` (recency and support share still apply: a page that contradicts it still counts).
  Only the entry for what the question asks about counts (its heading or term holds a word naming the
  question's subject): the entry for ``ExceptionReporter`` is no authority on Django's default cache.

The factors are rounded as shown in ``confidence_arithmetic`` (agreement to 3 decimals, the others to 2)
and their product rounded to 2 decimals, so the shown arithmetic reproduces the score.

``claim_id`` is the first 10 hex digits of the SHA-1 of page, sentence and key, so reruns give the same
ids. Claims are ordered by confidence (highest first), first iteration, then id; citations by page
reliability, then URL, with the finding's own page first. The result does not depend on input order.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date

from pydantic import Field

from core.models import CamelModel
from nlp.claims import Claim
from nlp.conflicts import (
    Conflict,
    Figure,
    SourcedClaim,
    Statement,
    claim_figures,
    claim_key,
    claim_period,
    figures_agree,
    figures_related,
)
from nlp.context import PageContext, entry_subject
from nlp.values import fold
from research.answering import answer_tokens, subject_terms
from research.models import Finding, SourceReference
from research.question import parse_question
from research.reliability import origin_of, reliability_for

RECENCY_GRACE_YEARS = 2.0
RECENCY_HALF_LIFE_YEARS = 4.0
RECENCY_FLOOR = 0.5
REFERENCE_ENTRY = 0.9  # agreement x reliability of a statement read in a manual's own entry for its subject
MIN_REPEATED_CHARS = 24  # a shorter sentence ("Yes.", a heading) repeated on another page says nothing


class SourceDocument(CamelModel):
    """A page read during the run: its reference (type, date, duplicate_of), its extracted text, its claims."""

    source: SourceReference
    text: str
    claims: list[Claim] = Field(default_factory=list)


class Citation(CamelModel):
    """One source cited for or against a claim, after verification."""

    url: str
    title: str
    source_type: str | None = None
    reliability: float = Field(ge=0, le=1)
    origin: str  # the original page when this is a syndicated copy, else the url
    published: str | None = None
    statement: str  # the sentence of this source that states (or contradicts) the claim


class DroppedCitation(CamelModel):
    claim_id: str
    url: str
    reason: str  # e.g. "value 49.7% not in the page text"


class CitationCheck(CamelModel):
    checked: int = 0
    passed: int = 0
    dropped: list[DroppedCitation] = Field(default_factory=list)


class EvidencedClaim(CamelModel):
    """A final claim with its evidence; ``confidence`` follows the documented formula."""

    claim_id: str
    text: str
    source: str  # where the sentence was read
    context: str | None = None  # the subject its document gives it (heading › lead-in › antecedent)
    key: str | None = None  # subject/attribute@period
    values: list[str] = Field(default_factory=list)  # figures as written
    entities: list[str] = Field(default_factory=list)
    iterations: list[int] = Field(default_factory=list)  # iterations whose consensus reported it
    supporting: list[Citation] = Field(default_factory=list)  # verified, one entry per source page
    contradicting: list[Citation] = Field(default_factory=list)
    independent_origins: int = 0  # supporting origins, near-duplicates counted once
    contradicting_origins: int = 0
    confidence: float = Field(0.0, ge=0, le=1)
    confidence_arithmetic: str = ""
    disputed: bool = False  # a detected conflict touches this claim's key and figure


# --- text checks -----------------------------------------------------------------------------------


def _squash(text: str) -> str:
    """Folded and without whitespace: extraction may break lines or add spaces where the page had none."""
    return re.sub(r"\s+", "", fold(text))


@dataclass
class _Page:
    """A document prepared once: its citation fields and squashed text."""

    url: str
    doc: SourceDocument
    origin: str
    reliability: float
    squashed: str
    context: PageContext | None = None  # built on first use (reference entries)

    def reference_entry(self, statement: str, about: frozenset[str] | None = None) -> bool:
        """Whether the statement is read in the page's own entry for what it states: an undated page (a
        reference, not a report of its day) where the sentence sits in a definition or record of the
        thing it describes ("autovacuum_naptime (integer): ... The default is one minute"). With
        ``about`` (the words naming what the question asks about), only an entry whose heading or term
        holds one of them: the manual's entry for another parameter is no authority on this one."""
        if self.doc.source.published is not None:
            return False
        at = self.doc.text.find(statement)
        if at < 0:
            return False
        if self.context is None:
            self.context = PageContext(self.doc.text)
        subject = entry_subject(self.context, at)
        if subject is None:
            return False
        return about is None or not about.isdisjoint(answer_tokens(subject))

    def cite(self, statement: str) -> Citation:
        s = self.doc.source
        return Citation(
            url=self.url,
            title=s.title,
            source_type=s.source_type,
            reliability=self.reliability,
            origin=self.origin,
            published=s.published,
            statement=statement,
        )

    def missing(self, statement: str, figures: Iterable[str]) -> str | None:
        """What the page text lacks for the statement and its figures (None: all there)."""
        absent = [raw for raw in figures if _squash(raw) not in self.squashed]
        reasons = [f"value {', '.join(absent)} not in the page text"] if absent else []
        if _squash(statement) not in self.squashed:
            reasons.append("sentence not in the page text")
        return "; ".join(reasons) or None


# --- matching --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Stated:
    """A claim of a page on a key, with its comparable figures."""

    page: _Page
    claim: Claim
    figures: tuple[Figure, ...]


def _figures_of(claim: Claim, url: str, wanted: Sequence[str] = ()) -> tuple[Figure, ...]:
    """The claim's comparable figures (conflict detection's rules), only those written as ``wanted`` if given."""
    figs = claim_figures(SourcedClaim(claim=claim, source_url=url), None)
    if wanted:
        keep = {_squash(w) for w in wanted}
        figs = [f for f in figs if _squash(f.value.raw) in keep]
    return tuple(figs)


def _own_claim(finding: Finding, page: _Page | None) -> Claim | None:
    """The finding's claim in its page: same sentence and (when the finding has one) key, most figures in common."""
    if page is None:
        return None
    text = _squash(finding.text)
    same = [c for c in page.doc.claims if _squash(c.text) == text and finding.key in (None, claim_key(c))]
    wanted = {_squash(v) for v in finding.values}

    def fit(c: Claim) -> tuple[int, int]:
        return len(wanted & {_squash(v.raw) for v in c.values}), -c.start

    return max(same, key=fit, default=None)


def _repeating(sentence: str, pages: Mapping[str, _Page], skip: Mapping[str, Citation]) -> list[str]:
    """Other read pages that hold the very same sentence (a manual's overview and its chapter, a page
    and its printable copy): they state the claim word for word, figures or not."""
    text = _squash(sentence)
    if len(text) < MIN_REPEATED_CHARS:
        return []
    return [url for url, page in pages.items() if url not in skip and text in page.squashed]


def _agrees(mine: Sequence[Figure], theirs: Sequence[Figure]) -> bool:
    return any(figures_agree(a, b) for a in mine for b in theirs)


def _related_any(mine: Sequence[Figure], theirs: Sequence[Figure]) -> bool:
    return any(figures_related(a, b) for a in mine for b in theirs)


# --- building --------------------------------------------------------------------------------------


@dataclass
class _Draft:
    """A finding merged over iterations, before its evidence is gathered."""

    finding: Finding
    iterations: set[int] = field(default_factory=set)


@dataclass
class _Check:
    """Running citation counts; drops are kept per claim so they can follow the claims' final order."""

    checked: int = 0
    passed: int = 0
    dropped: dict[str, list[DroppedCitation]] = field(default_factory=lambda: defaultdict(list))

    def verify(self, claim_id: str, url: str, page: _Page | None, statement: str, figures: Iterable[str]) -> bool:
        reason = "page not among the documents read" if page is None else page.missing(statement, figures)
        self.record(claim_id, url, reason)
        return reason is None

    def record(self, claim_id: str, url: str, reason: str | None) -> None:
        self.checked += 1
        if reason is None:
            self.passed += 1
        else:
            self.dropped[claim_id].append(DroppedCitation(claim_id=claim_id, url=url, reason=reason))


def build_evidence(
    findings: Sequence[tuple[int, Finding]],
    documents: Mapping[str, SourceDocument],
    conflicts: Sequence[Conflict],
    *,
    today: date | None = None,
    topic: str | None = None,
) -> tuple[list[EvidencedClaim], CitationCheck]:
    """Evidence for each (iteration, finding); see the module docstring. With the run's ``topic``, a
    reference entry counts only when it is the entry for what the question asks about."""
    today = today or date.today()
    about = subject_terms(parse_question(topic)) if topic else None
    pages = {
        url: _Page(url, doc, origin_of(doc.source), reliability_for(doc.source), _squash(doc.text))
        for url, doc in sorted(documents.items())
    }
    by_key: dict[str, list[_Stated]] = defaultdict(list)
    for page in pages.values():
        for claim in page.doc.claims:
            key = claim_key(claim)
            figs = _figures_of(claim, page.url) if key else ()
            if key and figs:
                by_key[key].append(_Stated(page, claim, figs))
    drafts: dict[tuple[str, str, str | None], _Draft] = {}
    for iteration, finding in sorted(findings, key=lambda pair: (pair[0], pair[1].model_dump_json())):
        draft = drafts.setdefault((finding.source, finding.text, finding.key), _Draft(finding))  # earliest wins
        draft.iterations.add(iteration)
    check = _Check()
    claims = [_evidence(d, pages, by_key, conflicts, check, today, about) for d in drafts.values()]
    claims.sort(key=lambda c: (-c.confidence, c.iterations[0], c.claim_id))
    dropped = [d for c in claims for d in sorted(check.dropped[c.claim_id], key=lambda d: (d.url, d.reason))]
    return claims, CitationCheck(checked=check.checked, passed=check.passed, dropped=dropped)


def _evidence(
    draft: _Draft,
    pages: Mapping[str, _Page],
    by_key: Mapping[str, list[_Stated]],
    conflicts: Sequence[Conflict],
    check: _Check,
    today: date,
    about: frozenset[str] | None,
) -> EvidencedClaim:
    finding = draft.finding
    own_page = pages.get(finding.source)
    claim = _own_claim(finding, own_page)
    key = claim_key(claim) if claim else finding.key
    values = list(finding.values) or ([v.raw for v in claim.values] if claim else [])
    claim_id = hashlib.sha1(f"{finding.source}\n{finding.text}\n{finding.key or ''}".encode()).hexdigest()[:10]

    supporting: dict[str, Citation] = {}
    if check.verify(claim_id, finding.source, own_page, finding.text, values):
        assert own_page is not None
        supporting[own_page.url] = own_page.cite(finding.text)
    mine = _figures_of(claim, finding.source, finding.values) if claim and key else ()
    others = [s for s in by_key.get(key, []) if s.page.url != finding.source] if mine and key else []

    # Pages that agree, each cited by its first verifiable agreeing sentence (prose before table rows).
    agreeing: dict[str, list[_Stated]] = defaultdict(list)
    opposing: dict[str, list[_Stated]] = defaultdict(list)
    for s in sorted(others, key=lambda s: (s.claim.text.startswith("|"), s.claim.start)):
        if _agrees(mine, s.figures):
            agreeing[s.page.url].append(s)
        elif _related_any(mine, s.figures):
            opposing[s.page.url].append(s)
    for url in sorted(agreeing):
        cited = _first_verified(claim_id, agreeing[url], mine, check)
        if cited:
            supporting[url] = cited
    for url in _repeating(finding.text, pages, skip=supporting):
        if check.verify(claim_id, url, pages[url], finding.text, values):
            supporting[url] = pages[url].cite(finding.text)
    support_origins = {c.origin for c in supporting.values()}

    # Pages on the same (dated) key that only disagree, then the other sides of detected conflicts.
    contradicting: dict[str, Citation] = {}
    tried = {*agreeing, finding.source}
    for url in sorted(opposing) if key and not key.endswith("@undated") else []:
        if url not in tried and pages[url].origin not in support_origins:
            tried.add(url)
            cited = _first_verified(claim_id, opposing[url], mine, check)
            if cited:
                contradicting[url] = cited
    facing = _facing(conflicts, key)
    for mine_side, other in facing:
        if (
            _origin(pages, mine_side.source) in support_origins
            and _origin(pages, other.source) not in support_origins
            and other.source not in tried
        ):
            tried.add(other.source)
            page = pages.get(other.source)
            if check.verify(claim_id, other.source, page, other.text, [other.value]):
                assert page is not None
                contradicting[other.source] = page.cite(other.text)
    evidence_origins = support_origins | {c.origin for c in contradicting.values()}
    disputed = any(_origin(pages, s.source) in evidence_origins for pair in facing for s in pair)

    entry = own_page is not None and finding.source in supporting and own_page.reference_entry(finding.text, about)
    confidence, arithmetic = _confidence(
        supporting.values(), contradicting.values(), claim, own_page, today, reference_entry=entry
    )
    return EvidencedClaim(
        claim_id=claim_id,
        text=finding.text,
        source=finding.source,
        context=finding.context,
        key=key,
        values=values,
        entities=list(finding.entities) or (list(claim.entities) if claim else []),
        iterations=sorted(draft.iterations),
        supporting=_ordered(supporting, first=finding.source),
        contradicting=_ordered(contradicting),
        independent_origins=len(support_origins),
        contradicting_origins=len({c.origin for c in contradicting.values()}),
        confidence=confidence,
        confidence_arithmetic=arithmetic,
        disputed=disputed,
    )


def _origin(pages: Mapping[str, _Page], url: str) -> str:
    page = pages.get(url)
    return page.origin if page else url


def _facing(conflicts: Sequence[Conflict], key: str | None) -> list[tuple[Statement, Statement]]:
    """(side on this key, other side) of each conflict; an outdated conflict faces only its stale side."""
    out = []
    for c in sorted(conflicts, key=lambda c: c.conflict_id):
        pairs = (
            [(c.statement2, c.statement1)]
            if c.type == "outdated"
            else [(c.statement1, c.statement2), (c.statement2, c.statement1)]
        )
        out += [(mine, other) for mine, other in pairs if key is not None and mine.key == key]
    return out


def _first_verified(claim_id: str, stated: list[_Stated], mine: Sequence[Figure], check: _Check) -> Citation | None:
    """The page's first sentence that the page text holds, with the figure it is cited for.

    A page is cited once, so it is checked once: if no sentence passes, the first one's fault is reported.
    """
    page = stated[0].page
    first_fault = None
    for s in stated:
        cited = [b for b in s.figures if any(figures_agree(a, b) for a in mine)]
        figure = (cited or [b for b in s.figures if any(figures_related(a, b) for a in mine)])[0].value.raw
        fault = page.missing(s.claim.text, [figure])
        if fault is None:
            check.record(claim_id, page.url, None)
            return page.cite(s.claim.text)
        first_fault = first_fault or fault
    check.record(claim_id, page.url, first_fault)
    return None


def _ordered(citations: Mapping[str, Citation], first: str | None = None) -> list[Citation]:
    return sorted(citations.values(), key=lambda c: (c.url != first, -c.reliability, c.url))


# --- confidence ------------------------------------------------------------------------------------


def _weights(citations: Iterable[Citation]) -> dict[str, float]:
    """Reliability per origin: its best page (a copy is scored as its original anyway)."""
    best: dict[str, float] = {}
    for c in citations:
        best[c.origin] = max(best.get(c.origin, 0.0), c.reliability)
    return best


def _as_of(claim: Claim | None, page: _Page | None) -> date | None:
    """The date the figure speaks for: its period's end, else its page's publication date."""
    period = claim_period(claim.when) if claim else None
    for text in (period[2] if period else None, page.doc.source.published if page else None):
        try:
            return date.fromisoformat(text[:10]) if text else None
        except ValueError:
            continue
    return None


def _recency(as_of: date | None, today: date) -> float:
    if as_of is None:
        return 1.0
    years = (today - as_of).days / 365.25
    if years <= RECENCY_GRACE_YEARS:
        return 1.0
    decay: float = 0.5 ** ((years - RECENCY_GRACE_YEARS) / RECENCY_HALF_LIFE_YEARS)
    return max(RECENCY_FLOOR, decay)


def _confidence(
    supporting: Iterable[Citation],
    contradicting: Iterable[Citation],
    claim: Claim | None,
    page: _Page | None,
    today: date,
    *,
    reference_entry: bool = False,
) -> tuple[float, str]:
    """The documented product, and its arithmetic as shown to the reader."""
    support, against = _weights(supporting), _weights(contradicting)
    n = len(support)
    if n == 0:
        return 0.0, "no verified supporting source = 0.00"
    agreement = round(1 - 0.5**n, 3)
    reliability = round(sum(support.values()) / n, 2)
    recency = round(_recency(_as_of(claim, page), today), 2)
    w_s, w_c = sum(support.values()), sum(against.values())
    share = round(w_s / (w_s + w_c), 2)
    base = f"agreement 1-0.5^{n}={agreement:.3f} × reliability {reliability:.2f}"
    trust = agreement * reliability
    if reference_entry and trust < REFERENCE_ENTRY:
        base, trust = f"read in the manual's own entry {REFERENCE_ENTRY:.2f}", REFERENCE_ENTRY
    score = round(trust * recency * share, 2)
    text = f"{base} × recency {recency:.2f} × support share {share:.2f} = {score:.2f}"
    return score, text


__all__ = [
    "RECENCY_FLOOR",
    "RECENCY_GRACE_YEARS",
    "RECENCY_HALF_LIFE_YEARS",
    "REFERENCE_ENTRY",
    "Citation",
    "CitationCheck",
    "DroppedCitation",
    "EvidencedClaim",
    "SourceDocument",
    "build_evidence",
]
