"""Errors of the scrapers (search, fetch, extraction): subclasses of core's :class:`MagiError`."""

from __future__ import annotations

from core.errors import MagiError


class SearchError(MagiError):
    """Every configured search provider failed or returned nothing usable."""


class FetchError(MagiError):
    """A page could not be fetched; ``kind`` names the failure for reports."""

    def __init__(self, message: str, *, url: str, kind: str = "fetch") -> None:
        super().__init__(message)
        self.url = url
        self.kind = kind


class ExtractionError(MagiError):
    """A fetched page held no extractable main text."""


__all__ = ["ExtractionError", "FetchError", "SearchError"]
