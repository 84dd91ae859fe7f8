"""Which sentences of the pages an agent read answer its question, best first.

A sentence is ranked by how well it answers, not by how many words it shares with the question:

* **claim level**: BM25 relevance of the sentence read with its context (heading › lead-in ›
  antecedent, :mod:`nlp.context`) and, when it points back ("All of such information ..."), with the
  sentence it continues, a bonus when it names an entity of the question exactly, and the
  share of the asked attributes it states (:mod:`research.question`: "default", "how long" ...);
* **section level**: BM25 relevance of the section it sits in (its heading and all its text): in
  reference documentation the section about ``LimitRequestFields`` answers a question about request
  header fields even where a sentence says only "The default value is 100 as distributed";
* **page level**: how much of the question's entities and rarest terms the page title holds;
* **form**: the prior trust in the claim's form (:func:`research.retrieval.claim_confidence`), at least
  that of a sentence with a figure when it states what the question asks (a length for "how long");
* **answers**: a sentence that states none of what the question asks (:func:`research.question.answers`:
  no duration for "how long", no reason for "why") is worth :data:`NOT_ANSWERING` of its score;
* **noise** (:mod:`research.noise`): survey methodology, navigation, captions, version history and
  headings rank last, whatever their words.

``score = (W_CLAIM·claim + W_SECTION·section + W_TITLE·title + W_ATTRIBUTE·attributes) × form × answers × noise``,
each part in 0..1 (``claim`` may exceed 1 by the exact-entity bonus). Besides the analysed claims
(sentences with figures, dates or names), the sentences of the best-matching sections are candidates
too: "Which characters must not appear in a file name?" is answered by a sentence without a figure.
So are the sentences of any other section that state the form of the asked answer (a path for "which
file", a command for "which command"; else a qualifier it asks, a default), when that section shares
at least :data:`MIN_SHARED_TERMS` of its words (with its heading and the page title): "...
list the contents of an initramfs using the command lsinitramfs" sits in a section that shares few words
with "Which command shows the files packed inside an initramfs image?".
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache

import snowballstemmer

from core.text.tokenize import tokenize
from nlp.claims import Claim
from nlp.conflicts import claim_key
from nlp.context import PageContext, claim_context, is_anaphoric
from nlp.findings import split_sentences
from research.models import Finding
from research.noise import noise_factor
from research.question import Question, answer_fit, asked_about, asked_forms, stated_attributes
from research.retrieval import EXACT_BONUS, claim_confidence
from scrapers.search.bm25 import BM25Index

W_CLAIM, W_SECTION, W_TITLE, W_ATTRIBUTE = 0.45, 0.35, 0.1, 0.3
TOP_SECTIONS = 3  # sections of the pages read whose every sentence is a candidate
MIN_SECTION_RELEVANCE = 0.5  # of the best section's score, for those sentences
RULE_RELEVANCE = 0.8  # of the sentence a reason follows, for "why" questions (see _follows_the_rule)
MIN_SHARED_TERMS = 2  # question words a sentence of another section (with its heading) must hold to join
SENTENCE_CONFIDENCE = 0.6  # prior of a sentence that is no analysed claim (no figure, date or name)
ANSWERING_FORM = 0.8  # prior of a sentence stating what the question asks, as of one with a figure
NOT_ANSWERING = 0.85  # weight of a sentence that states none of what the question asks (no length for "how long")
MAX_SENTENCE_CHARS = 400
PREFERRED_BONUS, KNOWN_WEIGHT = 0.2, 0.5
_CAMEL_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+")
_CAMEL = re.compile(r"\b[A-Za-z]*[a-z][A-Z][A-Za-z]*\b|\b[A-Z]{2,}[a-z][A-Za-z]*\b")


_local = threading.local()


@cache
def _root(token: str) -> str:
    """An English word's Snowball stem (removal, removed, remove -> remov); other tokens as they are."""
    if not (token.isascii() and token.isalpha()):
        return token
    english = getattr(_local, "english", None)
    if english is None:  # a stemmer object is not safe to share between threads
        english = _local.english = snowballstemmer.stemmer("english")
    return str(english.stemWord(token))


def answer_tokens(text: str) -> list[str]:
    """Index tokens plus the parts of CamelCase identifiers, English words reduced to their stem:
    ``LimitRequestFields`` also reads as limit, request, field, so a question in plain words meets the
    identifier that names its answer, and "Why should removal be tested?" meets "bugs show up when
    packages are removed"."""
    tokens = tokenize(text)
    for word in _CAMEL.findall(text):
        tokens += tokenize(" ".join(_CAMEL_PART.findall(word)))
    return [_root(t) for t in tokens]


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


