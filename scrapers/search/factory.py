"""Build the configured search provider, plus the resolver that maps its URLs to local files."""

from __future__ import annotations

from dataclasses import dataclass

from core.errors import ConfigError
from core.settings import Settings
from scrapers.search.base import SearchProvider
from scrapers.search.ddgs import DdgsSearchProvider
from scrapers.search.local import LocalCorpus, LocalSearchProvider


@dataclass(frozen=True)
class SearchSetup:
    provider: SearchProvider
    resolver: LocalCorpus | None  # set when results point into a local corpus


def open_search(settings: Settings) -> SearchSetup:
    """The provider named by ``search_provider``; a local corpus is loaded (and checked) here."""
    if settings.search_provider == "local":
        corpus = LocalCorpus(settings.corpus_dir)
        return SearchSetup(LocalSearchProvider(corpus), corpus)
    if settings.search_provider == "ddgs":
        return SearchSetup(DdgsSearchProvider(), None)
    raise ConfigError(f"unknown search provider {settings.search_provider!r}; use local (with --corpus) or ddgs")
