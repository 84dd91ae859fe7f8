"""What every search provider returns, so that research code never depends on a particular backend."""

from __future__ import annotations

from datetime import date
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from core.errors import InputError

TimeLimit = Literal["d", "w", "m", "y"]
_TIME_LIMITS: dict[str, TimeLimit] = {
    "d": "d",
    "day": "d",
    "w": "w",
    "week": "w",
    "m": "m",
    "month": "m",
    "y": "y",
    "year": "y",
}


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
    engines: list[str] = Field(default_factory=list, description="Upstream engines of a meta-search hit.")


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


def time_limit(time_range: str | None) -> TimeLimit | None:
    """``d/w/m/y`` (or day/week/...) for a time range; ``None`` for no limit (``all``, empty, None).

    Unknown values are the caller's mistake, not a provider failure, hence :class:`InputError`
    (which a fallback chain does not swallow).
    """
    key = (time_range or "all").strip().lower()
    if key == "all":
        return None
    if key not in _TIME_LIMITS:
        raise InputError(f"time_range {time_range!r} is not one of d, w, m, y, day, week, month, year, all")
    return _TIME_LIMITS[key]


def parse_date(value: object) -> date | None:
    """The date of an ISO-ish timestamp (``2024-05-01``, ``2024-05-01T09:00:00+09:00``), else None."""
    if isinstance(value, str) and len(value) >= 10:
        try:
            return date.fromisoformat(value[:10])
        except ValueError:
            return None
    return None


def check_request(query: str, max_results: int) -> None:
    """Reject requests no provider can answer, before any network traffic."""
    if not query or not query.strip():
        raise InputError("search query is empty; give some words to search for")
    if max_results < 1:
        raise InputError(f"max_results must be at least 1, got {max_results}")


__all__ = [
    "SearchProvider",
    "SearchResult",
    "TimeLimit",
    "check_request",
    "parse_date",
    "time_limit",
]
