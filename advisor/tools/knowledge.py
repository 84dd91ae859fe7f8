"""``search_knowledge_base``: passages of the law, guidelines, surveys and formulas, each with its source."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from pydantic import BaseModel, Field

from advisor.kb.ingest import ingest_folder
from advisor.kb.retriever import knowledge_base
from advisor.tools.base import ToolContext, ToolInput

NAME = "search_knowledge_base"


class KnowledgeInput(ToolInput):
    query: str = Field(min_length=1, max_length=500)
    category: Literal["law", "guideline", "case_study", "calculation_formula"] | None = None
    top_k: int = Field(5, ge=1, le=20)


class KnowledgeResult(BaseModel):
    content: str
    source: str
    relevance_score: float
    metadata: dict[str, Any]


class KnowledgeOutput(BaseModel):
    results: list[KnowledgeResult]
    retrieval: str = Field(description="How the results were ranked.")


def search(data: KnowledgeInput, ctx: ToolContext) -> KnowledgeOutput:
    kb = knowledge_base(ingest_folder(ctx.settings))
    hits = kb.search(data.query, data.top_k, data.category)
    results = [
        KnowledgeResult(
            content=h.chunk.content,
            source=h.chunk.source,
            relevance_score=h.score,
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
    return KnowledgeOutput(results=results, retrieval="BM25 (SudachiPy tokens); no dense embedding configured")


async def run(data: KnowledgeInput, ctx: ToolContext) -> KnowledgeOutput:
    return await asyncio.to_thread(search, data, ctx)


DESCRIPTION = (
    "法務知識ベース検索: 取適法（2026年1月施行、旧下請法）、独占禁止法の優越的地位の濫用、労務費転嫁指針の12の行動、"
    "パートナーシップ構築宣言、価格交渉促進月間の調査結果、計算式を検索します。結果には必ず出典URLが付きます。"
    "category: law / guideline / case_study / calculation_formula。"
)

__all__ = ["DESCRIPTION", "NAME", "KnowledgeInput", "KnowledgeOutput", "KnowledgeResult", "run", "search"]
