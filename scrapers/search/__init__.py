"""Search providers behind one interface (:class:`SearchProvider`).

Backends: ``local`` (BM25 over a folder), ``ddgs`` (DuckDuckGo & co, text or news), ``searxng``
(a SearXNG instance's JSON API); ``chain`` tries them in order and ``cache`` keeps answers in the
store. Build the configured stack with :func:`scrapers.search.factory.open_search`.
"""

from scrapers.search.base import SearchProvider, SearchResult
from scrapers.search.local import CorpusDocument, LocalCorpus, LocalSearchProvider

__all__ = ["CorpusDocument", "LocalCorpus", "LocalSearchProvider", "SearchProvider", "SearchResult"]
