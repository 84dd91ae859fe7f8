"""What the shared collector hands out: a collected page (or why there is none) and the run's counters.

The collector (``actors/collector.py``) is a worker of no system, so its contract lives beside it
rather than in a system: research reads these models, and so may any system that collects pages.
This module holds models only (no Ray, no fetching), so a result model can import it cheaply.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from core.models import CamelModel
from nlp.analysis import TextAnalysis
from scrapers.extract import ExtractedPage


class SourceFailure(CamelModel):
    url: str
    stage: Literal["fetch", "extract", "entities"]
    kind: str
    message: str


class Collected(BaseModel):
    url: str
    page: ExtractedPage | None = None
    analysis: TextAnalysis | None = None
    failure: SourceFailure | None = None
    duplicate_of: str | None = None  # the page this one copies: earliest published, then smallest URL
    from_cache: bool = False


class CollectionStats(CamelModel):
    urls_requested: int = 0
    unique_urls: int = 0
    fetches: int = 0
    urls_fetched_more_than_once: int = 0
    page_cache_hits: int = 0
    analyses: int = 0
    contents_analysed_more_than_once: int = 0
    analysis_cache_hits: int = 0
    near_duplicates: int = 0
    failures_by_kind: dict[str, int] = Field(default_factory=dict)
    nlp_usage_by_node: dict[str, dict[str, int]] = Field(default_factory=dict)
    # Local corpus: the node its files were indexed on, searches and page reads per node, files left out.
    corpus_node: str | None = None
    corpus_reads_by_node: dict[str, int] = Field(default_factory=dict)
    corpus_skipped: dict[str, int] = Field(default_factory=dict)


__all__ = ["Collected", "CollectionStats", "SourceFailure"]
