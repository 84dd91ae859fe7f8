"""Search providers behind one interface (:class:`SearchProvider`), starting with the local corpus."""

from scrapers.search.base import SearchProvider, SearchResult
from scrapers.search.local import CorpusDocument, LocalCorpus, LocalSearchProvider

__all__ = ["CorpusDocument", "LocalCorpus", "LocalSearchProvider", "SearchProvider", "SearchResult"]
