"""Okapi BM25 over pre-tokenised documents: small, dependency-free and deterministic."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence


class BM25Index:
    """Inverted index with BM25 scoring (Lucene's always-positive idf)."""

    def __init__(self, documents: Iterable[Sequence[str]], *, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self.postings: dict[str, list[tuple[int, int]]] = {}
        self.lengths: list[int] = []
        for doc_id, tokens in enumerate(documents):
            self.lengths.append(len(tokens))
            for term, tf in Counter(tokens).items():
                self.postings.setdefault(term, []).append((doc_id, tf))
        self.avgdl = (sum(self.lengths) / len(self.lengths)) if self.lengths else 0.0

    def __len__(self) -> int:
        return len(self.lengths)

    def idf(self, term: str) -> float:
        """ln(1 + (N - df + 0.5) / (df + 0.5)); 0 for a term no document has."""
        df = len(self.postings.get(term, ()))
        if not df:
            return 0.0
        return math.log(1.0 + (len(self.lengths) - df + 0.5) / (df + 0.5))

    def scores(self, terms: Iterable[str]) -> dict[int, float]:
        """BM25 score of every document holding at least one of ``terms`` (each term counted once)."""
        out: dict[int, float] = {}
        k1, b, avgdl = self.k1, self.b, self.avgdl or 1.0
        for term in dict.fromkeys(terms):
            idf = self.idf(term)
            for doc_id, tf in self.postings.get(term, ()):
                norm = k1 * (1.0 - b + b * self.lengths[doc_id] / avgdl)
                out[doc_id] = out.get(doc_id, 0.0) + idf * tf * (k1 + 1.0) / (tf + norm)
        return out


__all__ = [
    "BM25Index",
]
