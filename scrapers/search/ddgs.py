"""DuckDuckGo (and friends) text and news search through the maintained ``ddgs`` package.

``ddgs`` is synchronous and uses its own HTTP client (primp), so each attempt runs in a worker
thread under a deadline (a thread that overruns is abandoned, not killed). Search engines
rate-limit scrapers, so failures are retried a few times with jittered exponential backoff
(``core.retry``);
what is left becomes a :class:`SearchError` that says what to do instead. ``ddgs`` 9.16 reports
rate limits and timeouts as ``DDGSException``/``TimeoutException``, so all of those are retried.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from core.errors import first_line
from core.retry import backoff_delay, retry
from scrapers.errors import SearchError
from scrapers.search.base import SearchResult, check_request, parse_date, time_limit

log = logging.getLogger(__name__)

Kind = Literal["text", "news"]
NO_RESULTS = "No results found."  # ddgs raises this when every engine answered with nothing


class _Transient(Exception):
    """One failed attempt worth retrying; the message says what went wrong."""


class DdgsSearchProvider:
    """Web (``kind="text"``) or news (``kind="news"``, dated, ``source_type="news"``) search via ddgs.

    ``ddgs_factory`` builds the client (``DDGS(timeout=...)`` by default); tests replace it, since
    it is the boundary to the public internet.
    """

    def __init__(
        self,
        *,
        kind: Kind = "text",
        region: str = "jp-jp",
        backend: str = "auto",
        timeout_s: float = 10.0,
        deadline_s: float | None = None,
        attempts: int = 3,
        backoff_s: float = 1.0,
        backoff_max_s: float = 8.0,
        ddgs_factory: Callable[..., Any] | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if kind not in ("text", "news"):
            raise ValueError(f"kind must be 'text' or 'news', not {kind!r}")
        self.kind: Kind = kind
        self.name = "ddgs" if kind == "text" else "ddgs-news"
        self.region = region
        self.backend = backend
        self._timeout_s = timeout_s
        self._deadline_s = deadline_s if deadline_s is not None else 3 * timeout_s  # ddgs tries engines in rounds
        self._attempts = max(1, attempts)
        self._backoff = (backoff_s, backoff_max_s)
        self._factory = ddgs_factory
        self._sleep = sleep

    @property
    def cache_identity(self) -> str:
        """What makes two instances answer differently (for the query cache key)."""
        return f"{self.name}:{self.backend}:{self.region}"

    def _client(self) -> Any:
        if self._factory is not None:
            return self._factory(timeout=int(self._timeout_s))
        from ddgs import DDGS  # imported lazily: heavy, and only needed when searching the web

        return DDGS(timeout=int(self._timeout_s))

    async def search(
        self,
        query: str,
        *,
        max_results: int = 10,
        time_range: str | None = None,
        region: str | None = None,
    ) -> list[SearchResult]:
        """Ranked results; ``[]`` when the engines answered but found nothing."""
        from ddgs.exceptions import DDGSException

        check_request(query, max_results)
        limit = time_limit(time_range)
        region = region or self.region

        def call() -> list[dict[str, Any]]:
            client = self._client()
            method = client.text if self.kind == "text" else client.news
            rows: list[dict[str, Any]] = method(
                query, region=region, timelimit=limit, max_results=max_results, backend=self.backend
            )
            return rows

        async def attempt() -> list[SearchResult]:
            try:
                rows = await asyncio.wait_for(asyncio.to_thread(call), timeout=self._deadline_s)
            except DDGSException as exc:
                if str(exc).strip() == NO_RESULTS:
                    return []
                raise _Transient(_describe(exc)) from exc
            except TimeoutError as exc:
                raise _Transient(f"no answer within {self._deadline_s:g} s") from exc
            except Exception as exc:  # an unexpected error inside ddgs: retrying will not help
                raise SearchError(
                    f"{self.name} search for {query!r} failed ({type(exc).__name__}: {first_line(exc, 200)}); "
                    "update ddgs, or search a local folder with --corpus DIR"
                ) from exc
            return self._results(rows, max_results)

        def on_retry(retry_index: int, exc: Exception, delay: float) -> None:
            log.info(
                "%s attempt %d/%d failed (%s); retrying in %.1f s",
                self.name,
                retry_index + 1,
                self._attempts,
                exc,
                delay,
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
                f"{self.name} search for {query!r} (backend {self.backend}, region {region}) failed after "
                f"{self._attempts} attempts: {exc}; wait a few minutes (search engines rate-limit scrapers), "
                "try another MAGI_SEARCH_DDGS_BACKEND, add a fallback provider (search: {fallbacks: [searxng]}), "
                "or search a local folder with --corpus DIR"
            ) from None

    def _results(self, rows: list[dict[str, Any]], max_results: int) -> list[SearchResult]:
        results: list[SearchResult] = []
        seen: set[str] = set()
        for row in rows:
            url = row.get("href") or row.get("url")
            if not isinstance(url, str) or not url or url in seen:
                continue
            seen.add(url)
            results.append(
                SearchResult(
                    url=url,
                    title=str(row.get("title") or ""),
                    snippet=str(row.get("body") or ""),
                    published=parse_date(row.get("date")),
                    provider=self.name,
                    rank=len(results) + 1,
                    source_type="news" if self.kind == "news" else None,
                )
            )
            if len(results) >= max_results:
                break
        return results


def _describe(exc: Exception) -> str:
    """Name rate limits and timeouts plainly; ddgs folds them into DDGSException text."""
    from ddgs.exceptions import RatelimitException, TimeoutException

    text = first_line(exc, 200)
    if isinstance(exc, RatelimitException) or "429" in text or "ratelimit" in text.lower().replace(" ", ""):
        return f"rate-limited ({text})"
    if isinstance(exc, TimeoutException) or "timed out" in text.lower():
        return f"timed out ({text})"
    return text


__all__ = [
    "NO_RESULTS",
    "DdgsSearchProvider",
    "Kind",
]
