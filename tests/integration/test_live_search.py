"""Live web search: runs only with MAGI_NETWORK_TESTS=1 (no network here or in CI)."""

from __future__ import annotations

import pytest

from scrapers.search.chain import FallbackSearchProvider
from scrapers.search.ddgs import DdgsSearchProvider
from scrapers.search.searxng import SearxngSearchProvider
from tests.ports import free_port


@pytest.mark.network
async def test_duckduckgo_returns_ranked_results() -> None:
    results = await DdgsSearchProvider().search("価格転嫁 中小企業", max_results=5)
    assert results and [r.rank for r in results] == list(range(1, len(results) + 1))
    assert all(r.url.startswith("http") and r.provider == "ddgs" for r in results)


@pytest.mark.network
async def test_duckduckgo_news_results_are_dated() -> None:
    provider = DdgsSearchProvider(kind="news", region="jp-jp")
    results = await provider.search("日本銀行 金利", max_results=5, time_range="month")
    assert results and all(r.provider == "ddgs-news" and r.source_type == "news" for r in results)
    assert any(r.published is not None for r in results)


@pytest.mark.network
async def test_fallback_chain_moves_past_a_dead_searxng_to_duckduckgo() -> None:
    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    chain = FallbackSearchProvider([SearxngSearchProvider(dead, attempts=1), DdgsSearchProvider()])
    results = await chain.search("価格転嫁 中小企業", max_results=5)
    assert results and {r.provider for r in results} == {"ddgs"}
    assert chain.last_provider == "ddgs" and chain.last_errors[0][0] == "searxng"
