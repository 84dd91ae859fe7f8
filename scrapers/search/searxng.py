"""Search through a SearXNG instance's JSON API (``/search?format=json``).

SearXNG is a self-hostable meta-search engine, so a team can search the web without being
rate-limited as one scraper. Its JSON output is off by default (HTTP 403), and when every
upstream engine fails it answers 200 with no results: both become :class:`SearchError` with the
fix, so a fallback chain moves on instead of reporting "nothing found".

Requests go through the same SSRF guard as page fetches (:mod:`scrapers.net_guard`): the configured
instance itself is trusted (it is usually self-hosted on loopback or the intranet), but every
redirect it answers with is followed by hand and vetted like a page URL, so an instance (or whatever
sits in front of it) cannot send the client to a private or cloud-metadata address.
``allow_private`` (``fetch.allow_private``) switches the address checks off, for tests.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from core.errors import ConfigError, first_line
from core.retry import backoff_delay, retry
from scrapers.errors import FetchError, SearchError
from scrapers.net_guard import DEFAULT_PORTS, NetGuard, PinnedTransport
from scrapers.search.base import SearchResult, TimeLimit, check_request, parse_date, time_limit

log = logging.getLogger(__name__)

USER_AGENT = "MAGI-Cluster-Research/0.1 (searxng client)"
TIME_RANGES: dict[TimeLimit, str] = {"d": "day", "w": "week", "m": "month", "y": "year"}
CATEGORY_TYPES = {"news": "news", "science": "academic"}
MAX_PAGES = 2
MAX_REDIRECTS = 5
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_DDGS_LANGS = {"jp": "ja", "kr": "ko", "tzh": "zh"}  # ddgs region codes that are not ISO 639
_DDGS_COUNTRIES = {"uk": "GB"}
_PSEUDO_COUNTRIES = {"wt", "xa", "xl", "ct"}


class _Transient(Exception):
    """One failed request worth retrying (5xx, timeout, connection error); the message says which."""


def searxng_language(region: str | None) -> str:
    """A SearXNG ``language`` for a ddgs-style region (``jp-jp`` → ``ja-JP``, ``wt-wt`` → ``all``).

    SearXNG codes (``ja``, ``ja-JP``, ``all``) pass through unchanged.
    """
    value = (region or "").strip()
    if value.lower() in ("", "wt-wt", "all"):
        return "all"
    country, _, lang = value.partition("-")
    if value != value.lower() or len(country) != 2 or not 2 <= len(lang) <= 3:
        return value
    lang = _DDGS_LANGS.get(lang, lang)
    if country in _PSEUDO_COUNTRIES:
        return lang
    return f"{lang}-{_DDGS_COUNTRIES.get(country, country.upper())}"


class SearxngSearchProvider:
    """One SearXNG instance; at most two result pages per search, retries on 5xx and network errors."""

    name = "searxng"

    def __init__(
        self,
        base_url: str | None,
        *,
        language: str = "all",
        categories: str | None = None,
        timeout_s: float = 10.0,
        attempts: int = 2,
        backoff_s: float = 0.5,
        backoff_max_s: float = 4.0,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        allow_private: bool = False,
    ) -> None:
        url = (base_url or "").strip().rstrip("/")
        if not url:
            raise ConfigError(
                "the searxng search provider needs an instance URL; set MAGI_SEARCH_SEARXNG_URL "
                "(or searxng_url in magi.yaml), e.g. http://127.0.0.1:8888"
            )
        if not url.startswith(("http://", "https://")):
            raise ConfigError(
                f"search.searxng_url {base_url!r} must start with http:// or https:// (MAGI_SEARCH_SEARXNG_URL)"
            )
        self.base_url = url.removesuffix("/search")
        try:
            instance = httpx.URL(self.base_url)
            origin = (instance.raw_host.decode("ascii").lower(), instance.port or DEFAULT_PORTS[instance.scheme])
        except (httpx.InvalidURL, UnicodeDecodeError) as exc:
            raise ConfigError(
                f"search.searxng_url {base_url!r} is not a valid URL ({exc}); fix MAGI_SEARCH_SEARXNG_URL"
            ) from None
        self._guard = NetGuard(allow_private=allow_private, trusted_origins=[origin])
        self.language = language
        self.categories = categories
        self._timeout_s = timeout_s
        self._attempts = max(1, attempts)
        self._backoff = (backoff_s, backoff_max_s)
        self._sleep = sleep

    @property
    def cache_identity(self) -> str:
        return f"searxng:{self.base_url}:{self.language}:{self.categories or ''}"

    async def search(
        self,
        query: str,
        *,
        max_results: int = 10,
        time_range: str | None = None,
        region: str | None = None,
    ) -> list[SearchResult]:
        """Up to ``max_results`` hits; a second page is fetched only when the first is too short."""
        check_request(query, max_results)
        language = searxng_language(region) if region else self.language
        params: dict[str, str | int] = {"q": query, "format": "json", "language": language, "pageno": 1}
        if (limit := time_limit(time_range)) is not None:
            params["time_range"] = TIME_RANGES[limit]
        if self.categories:
            params["categories"] = self.categories
        results: list[SearchResult] = []
        seen: set[str] = set()
        async with httpx.AsyncClient(
            transport=PinnedTransport(self._guard, limits=httpx.Limits(max_connections=4)),
            timeout=httpx.Timeout(self._timeout_s, connect=min(5.0, self._timeout_s)),
            follow_redirects=False,  # followed by hand in _get, so the guard vets every hop
            trust_env=False,  # a proxy from the environment would connect where the guard never looked
            headers={"User-Agent": USER_AGENT, "Accept": "application/json"},
        ) as client:
            for page in range(1, MAX_PAGES + 1):
                params["pageno"] = page
                try:
                    data = await self._get(client, params)
                except SearchError:
                    if not results:
                        raise
                    log.warning(
                        "searxng page %d for %r failed; keeping the %d results of page 1", page, query, len(results)
                    )
                    break
                rows = data.get("results")
                rows = rows if isinstance(rows, list) else []
                if page == 1 and not rows:
                    self._check_engines(query, data)
                results.extend(self._parse(rows, seen, first_rank=len(results) + 1))
                if not rows or len(results) >= max_results:
                    break
        return results[:max_results]

    async def _get(self, client: httpx.AsyncClient, params: dict[str, str | int]) -> dict[str, Any]:
        url = f"{self.base_url}/search"

        async def attempt() -> dict[str, Any]:
            response = await self._follow(client, client.build_request("GET", url, params=params).url)
            if response.status_code == 200:
                return self._json(response)
            self._refuse(response)
            raise _Transient(f"HTTP {response.status_code}")

        def on_retry(retry_index: int, exc: Exception, delay: float) -> None:
            log.info(
                "searxng attempt %d/%d failed (%s); retrying in %.1f s", retry_index + 1, self._attempts, exc, delay
            )

        try:
            return await retry(
                attempt,
                attempts=self._attempts,
                retryable=lambda exc: isinstance(exc, _Transient),
                delay=lambda retry_index, _exc: backoff_delay(retry_index, *self._backoff),
                sleep=self._sleep,
                on_retry=on_retry,
            )
        except _Transient as exc:
            raise SearchError(
                f"SearXNG at {self.base_url} failed after {self._attempts} attempts: {exc}; check that the "
                "instance is running and that MAGI_SEARCH_SEARXNG_URL points at it"
            ) from None

    async def _follow(self, client: httpx.AsyncClient, target: httpx.URL) -> httpx.Response:
        """GET ``target``, following up to ``MAX_REDIRECTS`` redirects, each hop vetted by the SSRF guard."""
        hops: list[str] = []
        current = target
        while True:
            try:
                await self._guard.vet(current)
                response = await client.get(current)
            except FetchError as exc:  # refused before connecting: no retry can fix it
                after = f" after redirects from {hops[0]}" if hops else ""
                raise SearchError(
                    f"SearXNG at {self.base_url}: {exc}{after}; the client follows no redirect to a private, "
                    "loopback or metadata address (check MAGI_SEARCH_SEARXNG_URL and the instance's proxy)"
                ) from None
            except httpx.TimeoutException as exc:
                raise _Transient(f"no answer within {self._timeout_s:g} s") from exc
            except httpx.TransportError as exc:
                raise _Transient(f"cannot connect ({type(exc).__name__}: {first_line(exc, 200)})") from exc
            if response.status_code not in REDIRECT_STATUSES:
                return response
            location = response.headers.get("location", "").strip()
            hops.append(str(current))
            if not location or len(hops) > MAX_REDIRECTS:
                problem = f"more than {MAX_REDIRECTS} redirects" if location else "a redirect without a Location"
                raise SearchError(
                    f"SearXNG at {self.base_url} answered {problem} (from {hops[0]}); "
                    "check MAGI_SEARCH_SEARXNG_URL (the base URL of the instance)"
                )
            try:
                current = current.join(location)
            except httpx.InvalidURL as exc:
                raise SearchError(f"SearXNG at {self.base_url} redirected to an invalid URL ({exc})") from None

    def _refuse(self, response: httpx.Response) -> None:
        """Raise for answers that a retry cannot fix (everything but 5xx)."""
        status = response.status_code
        if status == 403:
            raise SearchError(
                f"SearXNG at {self.base_url} refused format=json (HTTP 403): its JSON API is off by default; "
                "add json to search.formats in the instance's settings.yml (formats: [html, json]) and restart "
                "it (if json is already enabled, the instance's bot limiter may be blocking this client)"
            )
        if status == 429:
            raise SearchError(
                f"SearXNG at {self.base_url} rate-limited this client (HTTP 429); for a private instance set "
                "server.limiter: false in its settings.yml, or wait and retry"
            )
        if status < 500:
            raise SearchError(
                f"SearXNG at {self.base_url} answered HTTP {status} to /search; check MAGI_SEARCH_SEARXNG_URL "
                "(the base URL of the instance)"
            )

    def _json(self, response: httpx.Response) -> dict[str, Any]:
        try:
            data = response.json()
        except ValueError as exc:
            raise SearchError(
                f"SearXNG at {self.base_url} did not answer JSON ({response.headers.get('content-type', '?')}); "
                "check MAGI_SEARCH_SEARXNG_URL and that json is in search.formats of its settings.yml"
            ) from exc
        if not isinstance(data, dict):
            raise SearchError(f"SearXNG at {self.base_url} answered JSON without a results object")
        return data

    def _check_engines(self, query: str, data: dict[str, Any]) -> None:
        """No results *because* engines failed is an outage, not an answer."""
        broken = data.get("unresponsive_engines")
        if not isinstance(broken, list) or not broken:
            return
        names = []
        for item in broken:
            if isinstance(item, list | tuple) and item:
                names.append(f"{item[0]} ({item[1]})" if len(item) > 1 and item[1] else str(item[0]))
            else:
                names.append(str(item))
        raise SearchError(
            f"SearXNG at {self.base_url} found nothing for {query!r} because its engines did not answer: "
            f"{', '.join(names)}; check those engines on the instance (blocked, CAPTCHA, timeouts) "
            "or add another fallback provider"
        )

    def _parse(self, rows: list[Any], seen: set[str], *, first_rank: int) -> list[SearchResult]:
        out: list[SearchResult] = []
        for row in rows:
            url = row.get("url") if isinstance(row, dict) else None
            if not isinstance(url, str) or not url.startswith(("http://", "https://")) or url in seen:
                continue
            seen.add(url)
            engines = row.get("engines") or ([row["engine"]] if row.get("engine") else [])
            score = row.get("score")
            out.append(
                SearchResult(
                    url=url,
                    title=str(row.get("title") or ""),
                    snippet=str(row.get("content") or ""),
                    published=parse_date(row.get("publishedDate")),
                    provider=self.name,
                    rank=first_rank + len(out),
                    score=float(score) if isinstance(score, int | float) else 0.0,
                    source_type=CATEGORY_TYPES.get(str(row.get("category"))),
                    engines=[str(e) for e in engines] if isinstance(engines, list) else [],
                )
            )
        return out


__all__ = [
    "CATEGORY_TYPES",
    "MAX_PAGES",
    "MAX_REDIRECTS",
    "REDIRECT_STATUSES",
    "TIME_RANGES",
    "USER_AGENT",
    "SearxngSearchProvider",
    "searxng_language",
]
