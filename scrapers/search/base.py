"""What every search provider returns, so that research code never depends on a particular backend."""

from __future__ import annotations

from datetime import date
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, Field


class SearchResult(BaseModel):
    """One hit: where it is, how it looks in a result list, and which provider ranked it where."""

    url: str
    title: str
    snippet: str
    published: date | None = None
    provider: str
    rank: int = Field(ge=1, description="1-based position in the provider's answer.")
    score: float = 0.0
    source_type: str | None = None
    lang: str | None = None


@runtime_checkable
class SearchProvider(Protocol):
    """A search backend (local corpus, DDGS, SearXNG...): one async call, typed results."""

    name: str

    async def search(
        self,
        query: str,
        *,
        max_results: int = 10,
        time_range: str | None = None,
        region: str | None = None,
    ) -> list[SearchResult]: ...
