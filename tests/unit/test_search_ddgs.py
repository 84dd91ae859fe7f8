"""ddgs provider with a stand-in for the ``DDGS`` client (the public-internet boundary): backoff,
errors, news dates and time ranges. Everything else is the real provider code."""

from __future__ import annotations

import time
from datetime import date
from typing import Any, ClassVar

import pytest
from ddgs.exceptions import DDGSException, RatelimitException, TimeoutException

from core.errors import InputError
from scrapers.errors import SearchError
from scrapers.search.base import SearchProvider, SearchResult
from scrapers.search.ddgs import DdgsSearchProvider

TEXT_ROWS = [
    {"title": "価格転嫁の現状", "href": "https://example.jp/a", "body": "中小企業の価格転嫁率は..."},
    {"title": "no link", "href": "", "body": "skipped"},
    {"title": "Dup", "href": "https://example.jp/a", "body": "same URL again"},
    {"title": "Second", "href": "https://example.jp/b", "body": "another"},
]
NEWS_ROWS = [
    {
        "date": "2024-11-29T09:00:00+00:00",
        "title": "Price pass-through",
        "body": "Survey...",
        "url": "https://news.example.jp/1",
        "image": "",
        "source": "Example News",
    },
    {"date": "3 days ago", "title": "Undated", "body": "...", "url": "https://news.example.jp/2", "source": "X"},
]


def fake_ddgs(*steps: Exception | list[dict[str, Any]] | float) -> type[Any]:
    """A ``DDGS`` class whose calls follow ``steps`` (raise / return rows / sleep seconds); the last repeats."""

    class FakeDDGS:
        calls: ClassVar[list[dict[str, Any]]] = []
        timeouts: ClassVar[list[int | None]] = []

        def __init__(self, timeout: int | None = 5) -> None:
            FakeDDGS.timeouts.append(timeout)

        def _next(self, method: str, query: str, kwargs: dict[str, Any]) -> list[dict[str, Any]]:
            FakeDDGS.calls.append({"method": method, "query": query, **kwargs})
            step = steps[min(len(FakeDDGS.calls), len(steps)) - 1]
            if isinstance(step, Exception):
                raise step
            if isinstance(step, float):
                time.sleep(step)
                return []
            return step

        def text(self, query: str, **kwargs: Any) -> list[dict[str, Any]]:
            return self._next("text", query, kwargs)

        def news(self, query: str, **kwargs: Any) -> list[dict[str, Any]]:
            return self._next("news", query, kwargs)

    return FakeDDGS


class Sleeps(list[float]):
    async def __call__(self, seconds: float) -> None:
        self.append(seconds)


async def run(provider: DdgsSearchProvider, query: str = "価格転嫁", **kwargs: Any) -> list[SearchResult]:
    return await provider.search(query, **kwargs)


async def test_backoff_then_success() -> None:
    fake = fake_ddgs(RatelimitException("429 Too Many Requests"), TimeoutException("timed out"), TEXT_ROWS)
    sleeps = Sleeps()
    provider = DdgsSearchProvider(
        ddgs_factory=fake, attempts=3, backoff_s=1.0, backoff_max_s=8.0, sleep=sleeps, timeout_s=7
    )
    assert isinstance(provider, SearchProvider)
    results = await run(provider, max_results=5)
    assert [r.url for r in results] == ["https://example.jp/a", "https://example.jp/b"]
    assert [r.rank for r in results] == [1, 2] and {r.provider for r in results} == {"ddgs"}
    assert results[0].title == "価格転嫁の現状" and results[0].snippet.startswith("中小企業")
    assert len(fake.calls) == 3 and fake.timeouts == [7, 7, 7]
    assert len(sleeps) == 2 and 0.5 <= sleeps[0] <= 1.0 and 1.0 <= sleeps[1] <= 2.0  # exponential, jittered


async def test_all_attempts_failing_is_a_search_error_that_says_what_to_do() -> None:
    fake = fake_ddgs(DDGSException("https://lite.duckduckgo.com/lite/ 202 Ratelimit"))
    sleeps = Sleeps()
    provider = DdgsSearchProvider(ddgs_factory=fake, attempts=3, backoff_s=2.0, backoff_max_s=3.0, sleep=sleeps)
    with pytest.raises(SearchError) as info:
        await run(provider)
    message = str(info.value)
    assert "failed after 3 attempts" in message and "rate-limited" in message
    assert "MAGI_SEARCH_DDGS_BACKEND" in message and "--corpus" in message and "\n" not in message
    assert len(fake.calls) == 3 and len(sleeps) == 2 and sleeps[1] <= 3.0  # capped


