"""Every user of the store on both backends: run records, events, page and analysis caches, and
50 concurrent writers (threads, then processes, each with its own Store) that must lose nothing."""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from core.store import Store
from nlp.analysis import TextAnalysis
from nlp.analysis_cache import AnalysisCache
from research import runs
from research.events import ResearchFailed, ResearchRequeued, StageProgress
from scrapers.extract import ExtractedPage
from scrapers.page_cache import PageCache, text_hash
from scrapers.search.base import SearchResult
from scrapers.search.cache import CachedSearchProvider, cache_key
from scrapers.search.searxng import SearxngSearchProvider

WRITERS = 50
EVENTS_PER_WRITER = 4


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    s = Store(store_url)
    yield s
    s.close()


def progress(writer: int, i: int) -> StageProgress:
    return StageProgress(run_id="shared", iteration=1, agent_id=writer, stage=f"w{writer}", done=i, total=9)


def test_run_lifecycle_and_events(store: Store) -> None:
    runs.record_started(store, "r1", "価格転嫁", status="accepted", request={"topic": "価格転嫁", "agents": 2})
    assert runs.mark_running(store, "r1") and not runs.mark_running(store, "r1")  # only from accepted
    sink = runs.StoreEventSink(store, "r1")
    sink.emit(progress(1, 1))
    sink.emit(progress(1, 2))
    sink.emit(ResearchFailed(run_id="r1", error="held back"))  # terminal: kept for finish_failed
    assert [e.seq for e in runs.load_events(store, "r1")] == [1, 2]
    runs.finish_failed(store, "r1", "boom", sink.terminal, partial={"claims": ["一部"]})
    run = runs.load_run(store, "r1")
    assert run is not None and run.status == "failed" and run.error == "boom" and run.completed_at
    assert run.result_json is not None and "一部" in run.result_json
    events = runs.load_events(store, "r1")
    assert [(e.seq, e.type) for e in events] == [(1, "stageProgress"), (2, "stageProgress"), (3, "researchFailed")]
    assert [e.seq for e in runs.load_events(store, "r1", after_seq=2)] == [3]
    runs.finish_failed(store, "r1", "again")  # a finished run stays as it was
    assert runs.load_run(store, "r1") == run and len(runs.load_events(store, "r1")) == 3
    assert runs.load_run(store, "missing") is None


def test_page_cache_shares_texts_and_replaces_snapshots(store: Store) -> None:
    cache = PageCache(store, ttl_s=3600)
    page = ExtractedPage(url="https://a.example/1", title="A", text="同じ本文", lang="ja", published="2024-11-29")
    digest = cache.put(page, final_url="https://a.example/1", status=200)
    cache.put(page.model_copy(update={"url": "https://b.example/copy"}), final_url="https://b.example/copy", status=200)
    assert digest == text_hash("同じ本文")
    assert store.query("SELECT COUNT(*) FROM page_texts")[0][0] == 1  # syndicated copy: one text row
    assert cache.get("https://a.example/1") == page
    cache.put(
        page.model_copy(update={"title": "A v2", "text": "新しい本文"}), final_url="https://a.example/x", status=203
    )
    latest = cache.get("https://a.example/1")
    assert latest is not None and (latest.title, latest.text) == ("A v2", "新しい本文")
    assert tuple(
        store.query("SELECT final_url, status FROM page_snapshots WHERE url = :u", {"u": "https://a.example/1"})[0]
    ) == ("https://a.example/x", 203)
    assert PageCache(store, ttl_s=0).get("https://a.example/1") is None
    with store.transaction() as conn:  # an old snapshot is not reused (epoch kept to the second on both)
        conn.exec_driver_sql("UPDATE page_snapshots SET fetched_epoch = fetched_epoch - 3601")
    assert cache.get("https://a.example/1") is None


def analysis(key: str, chars: int) -> TextAnalysis:
    return TextAnalysis(content_hash=key, lang="ja", chars=chars, analysed_chars=chars, entities=[], claims=[])


