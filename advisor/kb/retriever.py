"""Retrieval over the chunks: BM25 on SudachiPy tokens, fused with a dense scorer when one is given.

No dense scorer ships: the only local embedding model packaged here (all-MiniLM-L6-v2) is
English-only and needs torch, which would weigh more than the rest of the project for a worse
Japanese ranking than BM25. ``DenseScorer`` is the slot a sound Japanese embedding would fill; with
one, scores are fused as ``(1 - dense_weight) * bm25 + dense_weight * dense``, each normalised to 0-1.

The ranking says which passage is best, not whether any is good: the scores are relative to the top
hit, so the best passage for a question about something the knowledge base never mentions (補助金)
still scores 1.0. **Coverage** is the absolute measure: the share of the question's subject (its
nouns, each weighted by its idf; a noun no passage uses weighs as much as the rarest term, since it
is exactly what the knowledge base lacks) that the passage holds. A hit below ``min_coverage`` is no
answer to the question, however it ranks.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from advisor.kb.documents import Chunk, load_folder
from core.resources import data_path
from core.text.tokenize import noun_tokens, tokenize
from scrapers.search.bm25 import BM25Index


class DenseScorer(Protocol):
    """Similarity of the query to every chunk (same order as the chunks), 0-1."""

    def scores(self, query: str, chunks: Sequence[Chunk]) -> list[float]: ...


def index_text(chunk: Chunk) -> str:
    """What is indexed: the text plus its document, section and law names (they carry the keywords)."""
    names = " ".join(n for n in (chunk.document, chunk.section, chunk.law, chunk.guideline) if n)
    return f"{names}\n{chunk.content}"


@dataclass(frozen=True)
class Hit:
    chunk: Chunk
    score: float
    coverage: float = 1.0  # share of the question's subject the passage holds (see the module docstring)


class KnowledgeBase:
    def __init__(self, chunks: Sequence[Chunk], dense: DenseScorer | None = None, dense_weight: float = 0.5) -> None:
        self.chunks = list(chunks)
        self.dense = dense
        self.dense_weight = dense_weight
        tokens = [tokenize(index_text(c)) for c in self.chunks]
        self._index = BM25Index(tokens)
        self._unknown_weight = math.log(1.0 + (len(self.chunks) + 0.5) / 0.5)  # idf of a term no passage has

    def _weight(self, term: str) -> float:
        return self._index.idf(term) if term in self._index.postings else self._unknown_weight

    def coverage(self, query: str) -> dict[int, float]:
        """Per passage, the share of the query's nouns (idf-weighted) it holds (all its terms when the
        query has no noun); passages holding none are left out."""
        subject = {t: self._weight(t) for t in dict.fromkeys(noun_tokens(query) or tokenize(query))}
        total = sum(subject.values())
        found: dict[int, float] = {}
        for term, weight in subject.items():
            for doc_id, _ in self._index.postings.get(term, ()):
                found[doc_id] = found.get(doc_id, 0.0) + weight / total
        return found

    def search(self, query: str, top_k: int = 5, category: str | None = None, min_coverage: float = 0.0) -> list[Hit]:
        """The ``top_k`` best passages that hold at least ``min_coverage`` of the question's subject."""
        raw = self._index.scores(tokenize(query))
        top = max(raw.values(), default=0.0) or 1.0
        fused = {i: s / top for i, s in raw.items()}
        if self.dense is not None:
            dense = self.dense.scores(query, self.chunks)
            w = self.dense_weight
            fused = {i: (1 - w) * fused.get(i, 0.0) + w * dense[i] for i in range(len(self.chunks))}
        ranked = sorted(
            (i for i in fused if fused[i] > 0 and (category is None or self.chunks[i].category == category)),
            key=lambda i: (-fused[i], self.chunks[i].id),
        )
        covered = self.coverage(query)
        hits = (Hit(self.chunks[i], round(fused[i], 4), round(covered.get(i, 0.0), 4)) for i in ranked)
        return [h for h in hits if h.coverage >= min_coverage][:top_k]


_CACHE: dict[tuple[str, ...], tuple[tuple[float, ...], KnowledgeBase]] = {}
_LOCK = threading.Lock()


def _stamp(folders: Sequence[Path]) -> tuple[float, ...]:
    return tuple(p.stat().st_mtime for f in folders if f.is_dir() for p in sorted(f.glob("*.md")))


def shipped_folder() -> Path:
    return data_path("kb")


def knowledge_base(extra: Path | None = None) -> KnowledgeBase:
    """The shipped documents plus ``extra`` (ingested ones), rebuilt when a file changes."""
    folders = [shipped_folder(), *([extra] if extra is not None else [])]
    key = tuple(str(f) for f in folders)
    stamp = _stamp(folders)
    with _LOCK:
        cached = _CACHE.get(key)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        chunks = [c for f in folders for c in load_folder(f)]
        kb = KnowledgeBase(chunks)
        _CACHE[key] = (stamp, kb)
        return kb


__all__ = ["DenseScorer", "Hit", "KnowledgeBase", "index_text", "knowledge_base", "shipped_folder"]