async def test_timeouts_are_named() -> None:
    fake = fake_ddgs(TimeoutException("https://html.duckduckgo.com/html operation timed out"))
    with pytest.raises(SearchError, match="timed out"):
        await run(DdgsSearchProvider(ddgs_factory=fake, attempts=2, sleep=Sleeps()))


async def test_a_call_past_the_deadline_is_abandoned_and_retried() -> None:
    fake = fake_ddgs(0.5, TEXT_ROWS)
    provider = DdgsSearchProvider(ddgs_factory=fake, attempts=2, deadline_s=0.05, sleep=Sleeps())
    assert [r.url for r in await run(provider)] == ["https://example.jp/a", "https://example.jp/b"]
    fake_slow = fake_ddgs(0.3)
    with pytest.raises(SearchError, match=r"no answer within 0\.05 s"):
        await run(DdgsSearchProvider(ddgs_factory=fake_slow, attempts=2, deadline_s=0.05, sleep=Sleeps()))


async def test_no_results_found_is_an_empty_answer_not_retried() -> None:
    fake = fake_ddgs(DDGSException("No results found."))
    assert await run(DdgsSearchProvider(ddgs_factory=fake, sleep=Sleeps())) == []
    assert len(fake.calls) == 1


async def test_unexpected_errors_are_not_retried() -> None:
    fake = fake_ddgs(ValueError("bad region"))
    with pytest.raises(SearchError, match="ValueError: bad region"):
        await run(DdgsSearchProvider(ddgs_factory=fake, sleep=Sleeps()))
    assert len(fake.calls) == 1


async def test_news_results_carry_dates_and_the_news_source_type() -> None:
    fake = fake_ddgs(NEWS_ROWS)
    provider = DdgsSearchProvider(kind="news", ddgs_factory=fake, sleep=Sleeps())
    results = await run(provider)
    assert fake.calls[0]["method"] == "news"
    assert provider.name == "ddgs-news" and {r.provider for r in results} == {"ddgs-news"}
    assert [r.url for r in results] == ["https://news.example.jp/1", "https://news.example.jp/2"]
    assert results[0].published == date(2024, 11, 29) and results[1].published is None
    assert {r.source_type for r in results} == {"news"}


@pytest.mark.parametrize(
    ("time_range", "timelimit"),
    [
        (None, None),
        ("all", None),
        ("d", "d"),
        ("day", "d"),
        ("week", "w"),
        ("M", "m"),
        ("year", "y"),
    ],
)
async def test_time_range_maps_to_timelimit(time_range: str | None, timelimit: str | None) -> None:
    fake = fake_ddgs(TEXT_ROWS)
    await run(DdgsSearchProvider(ddgs_factory=fake, sleep=Sleeps()), time_range=time_range)
    assert fake.calls[0]["timelimit"] == timelimit


async def test_bad_time_range_is_an_input_error_without_calling_ddgs() -> None:
    fake = fake_ddgs(TEXT_ROWS)
    with pytest.raises(InputError, match="fortnight"):
        await run(DdgsSearchProvider(ddgs_factory=fake), time_range="fortnight")
    assert fake.calls == []


async def test_region_backend_and_max_results_reach_ddgs() -> None:
    fake = fake_ddgs(TEXT_ROWS)
    provider = DdgsSearchProvider(ddgs_factory=fake, region="us-en", backend="bing,brave", sleep=Sleeps())
    assert [r.url for r in await run(provider, max_results=1)] == ["https://example.jp/a"]
    await run(provider, region="wt-wt")
    assert [(c["region"], c["backend"], c["max_results"]) for c in fake.calls] == [
        ("us-en", "bing,brave", 1),
        ("wt-wt", "bing,brave", 10),
    ]
    assert provider.cache_identity == "ddgs:bing,brave:us-en"


def test_unknown_kind_is_rejected() -> None:
    with pytest.raises(ValueError, match="kind"):
        DdgsSearchProvider(kind="images")  # type: ignore[arg-type]
