"""Collector: one per research run; fetches, extracts and analyses each URL at most once.

Agents ask it for pages however often they like (several agents, several iterations): every URL
is fetched once (or read from the page cache), every distinct content is analysed once (or read
from the analysis cache) by the NLP pool, and syndicated copies are linked to their original.
The counters it keeps go into the report, so "nothing twice" is checked, not assumed.

Pages and analyses also go to the store's caches, so a collector started again after its node died
(the engine spawns it restartable) rebuilds what it held from there: a page it is asked to
:meth:`~Collector.read` and no longer knows is collected again, from the caches. The caches are
only a shortcut: while the store restarts, pages are fetched and analysed without them.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import date

from actors.collection import Collected, CollectionStats, SourceFailure
from actors.metrics import CACHE_HITS, PAGES
from actors.nlp_pool import BATCH_CHARS, NlpPool
from core.runtime import current_node_id, restarted_actor
from core.settings import Settings
from core.store import open_store, outage_tolerated, retry_while_unavailable
from core.telemetry.tracing import span
from nlp.analysis import AnalysisInput, TextAnalysis, analysis_key, resolve_lang
from nlp.analysis_cache import AnalysisCache
from scrapers.errors import ExtractionError, FetchError
from scrapers.extract import extract_page
from scrapers.fetch import Fetcher, FetchPolicy
from scrapers.near_duplicates import NearDuplicateIndex
from scrapers.page_cache import PageCache
from scrapers.search.base import SearchResult
from scrapers.search.factory import SearchSetup, open_search
from scrapers.settings import FetchSettings

BATCH_WAIT_S = 0.05  # how long a lone text waits for company before it is sent to the pool
STORE_OPEN_WAIT_S = 60.0  # a collector started while the store restarts waits this long for it


Queued = tuple[str, AnalysisInput, "asyncio.Future[TextAnalysis]"]  # (analysis key, input, its result)


def _iso_date(value: str | None) -> date | None:
    try:
        return date.fromisoformat(value[:10]) if value else None
    except ValueError:
        return None


class Collector:
    def __init__(self, settings: Settings, pool: NlpPool) -> None:
        self._settings = settings
        self._pool = pool
        store = retry_while_unavailable(lambda: open_store(settings), wait_s=STORE_OPEN_WAIT_S, what="opening it")
        self._pages = PageCache(store, FetchSettings.of(settings).page_cache_ttl_s)
        self._analyses = AnalysisCache(store)
        self._fetcher: Fetcher | None = None
        self._search: SearchSetup | None = None
        self._search_lock = asyncio.Lock()
        self._corpus_reads: Counter[str] = Counter()
        self._tasks: dict[str, asyncio.Task[Collected]] = {}
        self._analysis_futures: dict[str, asyncio.Future[TextAnalysis]] = {}
        self._queue: list[Queued] = []
        self._queued_chars = 0
        self._flush_handle: asyncio.TimerHandle | None = None
        self._duplicates = NearDuplicateIndex()
        self._fetch_counts: Counter[str] = Counter()
        self._analysis_counts: Counter[str] = Counter()
        self._stats = CollectionStats()
        self._restarted = restarted_actor()  # its node died: what it held in memory went with it

    async def _setup(self) -> SearchSetup:
        """The search chain and local corpus, loaded once, in this process, off the event loop."""
        async with self._search_lock:
            if self._search is None:
                self._search = await asyncio.to_thread(open_search, self._settings)
            return self._search

    async def _get_fetcher(self) -> Fetcher:
        if self._fetcher is None:  # built lazily: the local corpus loads once, in this process
            local = (await self._setup()).resolver
            self._fetcher = Fetcher(local=local, policy=FetchPolicy.of(FetchSettings.of(self._settings)))
        return self._fetcher

    async def search(self, query: str, *, max_results: int = 10, time_range: str | None = None) -> list[SearchResult]:
        """Search the configured chain here. A local corpus is on this node only (the engine pins the
        collector to the node that has it), so agents elsewhere search it through this method."""
        setup = await self._setup()
        if setup.resolver is not None:
            self._corpus_reads[current_node_id()] += 1
        return await setup.provider.search(query, max_results=max_results, time_range=time_range)

    async def collect(self, urls: list[str], lang_hints: dict[str, str] | None = None) -> list[Collected]:
        """Pages and analyses for ``urls`` (same order); failures are reported per URL, never raised."""
        self._stats.urls_requested += len(urls)
        for url in urls:
            if url not in self._tasks or self._tasks[url].cancelled():
                self._tasks[url] = asyncio.create_task(self._collect_one(url, (lang_hints or {}).get(url)))
        # Shielded: when one agent's call is cancelled (its timeout), the shared work goes on for the others.
        done = await asyncio.gather(*(asyncio.shield(self._tasks[u]) for u in urls))
        return [self._current(c) for c in done]

    def _current(self, item: Collected) -> Collected:
        """A copy of ``item`` naming its original as of now (earliest published, then smallest URL)."""
        copy = item.model_copy()
        if copy.page is not None:
            copy.duplicate_of = self._duplicates.original_of(copy.url)
        return copy

    async def _collect_one(self, url: str, lang_hint: str | None) -> Collected:
        """Fetch (or reuse), extract, then queue the text for analysis as soon as it is ready."""
        item = await self._page(url, lang_hint)
        if item.page is not None:
            item.analysis = await self._analysis(
                AnalysisInput(item.page.text, item.page.lang, _iso_date(item.page.published))
            )
        return item

    async def _page(self, url: str, lang_hint: str | None) -> Collected:
        cached = None
        with outage_tolerated("reading the page cache"):
            cached = self._pages.get(url)
        if cached is not None:
            self._stats.page_cache_hits += 1
            PAGES.inc(outcome="cached")
            CACHE_HITS.inc(cache="page")
            return self._register(Collected(url=url, page=cached, from_cache=True))
        self._fetch_counts[url] += 1
        try:
            with span("fetch", origin="collector"):
                fetched = await (await self._get_fetcher()).fetch(url)
            if fetched.origin == "local":
                self._corpus_reads[current_node_id()] += 1
            page = await asyncio.to_thread(extract_page, fetched.text, url=url, content_type=fetched.content_type)
        except FetchError as exc:
            return self._failed(url, SourceFailure(url=url, stage="fetch", kind=exc.kind, message=str(exc)))
        except ExtractionError as exc:
            return self._failed(url, SourceFailure(url=url, stage="extract", kind="no_text", message=str(exc)))
        page.lang = resolve_lang(page.text, page.lang or lang_hint)
        PAGES.inc(outcome="fetched")
        with outage_tolerated("keeping a page in the page cache"):
            self._pages.put(page, final_url=fetched.final_url, status=fetched.status)
        return self._register(Collected(url=url, page=page))

    def _register(self, item: Collected) -> Collected:
        assert item.page is not None
        item.duplicate_of = self._duplicates.add(item.url, item.page.text, item.page.published)
        return item

    def _failed(self, url: str, failure: SourceFailure) -> Collected:
        self._stats.failures_by_kind[failure.kind] = self._stats.failures_by_kind.get(failure.kind, 0) + 1
        PAGES.inc(outcome=failure.kind)
        return Collected(url=url, failure=failure)

    async def _analysis(self, item: AnalysisInput) -> TextAnalysis:
        """Each distinct input is analysed once: in flight, from the cache, or by the pool."""
        key = analysis_key(item.text, resolve_lang(item.text, item.lang), item.published)
        if key not in self._analysis_futures:
            future: asyncio.Future[TextAnalysis] = asyncio.get_running_loop().create_future()
            self._analysis_futures[key] = future
            cached: dict[str, TextAnalysis] = {}
            with outage_tolerated("reading the analysis cache"):
                cached = self._analyses.get_many([key])
            if key in cached:
                self._stats.analysis_cache_hits += 1
                CACHE_HITS.inc(cache="analysis")
                future.set_result(cached[key])
            else:
                self._queue.append((key, item, future))
                self._queued_chars += len(item.text)
                if self._queued_chars >= BATCH_CHARS:
                    self._flush()
                elif self._flush_handle is None:
                    self._flush_handle = asyncio.get_running_loop().call_later(BATCH_WAIT_S, self._flush)
        return await asyncio.shield(self._analysis_futures[key])

    def _flush(self) -> None:
        """Send what is queued to the pool as one group (the pool splits it into batches)."""
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        queued, self._queue, self._queued_chars = self._queue, [], 0
        if queued:
            asyncio.get_running_loop().create_task(self._analyse_group(queued))

    async def _analyse_group(self, queued: list[Queued]) -> None:
        """Analyse a group and answer every page waiting on it: whatever fails here, no waiting page is
        left waiting (its agent would hang until its timeout)."""
        try:
            fresh = await self._pool.analyse([item for _, item, _ in queued])
            with outage_tolerated("keeping analyses in the analysis cache"):
                self._analyses.put_many(fresh)
        except BaseException as exc:
            for key, _, future in queued:
                self._analysis_futures.pop(key, None)  # a later request may try again
                if future.done():
                    continue
                if isinstance(exc, Exception):
                    future.set_exception(exc)
                else:
                    future.cancel()
            if not isinstance(exc, Exception):
                raise
            return
        for (key, _, future), analysis in zip(queued, fresh, strict=True):
            self._analysis_counts[key] += 1
            future.set_result(analysis)

    async def read(self, urls: list[str]) -> dict[str, Collected]:
        """The pages already collected among ``urls`` (with text and claims), for scoring and citation checks."""
        if self._restarted:
            await self.collect([u for u in dict.fromkeys(urls) if u not in self._tasks])
        done = {u: self._tasks[u] for u in dict.fromkeys(urls) if u in self._tasks and self._tasks[u].done()}
        return {
            u: self._current(t.result())
            for u, t in sorted(done.items())
            if not t.cancelled() and t.exception() is None and t.result().page is not None
        }

    def originals(self, urls: list[str]) -> dict[str, str | None]:
        """Each page's original as of now (None: it is one). A page read early can become a copy later,
        when its earlier-published original is collected after it."""
        return {u: self._duplicates.original_of(u) for u in dict.fromkeys(urls)}

    def stats(self) -> CollectionStats:
        stats = self._stats.model_copy()
        stats.unique_urls = len(self._tasks)
        stats.near_duplicates = sum(1 for url in self._tasks if self._duplicates.original_of(url) is not None)
        stats.fetches = sum(self._fetch_counts.values())
        stats.urls_fetched_more_than_once = sum(1 for n in self._fetch_counts.values() if n > 1)
        stats.analyses = sum(self._analysis_counts.values())
        stats.contents_analysed_more_than_once = sum(1 for n in self._analysis_counts.values() if n > 1)
        stats.nlp_usage_by_node = self._pool.usage()
        corpus = self._search.resolver if self._search is not None else None
        if corpus is not None:
            stats.corpus_node, stats.corpus_skipped = corpus.node_id, dict(corpus.skipped)
        stats.corpus_reads_by_node = dict(self._corpus_reads)
        return stats

    async def aclose(self) -> None:
        if self._fetcher is not None:
            await self._fetcher.aclose()


__all__ = [
    "BATCH_WAIT_S",
    "Collector",
    "Queued",
]
