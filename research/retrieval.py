"""Question-focused reading: sub-questions per agent, passage-level BM25, relevance x confidence.

A page is found by its words; whether it answers the question is decided sentence by sentence. So
agents decompose the topic into sub-questions, search with them, and then rank the claims of the pages
they read as passages (one claim sentence = one passage) against the question with BM25, the idf taken
over every passage the agent read: a passage that shares the question's rare words (``StepLimit``,
``debian/compat``) ranks above one that shares only common ones.

How agents differ (``AgentStrategy.reading``), so they do not all read the same pages:

* ``depth``: the question as written; reads the best few pages and more passages per page;
* ``keywords``: a reformulation to the question's rarest terms (identifiers, figures, long words),
  plus each pair of them, and reads more pages, fewer passages each;
* ``feedback``: pseudo-relevance feedback: the terms the first results' titles and snippets share
  with each other but the question does not have, added to the question (offline query expansion).

Claims are ranked by ``relevance x confidence``: relevance is the passage's BM25 score scaled to the
best passage's (0..1); confidence is higher for a claim whose figure has a subject and an attribute
(a structured claim; a little lower when the subject came from the dependency parse) than for a bare
sentence.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Literal

from core.text.tokenize import tokenize
from scrapers.search.base import SearchResult
from scrapers.search.bm25 import BM25Index

Reading = Literal["depth", "keywords", "feedback"]
READINGS: tuple[Reading, ...] = ("depth", "keywords", "feedback")
# Share of the agent's page budget each reading spends, and how many passages it keeps per page.
PAGE_SHARE: dict[Reading, float] = {"depth": 0.34, "keywords": 0.45, "feedback": 0.45}
PASSAGES_PER_PAGE: dict[Reading, int] = {"depth": 5, "keywords": 3, "feedback": 3}
FEEDBACK_RESULTS, FEEDBACK_TERMS = 5, 4
EXACT_BONUS = 0.5
PARSED_CLAIM_CONFIDENCE = 0.9  # subject read from the dependency parse: less sure than an explicit shape
CONTEXT_BLOCKS, HEADING_CHARS = 6, 80
_END = re.compile(r"[.!?。！？;；]$")


def question_terms(question: str) -> list[str]:
    """The question's content tokens, in order, without repeats."""
    return list(dict.fromkeys(tokenize(question)))


def rare_terms(question: str, limit: int = 4) -> list[str]:
    """The question's most specific terms: identifiers and figures first, then the longest words."""
    words = [w.strip("?？.,、。「」\"'()") for w in question.split()]
    special = [w for w in words if any(c in w for c in "_:/%@-.") or any(c.isdigit() for c in w) or _camel(w)]
    terms = question_terms(question)
    longest = sorted(terms, key=lambda t: (-len(t), terms.index(t)))
    return list(dict.fromkeys([*special, *longest]))[:limit]


def identifiers(question: str) -> list[str]:
    """Words of the question that name something exactly: with symbols, digits or inner capitals."""
    words = [w.strip("?？.,、。「」\"'()") for w in question.split()]
    return [
        w for w in words if len(w) >= 2 and (any(c in w for c in "_:/%@-.") or any(c.isdigit() for c in w) or _camel(w))
    ]


def _camel(word: str) -> bool:
    return any(c.isupper() for c in word[1:]) and any(c.islower() for c in word)


def sub_questions(question: str, reading: Reading) -> list[str]:
    """The queries an agent starts from (before any results): see the module docstring."""
    if reading == "keywords":
        rare = rare_terms(question)
        pairs = [f"{a} {b}" for i, a in enumerate(rare) for b in rare[i + 1 :]][:3]
        return list(dict.fromkeys([" ".join(rare), *pairs])) if rare else [question]
    return [question]


