"""Retrieval quality of the advisor's knowledge base on questions written for it.

``tests/data/advisor/kb_questions.jsonl``: one ``{"question", "relevant": [chunk ids]}`` per line.
Prints JSON: recall@5 (share of questions with a relevant chunk in the top 5), MRR (mean of 1/rank
of the first relevant chunk, 0 when none in the top 10), per question the rank found, and the same
figures for a baseline measured in the same run: character-bigram overlap, the ranking one would
get without a Japanese tokenizer.

    .venv/bin/python benchmarks/kb_eval.py
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from advisor.kb.retriever import index_text, knowledge_base

QUESTIONS = Path(__file__).resolve().parent.parent / "tests" / "data" / "advisor" / "kb_questions.jsonl"
DEPTH = 10


def bigrams(text: str) -> Counter[str]:
    clean = "".join(ch for ch in text if not ch.isspace())
    return Counter(clean[i : i + 2] for i in range(len(clean) - 1))


def scores(ranks: list[int | None]) -> dict[str, float]:
    n = len(ranks)
    return {
        "recall_at_1": round(sum(1 for r in ranks if r is not None and r <= 1) / n, 4),
        "recall_at_5": round(sum(1 for r in ranks if r is not None and r <= 5) / n, 4),
        "mrr": round(sum(1 / r for r in ranks if r is not None) / n, 4),
    }


def main() -> None:
    kb = knowledge_base()
    rows = [json.loads(line) for line in QUESTIONS.read_text(encoding="utf-8").splitlines() if line.strip()]
    known = {c.id for c in kb.chunks}
    for row in rows:
        unknown = set(row["relevant"]) - known
        if unknown:
            raise SystemExit(f"{QUESTIONS}: {row['question']!r} names unknown chunks {sorted(unknown)}")
    grams = [bigrams(index_text(c)) for c in kb.chunks]
    bm25_ranks: list[int | None] = []
    base_ranks: list[int | None] = []
    detail = []
    for row in rows:
        relevant = set(row["relevant"])
        hits = [h.chunk.id for h in kb.search(row["question"], DEPTH)]
        rank = next((i for i, cid in enumerate(hits, start=1) if cid in relevant), None)
        q = bigrams(row["question"])
        overlap = sorted(range(len(kb.chunks)), key=lambda i: (-sum((q & grams[i]).values()), kb.chunks[i].id))
        base = next((i for i, idx in enumerate(overlap[:DEPTH], start=1) if kb.chunks[idx].id in relevant), None)
        bm25_ranks.append(rank)
        base_ranks.append(base)
        detail.append({"question": row["question"], "rank": rank, "baseline_rank": base, "top": hits[:3]})
    bm25, base = scores(bm25_ranks), scores(base_ranks)
    print(
        json.dumps(
            {
                "questions": len(rows),
                "chunks": len(kb.chunks),
                "retriever": "BM25 over SudachiPy tokens (no dense embedding)",
                "bm25": bm25,
                "baseline_char_bigrams": base,
                "recall_at_5_ratio": round(bm25["recall_at_5"] / base["recall_at_5"], 3)
                if base["recall_at_5"]
                else None,
                "misses_at_5": [d for d in detail if d["rank"] is None or d["rank"] > 5],
                "per_question": detail,
            },
            ensure_ascii=False,
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