def subject_terms(question: Question) -> frozenset[str]:
    """The words naming what a question is about: its words (:func:`answer_tokens`) without its asking
    words and those that only say which value is asked ("default", 「既定」)."""
    tokens = answer_tokens(asked_about(question.text))
    return frozenset(t for t in tokens if not stated_attributes(t, question.attributes))


def title_share(question: Question, title: str) -> float:
    """Share of the question's entities (else its terms) that the page title holds."""
    if question.entities:
        return sum(1 for e in question.entities if e.lower() in title.lower()) / len(question.entities)
    terms = set(answer_tokens(question.text))
    if not terms:
        return 0.0
    return len(terms & set(answer_tokens(title))) / len(terms)


class _Tokens:
    """Token lists of texts, each text tokenised once (contexts repeat across a page's claims)."""

    def __init__(self) -> None:
        self._seen: dict[str, list[str]] = {}

    def __call__(self, text: str) -> list[str]:
        found = self._seen.get(text)
        if found is None:
            found = self._seen[text] = answer_tokens(text)
        return found


@dataclass(slots=True)
class _Draft:
    page: int
    text: str
    offset: int
    claim: Claim | None
    context: str
    tokens: list[str]  # of the sentence alone


def _section_relevance(
    pages: Sequence[PageToRank],
    contexts: Sequence[PageContext],
    drafts: Sequence[_Draft],
    question: Question,
    tokens: _Tokens,
) -> tuple[list[tuple[int, str, int, int]], list[float], dict[int, int]]:
    """BM25 over the sections of every page read. A section reads as its heading (twice: a heading says
    what a section is about) and all its text: the one sentence that names a rare term of the question
    ("This part comes from the abiname setting ...") may carry no figure and so be no analysed claim.
    Returns (page, heading, start, end) per section, each section's relevance (0..1) and, per draft,
    its section."""
    spans: list[tuple[int, str, int, int]] = []
    for n, context in enumerate(contexts):
        spans += [(n, heading, start, end) for heading, start, end in context.sections()]
    docs = [[*tokens(heading), *tokens(heading), *tokens(pages[n].text[start:end])] for n, heading, start, end in spans]
    first_of: dict[int, int] = {}
    for i, (n, *_rest) in enumerate(spans):
        first_of.setdefault(n, i)
    of_draft: dict[int, int] = {}
    for d, draft in enumerate(drafts):
        if draft.page not in first_of:
            continue
        i = first_of[draft.page]
        while i + 1 < len(spans) and spans[i + 1][0] == draft.page and spans[i + 1][2] <= draft.offset:
            i += 1
        of_draft[d] = i
    index = BM25Index(docs)
    return spans, _scaled(index.scores(answer_tokens(asked_about(question.text))), len(docs)), of_draft


def _section_sentences(
    page: PageToRank, context: PageContext, start: int, end: int, taken: set[tuple[int, int]]
) -> list[tuple[str, int]]:
    out = []
    for s in split_sentences(page.text[start:end]):
        text = s.text.strip()
        offset = start + s.start
        if not text or len(text) > MAX_SENTENCE_CHARS or context.in_heading(offset):
            continue
        if any(a <= offset < b for a, b in taken):
            continue
        out.append((text, offset))
    return out


def _stating_sentences(
    question: Question,
    page: PageToRank,
    context: PageContext,
    span: tuple[int, str, int, int],
    taken: set[tuple[int, int]],
    tokens: _Tokens,
) -> list[tuple[str, int]]:
    """Sentences of a section that state the form of the asked answer (else a qualifier it asks: a
    default), when the section, its heading and the page title share question words (see the module
    docstring: on the page titled "mod_ratelimit", "The connection speed is given in KiB/s" answers "In
    which unit is the bandwidth for mod_ratelimit given?"; in the section that speaks of a "database
    server", "Django runs SQLite by default" answers "Which database does Django use out of the
    box?"); none when the question asks nothing of either kind."""
    forms = asked_forms(question) or question.attributes
    if not forms:
        return []
    _n, heading, start, end = span
    terms = set(tokens(asked_about(question.text)))
    around = terms & {*tokens(heading), *tokens(page.title), *tokens(page.text[start:end])}
    if len(around) < min(MIN_SHARED_TERMS, len(terms)):
        return []
    return [
        (text, offset)
        for text, offset in _section_sentences(page, context, start, end, taken)
        if stated_attributes(text, forms)
    ]


def _follows_the_rule(
    question: Question, drafts: Sequence[_Draft], contexts: Sequence[PageContext], claim_rel: Sequence[float]
) -> list[bool]:
    """For a "why" question, whether each sentence comes right after one that restates the question
    (claim relevance at least :data:`RULE_RELEVANCE`): a manual gives a rule, then its reason, often
    without a "because" ("... be sure to test not only for install but also for remove and purge. Many
    maintainer script bugs show up when packages are removed or purged.")."""
    if "reason" not in asked_forms(question):
        return [False] * len(drafts)
    relevance = {(d.page, d.text): rel for d, rel in zip(drafts, claim_rel, strict=True)}
    return [
        relevance.get((d.page, contexts[d.page].previous_sentence(d.offset).strip()), 0.0) >= RULE_RELEVANCE
        for d in drafts
    ]


