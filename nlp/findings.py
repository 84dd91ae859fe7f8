"""Sentences with offsets, and how on-topic a sentence is.

Claims are sentence-level (``nlp.claims``); agents rank them by the share of topic terms they
contain, so reports lead with on-topic facts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SENTENCE_END = re.compile(r"(?<=[。！？!?])\s*|(?<=[.])\s+(?=[A-Z0-9\"“])|\n+")
_TERM = re.compile(r"[A-Za-z][A-Za-z\-]+|[0-9]+(?:\.[0-9]+)?|[\u3040-\u30ff\u4e00-\u9fff]{2,}")


@dataclass(frozen=True)
class Sentence:
    text: str
    start: int
    end: int


def split_sentences(text: str) -> list[Sentence]:
    """Split Japanese and English prose into sentences, keeping character offsets."""
    out: list[Sentence] = []
    pos = 0
    for match in _SENTENCE_END.finditer(text):
        if match.start() > pos:
            _append(out, text, pos, match.start())
        pos = match.end()
    if pos < len(text):
        _append(out, text, pos, len(text))
    return out


def _append(out: list[Sentence], text: str, start: int, end: int) -> None:
    chunk = text[start:end]
    stripped = chunk.strip()
    if stripped:
        offset = start + chunk.index(stripped)
        out.append(Sentence(stripped, offset, offset + len(stripped)))


def topic_terms(topic: str) -> set[str]:
    """Terms of a topic: Latin words, numbers and runs of 2+ kanji/kana, plus their 2-char pieces."""
    terms: set[str] = set()
    for term in _TERM.findall(topic.lower()):
        terms.add(term)
        if len(term) > 2 and not term.isascii():
            terms.update(term[i : i + 2] for i in range(len(term) - 1))
    return terms


def relevance(sentence: str, terms: set[str]) -> float:
    """Share of topic terms found in the sentence (0..1)."""
    if not terms:
        return 0.0
    lowered = sentence.lower()
    return sum(1 for t in terms if t in lowered) / len(terms)


__all__ = [
    "Sentence",
    "relevance",
    "split_sentences",
    "topic_terms",
]
