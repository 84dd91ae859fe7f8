"""DuckDuckGo (and friends) through the maintained ``ddgs`` package.

``ddgs`` is synchronous and uses its own HTTP client, so calls run in a worker thread with a
deadline. Any failure becomes a :class:`SearchError` that says what to do instead.
"""

from __future__ import annotations

import asyncio
from datetime import date
from typing import Any

from core.errors import SearchError
from scrapers.search.base import SearchResult

TIME_LIMITS = {"d": "d", "day": "d", "w": "w", "week": "w", "m": "m", "month": "m", "y": "y", "year": "y"}


class DdgsSearchProvider:
    name = "ddgs"

    def __init__(self, *, timeout_s: float = 10.0, region: str = "jp-jp", backend: str = "auto") -> None:
        self._timeout_s = timeout_s
        self._region = region
        self._backend = backend

    async def search(self, query: str, *, max_results: int = 10, time_range: str | None = None,
                     region: str | None = None) -> list[SearchResult]:
        from ddgs import DDGS
        from ddgs.exceptions import DDGSException

        def call() -> list[dict[str, Any]]:
            return DDGS(timeout=int(self._timeout_s)).text(
                query, region=region or self._region, max_results=max_results, backend=self._backend,
                timelimit=TIME_LIMITS.get(time_range or ""),
            )

        try:
            rows = await asyncio.wait_for(asyncio.to_thread(call), timeout=self._timeout_s * 2)
        except (DDGSException, TimeoutError) as exc:
            raise SearchError(
                f"DuckDuckGo search for {query!r} failed ({str(exc).splitlines()[0][:160]}); "
                "check the network, or search a local folder with --corpus DIR"
            ) from exc
        return [
            SearchResult(url=row["href"], title=row.get("title", ""), snippet=row.get("body", ""),
                         provider=self.name, rank=rank, published=_date(row.get("date")))
            for rank, row in enumerate(rows, start=1) if row.get("href")
        ]


def _date(value: object) -> date | None:
    if isinstance(value, str) and len(value) >= 10:
        try:
            return date.fromisoformat(value[:10])
        except ValueError:
            return None
    return None