def test_analysis_cache_round_trip_and_overwrite(store: Store) -> None:
    cache = AnalysisCache(store)
    cache.put_many([])
    cache.put_many([analysis("k1", 1), analysis("k2", 2), analysis("k1", 10)])
    cache.put_many([analysis("k2", 20)])
    keys = ["k1", "k2", "missing"] + [f"x{i}" for i in range(600)]  # more than one chunk of 500
    found = cache.get_many(keys)
    assert {k: a.chars for k, a in found.items()} == {"k1": 10, "k2": 20}


def _writer(store: Store, writer: int) -> None:
    """One writer's share: a run record, events of the shared run, a page, an analysis, a search row."""
    runs.record_started(store, f"run-{writer}", "t")
    for i in range(EVENTS_PER_WRITER):
        runs.append_event(store, "shared", progress(writer, i))
    PageCache(store, 3600).put(
        ExtractedPage(url=f"https://p.example/{writer}", title="p", text=f"text {writer % 7}"),
        final_url=f"https://p.example/{writer}",
        status=200,
    )
    AnalysisCache(store).put_many([analysis(f"a{writer % 10}", writer)])
    provider = CachedSearchProvider(SearxngSearchProvider("http://127.0.0.1:1"), store, 3600)
    result = SearchResult(url=f"https://s.example/{writer}", title="t", snippet="s", provider="searxng", rank=1)
    provider._put(cache_key(provider.identity, f"q{writer}", 1, None, None), f"q{writer}", [result])


def _check_nothing_lost(store: Store) -> None:
    events = runs.load_events(store, "shared")
    assert [e.seq for e in events] == list(range(1, WRITERS * EVENTS_PER_WRITER + 1))  # no gap, no duplicate
    decoded = [StageProgress.model_validate_json(e.json) for e in events]
    written = sorted((e.agent_id, e.done) for e in decoded)
    assert written == [(w, i) for w in range(WRITERS) for i in range(EVENTS_PER_WRITER)]
    assert store.query("SELECT COUNT(*) FROM research_runs")[0][0] == WRITERS + 1  # and "shared"
    assert store.query("SELECT COUNT(*) FROM page_snapshots")[0][0] == WRITERS
    assert store.query("SELECT COUNT(*) FROM page_texts")[0][0] == 7
    assert store.query("SELECT COUNT(*) FROM nlp_analyses")[0][0] == 10
    assert store.query("SELECT COUNT(*) FROM search_cache")[0][0] == WRITERS


def test_50_concurrent_threads_lose_nothing(store: Store, store_url: str, caplog: pytest.LogCaptureFixture) -> None:
    runs.record_started(store, "shared", "t")
    errors: list[BaseException] = []
    start = threading.Barrier(WRITERS)

    def work(writer: int) -> None:
        own = Store(store_url)
        try:
            start.wait()
            _writer(own, writer)
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            own.close()

    threads = [threading.Thread(target=work, args=(n,)) for n in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and not [r for r in caplog.records if "search cache" in r.getMessage()]
    _check_nothing_lost(store)


def _process_writer(url: str, writer: int, start: Any) -> None:
    import logging
    import sys

    failures: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            failures.append(record.getMessage())

    logging.getLogger("scrapers.search.cache").addHandler(Collect())
    store = Store(url)
    start.wait()
    _writer(store, writer)
    store.close()
    if failures:  # the search cache logs (rather than raises) store errors
        sys.exit(f"writer {writer}: {failures[0]}")


def test_50_concurrent_processes_lose_nothing(store: Store, store_url: str) -> None:
    runs.record_started(store, "shared", "t")
    ctx = multiprocessing.get_context("fork")  # no re-import per process: 50 start in about a second
    start = ctx.Barrier(WRITERS)
    procs = [ctx.Process(target=_process_writer, args=(store_url, n, start)) for n in range(WRITERS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=240)
    assert [p.exitcode for p in procs] == [0] * WRITERS
    _check_nothing_lost(store)


def test_requeued_event_numbering_continues(store: Store) -> None:
    runs.record_started(store, "r", "t", status="accepted", request={"topic": "t"})
    runs.append_event(store, "r", ResearchRequeued(run_id="r", attempts=0))
    assert runs.append_event(store, "r", ResearchRequeued(run_id="r", attempts=1)) == 2
