"""SearXNG provider against a real loopback HTTP server: parsing, paging, refusals and outages."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from core.errors import ConfigError, InputError
from scrapers.errors import SearchError
from scrapers.search.base import SearchProvider, SearchResult
from scrapers.search.searxng import SearxngSearchProvider, searxng_language
from tests.unit.test_search_server import Reply, SearxngServer, answer, closed_port_url, row, serving


async def _no_sleep(_seconds: float) -> None:
    return None


def provider(url: str, **kwargs: Any) -> SearxngSearchProvider:
    kwargs.setdefault("sleep", _no_sleep)
    return SearxngSearchProvider(url, **kwargs)


async def search(p: SearxngSearchProvider, query: str = "価格転嫁", **kwargs: Any) -> list[SearchResult]:
    return await p.search(query, **kwargs)


async def test_parses_results_and_sends_the_json_api_parameters() -> None:
    rows = [
        row(1, publishedDate="2024-11-29T09:00:00", category="news"),
        row(2, engines=[], engine="bing", score="n/a"),
        {"title": "no url"},
        row(1),  # duplicate URL
        row(3, url="javascript:alert(1)"),
        row(4, content=None, title=None),
    ]
    with serving(answer(*rows)) as server:
        p = provider(server.url + "/", language="ja-JP")
        assert isinstance(p, SearchProvider)
        results = await search(p, max_results=3, time_range="week")
    assert server.requests == [
        {"q": "価格転嫁", "format": "json", "language": "ja-JP", "pageno": "1", "time_range": "week"}
    ]
    assert [r.url for r in results] == ["https://example.org/1", "https://example.org/2", "https://example.org/4"]
    first, second, third = results
    assert (first.title, first.snippet, first.provider, first.rank) == ("Title 1", "Content 1", "searxng", 1)
    assert first.published == date(2024, 11, 29) and first.source_type == "news"
    assert first.engines == ["duckduckgo", "brave"] and first.score == 1.0
    assert second.engines == ["bing"] and second.score == 0.0 and second.published is None
    assert (third.rank, third.title, third.snippet) == (3, "", "")


@pytest.mark.parametrize(
    ("time_range", "sent"), [(None, None), ("all", None), ("d", "day"), ("month", "month"), ("Y", "year")]
)
async def test_time_range_mapping(time_range: str | None, sent: str | None) -> None:
    with serving(answer(row(1))) as server:
        await search(provider(server.url), time_range=time_range)
    assert server.requests[0].get("time_range") == sent


async def test_bad_time_range_is_an_input_error_before_any_request() -> None:
    with serving(answer(row(1))) as server, pytest.raises(InputError, match="fortnight"):
        await search(provider(server.url), time_range="fortnight")
    assert server.requests == []


async def test_region_argument_becomes_a_language() -> None:
    with serving(answer(row(1))) as server:
        await search(provider(server.url), region="us-en")
    assert server.requests[0]["language"] == "en-US"


@pytest.mark.parametrize(
    ("region", "language"),
    [
        ("jp-jp", "ja-JP"),
        ("us-en", "en-US"),
        ("uk-en", "en-GB"),
        ("wt-wt", "all"),
        ("", "all"),
        (None, "all"),
        ("kr-kr", "ko-KR"),
        ("xa-ar", "ar"),
        ("ja", "ja"),
        ("ja-JP", "ja-JP"),
        ("all", "all"),
    ],
)
def test_searxng_language(region: str | None, language: str) -> None:
    assert searxng_language(region) == language


async def test_max_results_cuts_the_first_page_without_fetching_another() -> None:
    with serving(answer(*(row(n) for n in range(1, 11)))) as server:
        results = await search(provider(server.url), max_results=4)
    assert [r.rank for r in results] == [1, 2, 3, 4]
    assert len(server.requests) == 1


async def test_short_first_page_fetches_the_second_and_never_a_third() -> None:
    def respond(params: dict[str, str]) -> Reply:
        page = int(params["pageno"])
        return answer(*(row(n) for n in range(page * 10, page * 10 + 3)))

    with SearxngServer(respond) as server:
        results = await search(provider(server.url), max_results=50)
    assert [p["pageno"] for p in server.requests] == ["1", "2"]
    assert [r.rank for r in results] == [1, 2, 3, 4, 5, 6]
    assert results[3].url == "https://example.org/20"


async def test_a_failing_second_page_keeps_the_first() -> None:
    with serving(answer(row(1), row(2)), Reply(500, "boom")) as server:
        results = await search(provider(server.url, attempts=1), max_results=5)
    assert [r.url for r in results] == ["https://example.org/1", "https://example.org/2"]
    assert len(server.requests) == 2


async def test_403_explains_how_to_enable_the_json_api() -> None:
    with serving(Reply(403, "<h1>Forbidden</h1>")) as server, pytest.raises(SearchError) as info:
        await search(provider(server.url))
    message = str(info.value)
    assert "HTTP 403" in message and "search.formats" in message and "settings.yml" in message
    assert len(server.requests) == 1  # a refusal is not retried


async def test_429_points_at_the_limiter() -> None:
    with serving(Reply(429, "Too Many Requests")) as server, pytest.raises(SearchError, match="limiter"):
        await search(provider(server.url))


async def test_no_results_because_engines_failed_is_an_error_naming_them() -> None:
    broken = answer(unresponsive=[["google", "timeout"], ["duckduckgo", "CAPTCHA"]])
    with serving(broken) as server, pytest.raises(SearchError) as info:
        await search(provider(server.url))
    assert "google (timeout)" in str(info.value) and "duckduckgo (CAPTCHA)" in str(info.value)


async def test_no_results_from_healthy_engines_is_an_empty_answer() -> None:
    with serving(answer()) as server:
        assert await search(provider(server.url)) == []


async def test_results_despite_some_unresponsive_engines_are_kept() -> None:
    with serving(answer(row(1), unresponsive=[["google", "timeout"]])) as server:
        assert [r.url for r in await search(provider(server.url))] == ["https://example.org/1"]


async def test_5xx_is_retried_then_reported() -> None:
    with serving(Reply(500, "boom")) as server, pytest.raises(SearchError, match="after 2 attempts: HTTP 500"):
        await search(provider(server.url, attempts=2))
    assert len(server.requests) == 2


async def test_a_server_that_fails_first_answers_on_retry() -> None:
    with serving(Reply(502, "bad gateway"), answer(row(1))) as server:
        results = await search(provider(server.url, attempts=2), max_results=1)
    assert [r.url for r in results] == ["https://example.org/1"]
    assert len(server.requests) == 2


async def test_connection_refused_is_a_search_error() -> None:
    with pytest.raises(SearchError, match=r"cannot connect.*MAGI_SEARCH_SEARXNG_URL"):
        await search(provider(closed_port_url(), attempts=2))


async def test_timeout_is_a_search_error() -> None:
    with (
        serving(Reply(200, {"results": []}, delay_s=1.0)) as server,
        pytest.raises(SearchError, match=r"no answer within 0\.2 s"),
    ):
        await search(provider(server.url, timeout_s=0.2, attempts=1))


async def test_html_instead_of_json_is_a_search_error() -> None:
    with serving(Reply(200, "<html>results</html>")) as server, pytest.raises(SearchError, match="did not answer JSON"):
        await search(provider(server.url))


@pytest.mark.parametrize("url", [None, "", "  "])
def test_missing_url_is_a_config_error(url: str | None) -> None:
    with pytest.raises(ConfigError, match="MAGI_SEARCH_SEARXNG_URL"):
        SearxngSearchProvider(url)


def test_url_needs_a_scheme_and_search_suffix_is_tolerated() -> None:
    with pytest.raises(ConfigError, match="http://"):
        SearxngSearchProvider("searx.example.org")
    assert SearxngSearchProvider("https://searx.example.org/search/").base_url == "https://searx.example.org"
    with pytest.raises(ConfigError, match="is not a valid URL"):
        SearxngSearchProvider("http://[::1")


async def test_empty_query_is_rejected_before_any_request() -> None:
    with serving(answer(row(1))) as server, pytest.raises(InputError):
        await search(provider(server.url), query="  ")
    assert server.requests == []


# --- redirects go through the SSRF guard --------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "reason"),
    [
        ("http://169.254.169.254/latest/meta-data/iam/", "169.254.169.254 is a cloud metadata address"),
        ("http://10.0.0.1/admin", "10.0.0.1 is a private address"),
        ("http://[::ffff:169.254.169.254]/", "embedding 169.254.169.254, a cloud metadata address"),
        ("file:///etc/passwd", "scheme 'file' is not http(s)"),
    ],
)
async def test_a_redirect_to_a_private_or_metadata_address_is_refused(target: str, reason: str) -> None:
    with serving(Reply(302, "", location=target)) as server:
        with pytest.raises(SearchError) as caught:
            await search(provider(server.url, attempts=3))
        assert len(server.requests) == 1  # refused, not retried: no retry can make it safe
    message = str(caught.value)
    assert f"SearXNG at {server.url}: refused " in message and reason in message
    assert f"after redirects from {server.url}/search?" in message and "no redirect to a private" in message


async def test_a_redirect_to_another_loopback_service_is_refused_unless_allow_private() -> None:
    """The configured instance is trusted; another port on the same machine is not (until allowed)."""
    with serving(answer(row(1))) as inner, serving(Reply(307, "", location=f"{inner.url}/search?q=x")) as outer:
        with pytest.raises(SearchError, match=r"127\.0\.0\.1 is a loopback address"):
            await search(provider(outer.url))
        assert inner.requests == []  # refused before connecting
        results = await search(provider(outer.url, allow_private=True))
    assert [r.url for r in results] == ["https://example.org/1"]
    assert inner.requests and all(r == {"q": "x"} for r in inner.requests)  # reached through the redirect


async def test_redirects_within_the_instance_are_followed_and_loops_end() -> None:
    with serving(Reply(301, "", location="/search?q=again&format=json"), answer(row(2))) as server:
        results = await search(provider(server.url))
    assert [r.url for r in results] == ["https://example.org/2"] and server.requests[1] == {
        "q": "again",
        "format": "json",
    }
    with serving(Reply(302, "", location="/search?loop=1")) as server, pytest.raises(SearchError) as caught:
        await search(provider(server.url, attempts=1))
    assert "more than 5 redirects" in str(caught.value) and len(server.requests) == 6


async def test_open_search_honours_fetch_allow_private_for_searxng() -> None:
    from core.settings import load_settings
    from scrapers.search.factory import open_search

    with serving(answer(row(3))) as inner, serving(Reply(302, "", location=f"{inner.url}/search")) as outer:
        search_section = {"provider": "searxng", "searxng_url": outer.url, "cache_ttl_s": 0}
        guarded = open_search(load_settings(overrides={"search": search_section})).provider
        with pytest.raises(SearchError, match="loopback address"):
            await guarded.search("価格転嫁")
        allowed = load_settings(overrides={"search": search_section, "fetch": {"allow_private": True}})
        results = await open_search(allowed).provider.search("価格転嫁")
    assert [r.url for r in results] == ["https://example.org/3"]


def test_doctor_checks_searxng_through_the_guarded_client() -> None:
    from cli.doctor import check_searxng
    from core.settings import load_settings

    def doctor(url: str) -> Any:
        return check_searxng(load_settings(overrides={"search": {"searxng_url": url}}))

    with serving(answer(row(1))) as server:
        assert (doctor(server.url).status, doctor(server.url).detail) == ("ok", f"{server.url} answered 1 results")
    with serving(Reply(302, "", location="http://169.254.169.254/latest/meta-data/")) as server:
        check = doctor(server.url)
    assert check.status == "fail" and "169.254.169.254 is a cloud metadata address" in check.detail
    with serving(Reply(403, "<h1>Forbidden</h1>")) as server:
        check = doctor(server.url)
    assert check.status == "fail" and "add json to search.formats" in check.detail