def feedback_query(question: str, results: Sequence[SearchResult]) -> str | None:
    """The question plus the terms its first results' titles and snippets share (pseudo-relevance feedback)."""
    asked = set(question_terms(question))
    counts: Counter[str] = Counter()
    for hit in results[:FEEDBACK_RESULTS]:
        # each term once per hit, in reading order: a tie in counts goes to the term met first (in the
        # better-ranked hit), never to a set's order, which changes from process to process
        counts.update(t for t in dict.fromkeys(tokenize(f"{hit.title} {hit.snippet}")) if t not in asked)
    extra = [t for t, n in counts.most_common() if n >= 2 and len(t) > 2][:FEEDBACK_TERMS]
    return f"{question} {' '.join(extra)}" if extra else None


class PassageRanker:
    """BM25 over the passages an agent read; scores scaled to the best passage (0..1)."""

    def __init__(self, passages: Sequence[str]) -> None:
        self._index = BM25Index([tokenize(p) for p in passages])
        self._passages = list(passages)
        self._count = len(passages)

    def relevance(self, queries: Sequence[str]) -> list[float]:
        """Each passage's best score over the queries, divided by the best passage's score.

        An identifier of the question (``%D``, ``StepLimit``, ``debian/compat``: see :func:`identifiers`)
        found verbatim in a passage adds :data:`EXACT_BONUS`: tokens fold case and drop symbols, so
        ``%D`` and ``%d`` look alike to BM25 but not to a reader."""
        best = [0.0] * self._count
        for query in queries:
            for doc_id, score in self._index.scores(question_terms(query)).items():
                best[doc_id] = max(best[doc_id], score)
        top = max(best, default=0.0)
        scaled = [s / top if top > 0 else 0.0 for s in best]
        exact = [re.compile(rf"(?<![\w%]){re.escape(t)}(?!\w)") for q in queries[:1] for t in identifiers(q)]
        if exact:
            for i, passage in enumerate(self._passages):
                if any(p.search(passage) for p in exact):
                    scaled[i] += EXACT_BONUS
        return scaled


def context_of(text: str, start: int, lookback: int = CONTEXT_BLOCKS) -> str:
    """The lead-in of the passage at ``start``: the nearest earlier block that is a heading (short, no
    end punctuation) or ends with a colon ("Here are the recommended delays:"), at most ``lookback``
    blocks back. List items and table records rarely repeat what they are about; their lead-in does."""
    before = text[:start].rstrip().split("\n")
    for line in [b.strip() for b in reversed(before) if b.strip()][:lookback]:
        if line.endswith((":", "：")) or (len(line) <= HEADING_CHARS and not _END.search(line) and ": " not in line):
            return line
    return ""


def claim_confidence(structured: bool, has_figures: bool, *, parsed: bool = False) -> float:
    """Prior trust in a claim's form: a figure with subject and attribute (read from an explicit shape 1.0,
    from the dependency parse :data:`PARSED_CLAIM_CONFIDENCE`) > a sentence with figures > none."""
    if structured:
        return PARSED_CLAIM_CONFIDENCE if parsed else 1.0
    return 0.8 if has_figures else 0.6


def question_coverage(question: str, texts: Sequence[str]) -> float:
    """Share of the question's terms that the texts contain (0..1): how much of the question they address."""
    terms = set(question_terms(question))
    if not terms:
        return 0.0
    seen: set[str] = set()
    for text in texts:
        seen.update(tokenize(text))
    return len(terms & seen) / len(terms)


__all__ = [
    "CONTEXT_BLOCKS",
    "EXACT_BONUS",
    "FEEDBACK_RESULTS",
    "FEEDBACK_TERMS",
    "HEADING_CHARS",
    "PAGE_SHARE",
    "PARSED_CLAIM_CONFIDENCE",
    "PASSAGES_PER_PAGE",
    "READINGS",
    "PassageRanker",
    "Reading",
    "claim_confidence",
    "context_of",
    "feedback_query",
    "identifiers",
    "question_coverage",
    "question_terms",
    "rare_terms",
    "sub_questions",
]
