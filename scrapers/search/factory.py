"""Build the configured search provider, plus the resolver that maps its URLs to local files.

``open_search`` also runs as a CLI preflight before Ray starts, so it only validates settings and
loads a local corpus (cached per process); web providers connect on their first search, and the
query cache opens the store lazily too, in the process that searches.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.errors import ConfigError
from core.settings import Settings
from core.store import Store
from scrapers.search.base import SearchProvider
from scrapers.search.cache import CachedSearchProvider, shared_store
from scrapers.search.chain import FallbackSearchProvider
from scrapers.search.corpus_files import CorpusLimits
from scrapers.search.ddgs import DdgsSearchProvider
from scrapers.search.local import LocalCorpus, LocalSearchProvider
from scrapers.search.searxng import SearxngSearchProvider, searxng_language
from scrapers.settings import FetchSettings, SearchSettings

PROVIDERS = ("local", "ddgs", "searxng")


@dataclass(frozen=True)
class SearchSetup:
    provider: SearchProvider
    resolver: LocalCorpus | None  # set when results point into a local corpus
    chain: tuple[str, ...] = ()  # provider names in the order they are tried
    cached: bool = False  # answers may come from the query cache


def corpus_limits(search: SearchSettings) -> CorpusLimits:
    """The ``search`` section's bounds on building a local corpus."""
    return CorpusLimits(
        max_file_bytes=search.corpus_max_file_bytes,
        max_files=search.corpus_max_files,
        budget_s=search.corpus_build_budget_s,
        max_total_bytes=search.corpus_max_total_bytes,
    )


def uses_local_corpus(search: SearchSettings) -> bool:
    """Whether the search chain reads a local corpus (then searching and reading happen on its node)."""
    return "local" in (search.provider, *search.fallbacks)


def open_search(settings: Settings, *, store: Store | None = None) -> SearchSetup:
    """``[search.provider, *search.fallbacks]`` (deduplicated) as one provider, cached when configured.

    The cache (``search.cache_ttl_s > 0``) uses ``store`` when given, else this process's shared
    store (:func:`core.store.open_store`), opened on the first search. A chain of only ``local`` is not
    cached: it is deterministic and fast, and caching would hide edits to the corpus.
    """
    search = SearchSettings.of(settings)
    names = tuple(dict.fromkeys([search.provider, *search.fallbacks]))
    corpus: LocalCorpus | None = None
    providers: list[SearchProvider] = []
    for name in names:
        if name == "local":
            corpus = LocalCorpus(search.corpus_dir, corpus_limits(search))
            providers.append(LocalSearchProvider(corpus))
        elif name == "ddgs":
            providers.append(DdgsSearchProvider(region=search.ddgs_region, backend=search.ddgs_backend))
        elif name == "searxng":
            providers.append(
                SearxngSearchProvider(
                    search.searxng_url,
                    timeout_s=search.searxng_timeout_s,
                    language=searxng_language(search.ddgs_region),
                    allow_private=FetchSettings.of(settings).allow_private,
                )
            )
        else:
            raise ConfigError(f"unknown search provider {name!r}; use one of {', '.join(PROVIDERS)}")
    provider: SearchProvider = providers[0] if len(providers) == 1 else FallbackSearchProvider(providers)
    cached = search.cache_ttl_s > 0 and names != ("local",)
    if cached:
        provider = CachedSearchProvider(provider, store or (lambda: shared_store(settings)), search.cache_ttl_s)
    return SearchSetup(provider, corpus, names, cached)


__all__ = [
    "PROVIDERS",
    "SearchSetup",
    "corpus_limits",
    "open_search",
    "uses_local_corpus",
]
