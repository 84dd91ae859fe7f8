"""Split long texts into model-sized chunks on paragraph, then line, then sentence boundaries.

Sudachi (GiNZA's tokenizer) refuses inputs over 49,149 UTF-8 bytes, so long documents are cut
where an entity is unlikely to straddle the cut, and every chunk keeps its character offset so
that entity spans can be moved back onto the original text.
"""

from __future__ import annotations

import re

# Coarse to fine: blank lines, line breaks, sentence ends (Japanese and Latin punctuation).
_BOUNDARIES = (
    re.compile(r"\n[ \t\u3000]*\n\s*"),
    re.compile(r"\n\s*"),
    re.compile(r"(?<=[。！？!?．])[ \t\u3000」』）)]*|(?<=\.)\s+"),
)


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


def _split_at(text: str, start: int, end: int, pattern: re.Pattern[str]) -> list[tuple[int, int]]:
    """Cut ``text[start:end]`` right after every match of ``pattern``."""
    pieces: list[tuple[int, int]] = []
    cut = start
    for match in pattern.finditer(text, start, end):
        if match.end() > cut and match.end() < end:
            pieces.append((cut, match.end()))
            cut = match.end()
    pieces.append((cut, end))
    return pieces


def _pieces(text: str, start: int, end: int, max_bytes: int, level: int) -> list[tuple[int, int]]:
    """Spans covering ``text[start:end]``, each at most ``max_bytes``, cut as coarsely as possible."""
    if _size(text[start:end]) <= max_bytes:
        return [(start, end)]
    if level == len(_BOUNDARIES):
        step = max(1, max_bytes // 4)  # a character is at most 4 bytes: a hard cut, the last resort
        return [(i, min(i + step, end)) for i in range(start, end, step)]
    spans: list[tuple[int, int]] = []
    for s, e in _split_at(text, start, end, _BOUNDARIES[level]):
        spans.extend(_pieces(text, s, e, max_bytes, level + 1))
    return spans


def split_text(text: str, max_bytes: int) -> list[tuple[int, str]]:
    """``(offset, chunk)`` pairs that concatenate back to ``text``; each chunk fits ``max_bytes``.

    Neighbouring pieces are packed greedily so that the model sees as few, as large chunks as allowed.
    """
    if _size(text) <= max_bytes:
        return [(0, text)]
    chunks: list[tuple[int, str]] = []
    cur_start, cur_end, cur_bytes = 0, 0, 0
    for s, e in _pieces(text, 0, len(text), max_bytes, 0):
        size = _size(text[s:e])
        if cur_end > cur_start and cur_bytes + size > max_bytes:
            chunks.append((cur_start, text[cur_start:cur_end]))
            cur_start, cur_bytes = s, 0
        cur_end = e
        cur_bytes += size
    chunks.append((cur_start, text[cur_start:cur_end]))
    return chunks


__all__ = [
    "split_text",
]
