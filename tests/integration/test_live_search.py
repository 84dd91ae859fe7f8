"""Live web search: runs only with MAGI_NETWORK_TESTS=1 (no network here or in CI)."""

from __future__ import annotations

import asyncio

import pytest

from scrapers.search.ddgs import DdgsSearchProvider


@pytest.mark.network
def test_duckduckgo_returns_ranked_results() -> None:
    results = asyncio.run(DdgsSearchProvider().search("価格転嫁 中小企業", max_results=5))
    assert results and [r.rank for r in results] == list(range(1, len(results) + 1))
    assert all(r.url.startswith("http") and r.provider == "ddgs" for r in results)
