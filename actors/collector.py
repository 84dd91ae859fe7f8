"""Collector: one per research run; fetches, extracts and analyses each URL at most once.

Agents ask it for pages however often they like (several agents, several iterations): every URL
is fetched once (or read from the page cache), every distinct content is analysed once (or read
from the analysis cache) by the NLP pool, and syndicated copies are linked to their original.
The counters it keeps go into the report, so "nothing twice" is checked, not assumed.
"""

from __future__ import annotations

import asyncio
from collections import Counter

from pydantic import BaseModel, Field

from actors.nlp_pool import NlpPool
from core.errors import ExtractionError, FetchError
from core.models import CamelModel, SourceFailure
from core.settings import Settings
from core.store import Store
from nlp.analysis import TextAnalysis, analysis_key, resolve_lang
from nlp.analysis_cache import AnalysisCache
from scrapers.extract import ExtractedPage, extract_page
from scrapers.fetch import Fetcher, FetchPolicy
from scrapers.near_duplicates import NearDuplicateIndex
from scrapers.page_cache import PageCache
from scrapers.search.factory import open_search


class Collected(BaseModel):
    url: str
    page: ExtractedPage | None = None
    analysis: TextAnalysis | None = None
    failure: SourceFailure | None = None
    duplicate_of: str | None = None  # the earlier page this one is a near-copy of
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


class Collector:
    def __init__(self, settings: Settings, pool: NlpPool) -> None:
        self._settings = settings
        self._pool = pool
        store = Store(settings.data_dir)
        self._pages = PageCache(store, settings.page_cache_ttl_s)
        self._analyses = AnalysisCache(store)
        self._fetcher: Fetcher | None = None
        self._page_tasks: dict[str, asyncio.Task[Collected]] = {}
        self._analysis_tasks: dict[str, asyncio.Future[TextAnalysis]] = {}
        self._duplicates = NearDuplicateIndex()
        self._fetch_counts: Counter[str] = Counter()
        self._analysis_counts: Counter[str] = Counter()
        self._stats = CollectionStats()

    def _get_fetcher(self) -> Fetcher:
        if self._fetcher is None:  # built lazily: the local corpus loads once, in this process
            self._fetcher = Fetcher(local=open_search(self._settings).resolver,
                                    policy=FetchPolicy.from_settings(self._settings))
        return self._fetcher

    async def collect(self, urls: list[str], lang_hints: dict[str, str] | None = None) -> list[Collected]:
        """Pages and analyses for ``urls`` (same order); failures are reported per URL, never raised."""
        self._stats.urls_requested += len(urls)
        for url in urls:
            if url not in self._page_tasks:
                self._page_tasks[url] = asyncio.create_task(self._page(url, (lang_hints or {}).get(url)))
        collected = [c.model_copy() for c in await asyncio.gather(*(self._page_tasks[u] for u in urls))]
        todo = [c for c in collected if c.page is not None]
        analyses = await self._analyse([(c.page.text, c.page.lang) for c in todo if c.page is not None])
        for item, analysis in zip(todo, analyses, strict=True):
            item.analysis = analysis
        return collected

    async def _page(self, url: str, lang_hint: str | None) -> Collected:
        cached = self._pages.get(url)
        if cached is not None:
            self._stats.page_cache_hits += 1
            return self._register(Collected(url=url, page=cached, from_cache=True))
        self._fetch_counts[url] += 1
        try:
            fetched = await self._get_fetcher().fetch(url)
            page = await asyncio.to_thread(extract_page, fetched.text, url=url, content_type=fetched.content_type)
        except FetchError as exc:
            return self._failed(url, SourceFailure(url=url, stage="fetch", kind=exc.kind, message=str(exc)))
        except ExtractionError as exc:
            return self._failed(url, SourceFailure(url=url, stage="extract", kind="no_text", message=str(exc)))
        page.lang = resolve_lang(page.text, page.lang or lang_hint)
        self._pages.put(page, final_url=fetched.final_url, status=fetched.status)
        return self._register(Collected(url=url, page=page))

    def _register(self, item: Collected) -> Collected:
        assert item.page is not None
        item.duplicate_of = self._duplicates.add(item.url, item.page.text)
        self._stats.near_duplicates += item.duplicate_of is not None
        return item

    def _failed(self, url: str, failure: SourceFailure) -> Collected:
        self._stats.failures_by_kind[failure.kind] = self._stats.failures_by_kind.get(failure.kind, 0) + 1
        return Collected(url=url, failure=failure)

    async def _analyse(self, items: list[tuple[str, str | None]]) -> list[TextAnalysis]:
        """Each distinct (text, lang) is analysed once: in flight, in the cache, or by the pool now."""
        keys = [analysis_key(text, resolve_lang(text, lang)) for text, lang in items]
        new = {k: item for k, item in zip(keys, items, strict=True) if k not in self._analysis_tasks}
        if new:
            loop = asyncio.get_running_loop()
            for key in new:
                self._analysis_tasks[key] = loop.create_future()
            cached = self._analyses.get_many(list(new))
            self._stats.analysis_cache_hits += len(cached)
            for key, analysis in cached.items():
                self._analysis_tasks[key].set_result(analysis)
            missing = [k for k in new if k not in cached]
            if missing:
                try:
                    fresh = await self._pool.analyse([new[k] for k in missing])
                except Exception as exc:
                    for key in missing:
                        self._analysis_tasks.pop(key).set_exception(exc)
                    raise
                self._analyses.put_many(fresh)
                for key, analysis in zip(missing, fresh, strict=True):
                    self._analysis_counts[key] += 1
                    self._analysis_tasks[key].set_result(analysis)
        return list(await asyncio.gather(*(self._analysis_tasks[k] for k in keys)))

    def stats(self) -> CollectionStats:
        stats = self._stats.model_copy()
        stats.unique_urls = len(self._page_tasks)
        stats.fetches = sum(self._fetch_counts.values())
        stats.urls_fetched_more_than_once = sum(1 for n in self._fetch_counts.values() if n > 1)
        stats.analyses = sum(self._analysis_counts.values())
        stats.contents_analysed_more_than_once = sum(1 for n in self._analysis_counts.values() if n > 1)
        stats.nlp_usage_by_node = self._pool.usage()
        return stats

    async def aclose(self) -> None:
        if self._fetcher is not None:
            await self._fetcher.aclose()