def rank_answers(question: Question, pages: Sequence[PageToRank], queries: Sequence[str]) -> list[Ranked]:
    """Every candidate sentence of the pages, scored (see the module docstring), best first; ties keep
    reading order, so the result does not depend on anything but the input."""
    tokens = _Tokens()
    contexts = [PageContext(page.text) for page in pages]
    drafts = [
        _Draft(n, c.text, c.start, c, claim_context(contexts[n], c.text, c.start), tokens(c.text))
        for n, page in enumerate(pages)
        for c in sorted(page.claims, key=lambda c: c.start)
    ]
    spans, section_rel, of_draft = _section_relevance(pages, contexts, drafts, question, tokens)
    # sentences of the best sections that are no analysed claim (no figure, date or name) join in
    order = sorted(range(len(spans)), key=lambda i: (-section_rel[i], i))
    best = [i for i in order[:TOP_SECTIONS] if section_rel[i] >= MIN_SECTION_RELEVANCE]
    taken_on = [{(c.start, c.end) for c in page.claims} for page in pages]
    for i, span in enumerate(spans):
        n, _heading, start, end = span
        taken = taken_on[n]
        if i in best:
            joining = _section_sentences(pages[n], contexts[n], start, end, taken)
        else:
            joining = _stating_sentences(question, pages[n], contexts[n], span, taken, tokens)
        for text, offset in joining:
            of_draft[len(drafts)] = i
            drafts.append(_Draft(n, text, offset, None, claim_context(contexts[n], text, offset), tokens(text)))
    if not drafts:
        return []
    # an anaphoric sentence reads with the sentence it continues too (each of its words once)
    continued = [
        dict.fromkeys(tokens(contexts[d.page].previous_sentence(d.offset))) if is_anaphoric(d.text) else {}
        for d in drafts
    ]
    index = BM25Index([[*tokens(d.context), *d.tokens, *more] for d, more in zip(drafts, continued, strict=True)])
    claim_rel = [0.0] * len(drafts)
    for query in queries or [question.text]:
        for i, value in enumerate(_scaled(index.scores(answer_tokens(asked_about(query))), len(drafts))):
            claim_rel[i] = max(claim_rel[i], value)
    titles = [title_share(question, page.title) for page in pages]
    gives_reason = _follows_the_rule(question, drafts, contexts, claim_rel)
    ranked: list[Ranked] = []
    for i, d in enumerate(drafts):
        read = f"{d.context} {d.text}"
        exact = EXACT_BONUS if _exact(question, read) else 0.0
        parts = {
            "claim": claim_rel[i] + exact,
            "section": section_rel[of_draft[i]] if i in of_draft else 0.0,
            "title": titles[d.page],
        }
        answering, parts["attributes"] = answer_fit(question, read)
        if gives_reason[i] and not answering:
            answering, parts["attributes"] = True, max(parts["attributes"], 1 / len(question.attributes))
        if d.claim is not None:
            structured = bool(d.claim.values and d.claim.subject and d.claim.attribute)
            form = claim_confidence(structured, bool(d.claim.values), parsed=d.claim.parsed)
        else:
            form = SENTENCE_CONFIDENCE
        if answering and parts["attributes"] > 0:
            form = max(form, ANSWERING_FORM)  # "keep its length within 8 characters" states what is asked
        noise = noise_factor(d.text, question, heading=contexts[d.page].in_heading(d.offset))
        parts["form"], parts["noise"] = form, noise
        parts["answers"] = 1.0 if answering else NOT_ANSWERING
        weighted = (
            W_CLAIM * parts["claim"]
            + W_SECTION * parts["section"]
            + W_TITLE * parts["title"]
            + W_ATTRIBUTE * parts["attributes"]
        )
        score = weighted * form * noise * parts["answers"]
        if parts["claim"] <= 0 and parts["section"] <= 0:
            score = 0.0  # nothing of the question in the sentence or its section
        ranked.append(
            Ranked(
                text=d.text, url=pages[d.page].url, context=d.context, score=round(score, 4), claim=d.claim, parts=parts
            )
        )
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
    "ANSWERING_FORM",
    "KNOWN_WEIGHT",
    "MAX_SENTENCE_CHARS",
    "MIN_SHARED_TERMS",
    "NOT_ANSWERING",
    "PREFERRED_BONUS",
    "RULE_RELEVANCE",
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
    "subject_terms",
    "text_relevance",
    "title_share",
]
