"""Sentences with offsets, and how on-topic a sentence is.

Claims are sentence-level (``nlp.claims``); agents rank them by the share of topic terms they
contain, so reports lead with on-topic facts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TERM = re.compile(r"[A-Za-z][A-Za-z\-]+|[0-9]+(?:\.[0-9]+)?|[\u3040-\u30ff\u4e00-\u9fff]{2,}")
# Candidate ends: Japanese full stops (closing brackets stay with the sentence), Latin ./!/? before
# a space, and line breaks. Each candidate is then vetted by :func:`_is_end`.
_CANDIDATE_END = re.compile(r"[。！？]+[」』）)]*|[!?.]+[\"'”’)\]]*(?=\s)|\n[ \t\u3000]*\n\s*|\n")
# Words that end with a period without ending the sentence ("e.g. PostgreSQL", "Dr. Smith", "vs. 9.6").
ABBREVIATIONS = frozenset(
    {"e.g", "i.e", "etc", "cf", "vs", "viz", "al", "approx", "ca", "dr", "mr", "mrs", "ms", "prof", "st", "jr",
     "sr", "inc", "ltd", "co", "corp", "sect", "resp", "esp", "incl", "u.s", "u.k", "e.u", "ph.d"}
)  # fmt: skip
# Abbreviations only before a number ("No. 5", "Fig. 3", "Sept. 2024"): elsewhere the word ends a sentence.
NUMBER_ABBREVIATIONS = frozenset(
    {"no", "nos", "vol", "fig", "figs", "sec", "ch", "chap", "eq", "pp", "p", "art", "ref", "rev", "ed", "jan",
     "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec"}
)  # fmt: skip
_OPEN_JA, _CLOSE_JA = "「『（(", "」』）)"
_SECTION_NUMBER = re.compile(
    r"(?:(?:Chapter|Section|Part|Appendix|Table|Figure|Example|Step|Chap|Sec)\.?\s+)?"
    r"(?:\d{1,3}|[A-Z])(?:\.\d{1,3})*\.$",
    re.IGNORECASE,
)
_LAST_WORD = re.compile(r"([A-Za-z][A-Za-z.]*)\.$")
_LINE_END = re.compile(r"[。！？!?.:：;；」』]$")
_LIST_START = re.compile(r"^(?:[-*•・●○■□▪‣]|\d{1,3}[.)]|[a-z][.)]|#{1,6})\s")
_JA_CHAR = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")
# A table row rendered as a record: "Name: x; Default: 8; Description: ..." (scrapers.structure)
_RECORD = re.compile(r"^[^:;\n]{1,80}: [^\n]*?; [^:;\n]{1,80}: ")


@dataclass(frozen=True)
class Sentence:
    text: str
    start: int
    end: int


def _in_code_span(text: str, start: int, pos: int) -> bool:
    """Whether ``pos`` is inside a backtick code span opened since ``start``."""
    return text.count("`", start, pos) % 2 == 1


def _is_end(text: str, start: int, match: re.Match[str]) -> bool:
    """Whether a candidate end really ends the sentence that began at ``start``."""
    piece = match.group()
    if piece.startswith("\n"):
        if piece.count("\n") >= 2:
            return True  # a blank line: a block boundary
        line = text[start : match.start()].rstrip()
        following = text[match.end() : match.end() + 80]
        if not line or not following.strip():
            return True
        if _LINE_END.search(line) or _LIST_START.match(following) or _RECORD.match(following):
            return True
        last_line = line.rsplit("\n", 1)[-1]
        if _JA_CHAR.search(last_line[-1:]) and _JA_CHAR.match(following):
            return len(last_line) < 12  # a short unpunctuated line is a heading; a long one wraps
        # Latin text: a line that wraps continues in lower case (or with a figure, a code span, a bracket)
        return not re.match(r"[a-z0-9(`\"'“]", following)
    if _in_code_span(text, start, match.start()):
        return False
    following = text[match.end() : match.end() + 3].lstrip()
    if piece[0] in "。！？":
        opened = sum(text.count(c, start, match.start()) for c in _OPEN_JA)
        closed = sum(text.count(c, start, match.end()) for c in _CLOSE_JA)
        if opened > closed:
            return False  # inside a quotation: 「終了。次へ」
        # a quoted sentence inside a sentence: 「終了。」と述べた
        return not (piece[-1] in _CLOSE_JA and _JA_CHAR.match(text[match.end() : match.end() + 1]))
    if piece[0] == "." and _SECTION_NUMBER.match(text, start, match.start() + 1):
        return False  # a section number opening a heading or a line: "6.1. Complete build", "Chapter 4. Files"
    if piece[0] == ".":
        word = _LAST_WORD.search(text[max(start, match.start() - 20) : match.start() + 1])
        if word:
            lowered = word.group(1).lower()
            if lowered in ABBREVIATIONS or (len(lowered) == 1 and word.group(1).isupper()):
                return False  # an abbreviation or an initial ("J. Smith")
            if lowered in NUMBER_ABBREVIATIONS and following[:1].isdigit():
                return False
        if following[:1].islower():
            return False  # "e.g. foo", "approx. ten": a lower-case continuation is not a new sentence
    return True


def split_sentences(text: str) -> list[Sentence]:
    """Split Japanese and English prose into sentences, keeping character offsets.

    Never at an abbreviation or an initial, inside a backtick code span, or at a line break inside a
    sentence (a wrapped line); always at a blank line (a block boundary) and at the end of a line
    that ends with punctuation, precedes a list item, or is a heading. A table record line
    (``key: value; key: value``) is one sentence whatever punctuation its cells hold.
    """
    out: list[Sentence] = []
    pos = 0
    line_end = -1
    for match in _CANDIDATE_END.finditer(text):
        if match.start() < pos:
            continue
        if match.start() < line_end and not match.group().startswith("\n"):
            continue  # inside a record line
        if line_end < match.start() and _RECORD.match(text, pos):
            newline = text.find("\n", pos)
            line_end = len(text) if newline < 0 else newline
            if match.start() < line_end:
                continue
        if not _is_end(text, pos, match):
            continue
        _append(out, text, pos, match.end())
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
    "ABBREVIATIONS",
    "NUMBER_ABBREVIATIONS",
    "Sentence",
    "relevance",
    "split_sentences",
    "topic_terms",
]
