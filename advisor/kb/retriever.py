"""Retrieval over the chunks: BM25 on SudachiPy tokens, fused with a dense scorer when one is given.

No dense scorer ships: the only local embedding model packaged here (all-MiniLM-L6-v2) is
English-only and needs torch, which would weigh more than the rest of the project for a worse
Japanese ranking than BM25. ``DenseScorer`` is the slot a sound Japanese embedding would fill; with
one, scores are fused as ``(1 - dense_weight) * bm25 + dense_weight * dense``, each normalised to 0-1.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from advisor.kb.documents import Chunk, load_folder
from core.resources import data_path
from core.text.tokenize import tokenize
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


class KnowledgeBase:
    def __init__(self, chunks: Sequence[Chunk], dense: DenseScorer | None = None, dense_weight: float = 0.5) -> None:
        self.chunks = list(chunks)
        self.dense = dense
        self.dense_weight = dense_weight
        self._index = BM25Index([tokenize(index_text(c)) for c in self.chunks])

    def search(self, query: str, top_k: int = 5, category: str | None = None) -> list[Hit]:
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
        return [Hit(self.chunks[i], round(fused[i], 4)) for i in ranked[:top_k]]


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
