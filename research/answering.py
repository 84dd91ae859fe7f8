"""Which sentences of the pages an agent read answer its question, best first.

A sentence is ranked by how well it answers, not by how many words it shares with the question:

* **claim level**: BM25 relevance of the sentence read with its context (heading › lead-in ›
  antecedent, :mod:`nlp.context`), a bonus when it names an entity of the question exactly, and the
  share of the asked attributes it states (:mod:`research.question`: "default", "how long" ...);
* **section level**: BM25 relevance of the section it sits in (its heading and all its text): in
  reference documentation the section about ``LimitRequestFields`` answers a question about request
  header fields even where a sentence says only "The default value is 100 as distributed";
* **page level**: how much of the question's entities and rarest terms the page title holds;
* **form**: the prior trust in the claim's form (:func:`research.retrieval.claim_confidence`);
* **noise** (:mod:`research.noise`): survey methodology, navigation, captions, version history and
  headings rank last, whatever their words.

``score = (W_CLAIM·claim + W_SECTION·section + W_TITLE·title + W_ATTRIBUTE·attributes) × form × noise``,
each part in 0..1 (``claim`` may exceed 1 by the exact-entity bonus). Besides the analysed claims
(sentences with figures, dates or names), the sentences of the best-matching sections are candidates
too: "Which characters must not appear in a file name?" is answered by a sentence without a figure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from nlp.claims import Claim
from nlp.conflicts import claim_key
from nlp.context import PageContext, claim_context, is_heading
from nlp.findings import split_sentences
from research.models import Finding
from research.noise import noise_factor
from research.question import Question, answered_share
from research.retrieval import EXACT_BONUS, claim_confidence, question_terms
from scrapers.search.bm25 import BM25Index
from scrapers.search.tokenize import tokenize

W_CLAIM, W_SECTION, W_TITLE, W_ATTRIBUTE = 0.45, 0.35, 0.1, 0.3
TOP_SECTIONS = 3  # sections of the pages read whose every sentence is a candidate
MIN_SECTION_RELEVANCE = 0.5  # of the best section's score, for those sentences
SENTENCE_CONFIDENCE = 0.6  # prior of a sentence that is no analysed claim (no figure, date or name)
MAX_SENTENCE_CHARS = 400
PREFERRED_BONUS, KNOWN_WEIGHT = 0.2, 0.5
_CAMEL_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+")
_CAMEL = re.compile(r"\b[A-Za-z]*[a-z][A-Z][A-Za-z]*\b|\b[A-Z]{2,}[a-z][A-Za-z]*\b")


def answer_tokens(text: str) -> list[str]:
    """Index tokens plus the parts of CamelCase identifiers: ``LimitRequestFields`` also reads as
    limit, request, fields, so a question in plain words meets the identifier that names its answer."""
    tokens = tokenize(text)
    for word in _CAMEL.findall(text):
        tokens += tokenize(" ".join(_CAMEL_PART.findall(word)))
    return tokens


@dataclass(frozen=True, slots=True)
class PageToRank:
    """A page the agent read, with its analysed claims."""

    url: str
    title: str
    text: str
    claims: Sequence[Claim]


@dataclass(slots=True)
class Ranked:
    """A candidate sentence with its score and the parts that made it (shown in decisions)."""

    text: str
    url: str
    context: str
    score: float
    claim: Claim | None = None  # None: a sentence of a well-matching section, not an analysed claim
    parts: dict[str, float] = field(default_factory=dict)


def _scaled(scores: dict[int, float], count: int) -> list[float]:
    values = [scores.get(i, 0.0) for i in range(count)]
    top = max(values, default=0.0)
    return [v / top if top > 0 else 0.0 for v in values]


def text_relevance(texts: Sequence[str], queries: Sequence[str]) -> list[float]:
    """BM25 relevance of each text to its best query (:func:`answer_tokens`), scaled to the best (0..1)."""
    if not texts:
        return []
    index = BM25Index([answer_tokens(t) for t in texts])
    best = [0.0] * len(texts)
    for query in queries:
        for i, value in enumerate(_scaled(index.scores(answer_tokens(query)), len(texts))):
            best[i] = max(best[i], value)
    return best


def names_entity(question: Question, text: str) -> bool:
    """Whether the text names one of the question's entities exactly (``%D`` is not ``%d``)."""
    return _exact(question, text)


def _exact(question: Question, text: str) -> bool:
    return any(re.search(rf"(?<![\w%]){re.escape(e)}(?!\w)", text) for e in question.entities)


def _title_share(question: Question, title: str) -> float:
    """Share of the question's entities (else its terms) that the page title holds."""
    if question.entities:
        return sum(1 for e in question.entities if e.lower() in title.lower()) / len(question.entities)
    terms = set(question_terms(question.text))
    if not terms:
        return 0.0
    return len(terms & set(answer_tokens(title))) / len(terms)


class _Sections:
    """BM25 over the sections of every page read (heading repeated: a heading says what a section is about)."""

    def __init__(self, pages: Sequence[tuple[PageToRank, PageContext]], question: Question) -> None:
        self.spans: list[tuple[int, str, int, int]] = []  # (page index, heading, start, end)
        docs: list[list[str]] = []
        for n, (page, context) in enumerate(pages):
            for heading, start, end in context.sections():
                self.spans.append((n, heading, start, end))
                docs.append(answer_tokens(f"{heading}\n{heading}\n{page.text[start:end]}"))
        index = BM25Index(docs)
        self.relevance = _scaled(index.scores(answer_tokens(question.text)), len(docs))
        self._by_page: dict[int, list[int]] = {}
        for i, (n, *_rest) in enumerate(self.spans):
            self._by_page.setdefault(n, []).append(i)

    def of(self, page: int, offset: int) -> float:
        best = 0.0
        for i in self._by_page.get(page, []):
            _, _, start, end = self.spans[i]
            if start <= offset < end:
                return self.relevance[i]
        return best

    def best(self, count: int) -> list[int]:
        order = sorted(range(len(self.spans)), key=lambda i: (-self.relevance[i], i))
        return [i for i in order[:count] if self.relevance[i] >= MIN_SECTION_RELEVANCE]


