"""``search_knowledge_base``: passages of the law, guidelines, surveys and formulas, each with its source."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from pydantic import BaseModel, Field

from advisor.kb.ingest import ingest_folder
from advisor.kb.retriever import knowledge_base
from advisor.labels import labels
from advisor.tools.base import ToolContext, ToolInput

NAME = "search_knowledge_base"


class KnowledgeInput(ToolInput):
    query: str = Field(min_length=1, max_length=500)
    category: Literal["law", "guideline", "case_study", "calculation_formula"] | None = None
    top_k: int = Field(5, ge=1, le=20)


class KnowledgeResult(BaseModel):
    content: str
    source: str
    relevance_score: float = Field(description="Rank score relative to the best passage (1.0 for the best).")
    coverage: float = Field(description="Share of the question's subject the passage holds (absolute, 0-1).")
    metadata: dict[str, Any]


class KnowledgeOutput(BaseModel):
    results: list[KnowledgeResult]
    retrieval: str = Field(description="How the results were ranked.")
    note: str = Field("", description="Said when no passage holds enough of the question: answer from nothing here.")


def search(data: KnowledgeInput, ctx: ToolContext) -> KnowledgeOutput:
    kb = knowledge_base(ingest_folder(ctx.settings))
    floor = ctx.section.kb_min_coverage
    hits = kb.search(data.query, data.top_k, data.category, min_coverage=floor)
    results = [
        KnowledgeResult(
            content=h.chunk.content,
            source=h.chunk.source,
            relevance_score=h.score,
            coverage=h.coverage,
            metadata={
                "id": h.chunk.id,
                "document": h.chunk.document,
                "section": h.chunk.section,
                "category": h.chunk.category,
                "law": h.chunk.law,
                "guideline": h.chunk.guideline,
            },
        )
        for h in hits
    ]
    return KnowledgeOutput(
        results=results,
        retrieval=f"BM25 (SudachiPy tokens), passages holding at least {floor:.0%} of the question's subject",
        note="" if results else labels().notices["kb_nothing"],
    )


async def run(data: KnowledgeInput, ctx: ToolContext) -> KnowledgeOutput:
    return await asyncio.to_thread(search, data, ctx)


DESCRIPTION = (
    "法務知識ベース検索: 取適法（2026年1月施行、旧下請法）、独占禁止法の優越的地位の濫用、労務費転嫁指針の12の行動、"
    "パートナーシップ構築宣言、価格交渉促進月間の調査結果、計算式を検索します。結果には必ず出典URLが付きます。"
    "category: law / guideline / case_study / calculation_formula。質問に当てはまる情報がないときは results が空で、"
    "note にそう書かれます（そのときは知識ベースに情報がないと伝え、関係のない出典を挙げないこと）。"
)

__all__ = ["DESCRIPTION", "NAME", "KnowledgeInput", "KnowledgeOutput", "KnowledgeResult", "run", "search"]
