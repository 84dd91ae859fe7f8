"""Fallback chain: real providers (SearXNG on loopback servers, a local corpus, ddgs with a fake client)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from core.errors import InputError
from scrapers.errors import SearchError
from scrapers.search.base import SearchProvider, SearchResult
from scrapers.search.chain import FallbackSearchProvider
from scrapers.search.ddgs import DdgsSearchProvider
from scrapers.search.local import LocalSearchProvider
from scrapers.search.searxng import SearxngSearchProvider
from tests.unit.test_search_ddgs import Sleeps, fake_ddgs
from tests.unit.test_search_server import Reply, answer, closed_port_url, row, serving


async def _no_sleep(_seconds: float) -> None:
    return None


def searxng(url: str, attempts: int = 1) -> SearxngSearchProvider:
    return SearxngSearchProvider(url, attempts=attempts, sleep=_no_sleep)


@pytest.fixture
def local(tmp_path: Path) -> LocalSearchProvider:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "price.md").write_text(
        "# Price pass-through\n\nSmall firms pass rising costs to customers.\n", encoding="utf-8"
    )
    (corpus / "cats.md").write_text("# Cats\n\nCats sleep most of the day.\n", encoding="utf-8")
    return LocalSearchProvider(corpus)


async def run(chain: FallbackSearchProvider, query: str = "price", **kwargs: Any) -> list[SearchResult]:
    return await chain.search(query, **kwargs)


async def test_failing_searxng_falls_back_to_a_good_searxng() -> None:
    with serving(Reply(500, "boom")) as bad, serving(answer(row(1), row(2))) as good:
        chain = FallbackSearchProvider([searxng(bad.url), searxng(good.url)])
        assert isinstance(chain, SearchProvider)
        results = await run(chain, max_results=2)
    assert [r.url for r in results] == ["https://example.org/1", "https://example.org/2"]
    assert len(bad.requests) == 1 and len(good.requests) == 1
    assert chain.last_provider == "searxng"
    assert [name for name, _ in chain.last_errors] == ["searxng"] and "HTTP 500" in chain.last_errors[0][1]


async def test_failing_searxng_falls_back_to_the_local_corpus(local: LocalSearchProvider) -> None:
    with serving(Reply(403, "Forbidden")) as server:
        chain = FallbackSearchProvider([searxng(server.url), local])
        results = await run(chain)
    assert results and {r.provider for r in results} == {"local"}  # the real provider, not the chain
    assert results[0].url.endswith("price.md")
    assert chain.name == "searxng>local" and chain.last_provider == "local"
    assert chain.last_errors[0][0] == "searxng" and "search.formats" in chain.last_errors[0][1]


async def test_unresponsive_engines_fall_through(local: LocalSearchProvider) -> None:
    with serving(answer(unresponsive=[["google", "CAPTCHA"]])) as server:
        chain = FallbackSearchProvider([searxng(server.url), local])
        assert (await run(chain))[0].provider == "local"
    assert "google (CAPTCHA)" in chain.last_errors[0][1]


async def test_an_empty_answer_from_a_working_provider_is_final(local: LocalSearchProvider) -> None:
    with serving(answer()) as server:
        chain = FallbackSearchProvider([searxng(server.url), local])
        assert await run(chain) == []
    assert chain.last_provider == "searxng" and chain.last_errors == []


async def test_a_flaky_first_provider_recovers_by_retrying(local: LocalSearchProvider) -> None:
    with serving(Reply(503, "starting"), answer(row(7))) as server:
        chain = FallbackSearchProvider([searxng(server.url, attempts=2), local])
        results = await run(chain, max_results=1)
    assert [r.url for r in results] == ["https://example.org/7"]
    assert len(server.requests) == 2 and chain.last_provider == "searxng" and chain.last_errors == []


async def test_ddgs_failing_falls_back_to_searxng() -> None:
    fake = fake_ddgs(RuntimeError("unexpected"))
    with serving(answer(row(3))) as server:
        chain = FallbackSearchProvider([DdgsSearchProvider(ddgs_factory=fake, sleep=Sleeps()), searxng(server.url)])
        results = await run(chain, max_results=1)
    assert results[0].provider == "searxng" and chain.last_errors[0][0] == "ddgs"


async def test_all_failing_lists_every_error_on_one_line() -> None:
    fake = fake_ddgs(ValueError("boom"))
    with serving(Reply(403, "Forbidden")) as forbidden:
        chain = FallbackSearchProvider(
            [
                searxng(forbidden.url),
                searxng(closed_port_url()),
                DdgsSearchProvider(ddgs_factory=fake),
            ]
        )
        with pytest.raises(SearchError) as info:
            await run(chain)
    message = str(info.value)
    assert message.startswith("all 3 search providers failed for 'price': searxng: ")
    assert "HTTP 403" in message and "cannot connect" in message and "ddgs: " in message
    assert "\n" not in message and len(chain.last_errors) == 3 and chain.last_provider is None


async def test_input_errors_are_not_swallowed(local: LocalSearchProvider) -> None:
    with serving(answer(row(1))) as server:
        chain = FallbackSearchProvider([searxng(server.url), local])
        with pytest.raises(InputError):
            await run(chain, time_range="fortnight")
    assert server.requests == []


def test_needs_a_provider() -> None:
    with pytest.raises(ValueError):
        FallbackSearchProvider([])
