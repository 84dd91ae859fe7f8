"""Try search providers in order until one answers, so one blocked engine does not stop research.

Only :class:`SearchError` moves on to the next provider: it is what providers raise for outages,
refusals and rate limits. Input mistakes (empty query, bad time range) and bugs propagate, since
every provider would fail the same way. An empty list from a provider that worked is an answer.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from core.errors import first_line
from scrapers.errors import SearchError
from scrapers.search.base import SearchProvider, SearchResult

log = logging.getLogger(__name__)


class FallbackSearchProvider:
    """Providers in order; ``last_provider``/``last_errors`` describe the most recent search.

    Results keep the ``provider`` of the backend that produced them.
    """

    def __init__(self, providers: Sequence[SearchProvider]) -> None:
        if not providers:
            raise ValueError("FallbackSearchProvider needs at least one provider")
        self.providers = list(providers)
        self.name = ">".join(p.name for p in self.providers)
        self.last_provider: str | None = None
        self.last_errors: list[tuple[str, str]] = []

    async def search(
        self,
        query: str,
        *,
        max_results: int = 10,
        time_range: str | None = None,
        region: str | None = None,
    ) -> list[SearchResult]:
        """The first answer of a provider that did not raise :class:`SearchError`."""
        errors: list[tuple[str, str]] = []
        self.last_provider, self.last_errors = None, errors
        for index, provider in enumerate(self.providers):
            try:
                results = await provider.search(query, max_results=max_results, time_range=time_range, region=region)
            except SearchError as exc:
                errors.append((provider.name, first_line(exc, 400)))
                following = self.providers[index + 1].name if index + 1 < len(self.providers) else None
                log.warning(
                    "search provider %s failed for %r: %s%s",
                    provider.name,
                    query,
                    first_line(exc, 400),
                    f"; trying {following}" if following else "",
                )
                continue
            self.last_provider = provider.name
            return results
        raise SearchError(
            f"all {len(errors)} search providers failed for {query!r}: "
            + " | ".join(f"{name}: {message}" for name, message in errors)
        )


__all__ = [
    "FallbackSearchProvider",
]