def _section_sentences(page: PageToRank, start: int, end: int, taken: set[tuple[int, int]]) -> list[tuple[str, int]]:
    out = []
    for s in split_sentences(page.text[start:end]):
        text = s.text.strip()
        offset = start + s.start
        if not text or len(text) > MAX_SENTENCE_CHARS or is_heading(text):
            continue
        if any(a <= offset < b for a, b in taken):
            continue
        out.append((text, offset))
    return out


def rank_answers(question: Question, pages: Sequence[PageToRank], queries: Sequence[str]) -> list[Ranked]:
    """Every candidate sentence of the pages, scored (see the module docstring), best first; ties keep
    reading order, so the result does not depend on anything but the input."""
    contexts = [(page, PageContext(page.text)) for page in pages]
    sections = _Sections(contexts, question)
    drafts: list[tuple[int, str, int, Claim | None, str]] = []  # (page, text, offset, claim, context)
    for n, (page, context) in enumerate(contexts):
        taken = {(c.start, c.end) for c in page.claims}
        for c in page.claims:
            drafts.append((n, c.text, c.start, c, claim_context(context, c.text, c.start)))
        for i in sections.best(TOP_SECTIONS):
            p, _heading, start, end = sections.spans[i]
            if p == n:
                for text, offset in _section_sentences(page, start, end, taken):
                    drafts.append((n, text, offset, None, claim_context(context, text, offset)))
    if not drafts:
        return []
    claim_rel = text_relevance([f"{ctx} {text}" for _, text, _, _, ctx in drafts], queries or [question.text])
    ranked: list[Ranked] = []
    for i, (n, text, offset, claim, ctx) in enumerate(drafts):
        page = pages[n]
        read = f"{ctx} {text}"
        exact = EXACT_BONUS if _exact(question, read) else 0.0
        parts = {
            "claim": claim_rel[i] + exact,
            "section": sections.of(n, offset),
            "title": _title_share(question, page.title),
            "attributes": answered_share(question, read),
        }
        if claim is not None:
            structured = bool(claim.values and claim.subject and claim.attribute)
            form = claim_confidence(structured, bool(claim.values), parsed=claim.parsed)
        else:
            form = SENTENCE_CONFIDENCE
        noise = noise_factor(text, question)
        parts["form"], parts["noise"] = form, noise
        score = (
            (
                W_CLAIM * parts["claim"]
                + W_SECTION * parts["section"]
                + W_TITLE * parts["title"]
                + W_ATTRIBUTE * parts["attributes"]
            )
            * form
            * noise
        )
        if parts["claim"] <= 0 and parts["section"] <= 0:
            score = 0.0  # nothing of the question in the sentence or its section
        ranked.append(Ranked(text=text, url=page.url, context=ctx, score=round(score, 4), claim=claim, parts=parts))
    order = sorted(range(len(ranked)), key=lambda i: (-ranked[i].score, i))
    return [ranked[i] for i in order]


def select_findings(
    question: Question,
    pages: Sequence[PageToRank],
    queries: Sequence[str],
    *,
    preferred: Sequence[str] = (),
    known: Sequence[str] = (),
    per_page: int = 3,
    limit: int = 15,
) -> tuple[list[Finding], int]:
    """The findings an agent reports: :func:`rank_answers`, pages of a preferred source type up by
    :data:`PREFERRED_BONUS`, sentences the previous consensus already states down by
    :data:`KNOWN_WEIGHT` (new findings first), at most ``per_page`` per page and ``limit`` in all.
    Returns them with the number of candidates ranked."""
    ranked = rank_answers(question, pages, queries)
    favoured, stated = set(preferred), set(known)
    scored: list[tuple[float, int, Ranked]] = []
    for n, r in enumerate(ranked):
        score = r.score + (PREFERRED_BONUS if r.url in favoured and r.score > 0 else 0.0)
        if r.text in stated:
            score *= KNOWN_WEIGHT
        scored.append((round(score, 4), n, r))
    scored.sort(key=lambda item: (-item[0], item[1]))
    per_source: dict[str, int] = {}
    seen: set[str] = set()
    findings: list[Finding] = []
    for score, _, r in scored:
        if score <= 0 or r.text in seen or per_source.get(r.url, 0) >= per_page:
            continue
        seen.add(r.text)
        per_source[r.url] = per_source.get(r.url, 0) + 1
        claim = r.claim
        findings.append(
            Finding(
                text=r.text,
                source=r.url,
                entities=list(claim.entities) if claim else [],
                score=score,
                key=claim_key(claim) if claim else None,
                values=[v.raw for v in claim.values] if claim else [],
                context=r.context or None,
            )
        )
        if len(findings) == limit:
            break
    return findings, len(ranked)


__all__ = [
    "KNOWN_WEIGHT",
    "MAX_SENTENCE_CHARS",
    "PREFERRED_BONUS",
    "SENTENCE_CONFIDENCE",
    "TOP_SECTIONS",
    "W_ATTRIBUTE",
    "W_CLAIM",
    "W_SECTION",
    "W_TITLE",
    "PageToRank",
    "Ranked",
    "answer_tokens",
    "names_entity",
    "rank_answers",
    "select_findings",
    "text_relevance",
]
