"""A short passage around the densest cluster of query words, so a reader sees why a page matched."""

from __future__ import annotations

import re
from collections.abc import Mapping

MAX_CHARS = 200
_MAX_HITS = 400
_SENTENCE_END = re.compile(r"[。！？!?\n]|\.\s")


def _hits(lower: str, weights: Mapping[str, float]) -> list[tuple[int, str]]:
    hits: list[tuple[int, str]] = []
    for needle in weights:
        if needle.isascii():
            pattern = re.compile(rf"(?<![a-z0-9]){re.escape(needle)}")
        else:
            pattern = re.compile(re.escape(needle))
        hits.extend((m.start(), needle) for _, m in zip(range(_MAX_HITS), pattern.finditer(lower), strict=False))
    return sorted(hits)


def snippet(text: str, weights: Mapping[str, float], max_chars: int = MAX_CHARS) -> str:
    """At most ``max_chars`` of ``text`` around the window holding the most query weight.

    ``weights`` maps lowercased needles (token surfaces and forms) to their idf.
    """
    weights = {k.lower(): v for k, v in weights.items() if k}
    hits = _hits(text.lower(), weights)
    window = max_chars - 40
    best, best_score = 0, -1.0
    for i, (pos, _) in enumerate(hits):
        seen: set[str] = set()
        score = 0.0
        for other_pos, needle in hits[i:]:
            if other_pos - pos > window:
                break
            if needle not in seen:
                seen.add(needle)
                score += weights.get(needle, 0.0) or 1e-6
        if score > best_score:
            best, best_score = pos, score
    start = max(0, best - 30)
    if best:
        ends = [m.end() for m in _SENTENCE_END.finditer(text, max(0, best - 60), best)]
        start = ends[-1] if ends else start
    body = max_chars - (1 if start else 0)
    piece = text[start : start + body]
    more = start + body < len(text)
    if more:
        piece = piece[:-1]
    piece = " ".join(piece.split())
    return ("…" if start else "") + piece + ("…" if more else "")


__all__ = [
    "MAX_CHARS",
    "snippet",
]
