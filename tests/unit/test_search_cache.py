"""Query cache in the store (SQLite and PostgreSQL): hits spare the provider, TTL, keys, persistence, writers."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.settings import Settings
from core.store import Store, open_store
from scrapers.search.base import SearchProvider, SearchResult
from scrapers.search.cache import CachedSearchProvider, cache_key, provider_identity
from scrapers.search.chain import FallbackSearchProvider
from scrapers.search.ddgs import DdgsSearchProvider
from scrapers.search.local import LocalSearchProvider
from scrapers.search.searxng import SearxngSearchProvider
from tests.unit.test_search_server import SearxngServer, answer, row, serving


class Clock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    s = Store(store_url)
    yield s
    s.close()


@pytest.fixture
def server() -> Iterator[SearxngServer]:
    with serving(answer(row(1, publishedDate="2024-11-29"), row(2))) as s:
        yield s


async def run(provider: SearchProvider, query: str = "価格転嫁", **kwargs: Any) -> list[SearchResult]:
    return await provider.search(query, **kwargs)


def cached(server: SearxngServer, store: Store | Any, ttl_s: float = 3600, **kwargs: Any) -> CachedSearchProvider:
    return CachedSearchProvider(SearxngSearchProvider(server.url), store, ttl_s, **kwargs)


async def test_second_identical_search_hits_the_cache(server: SearxngServer, store: Store) -> None:
    provider = cached(server, store)
    assert isinstance(provider, SearchProvider) and provider.name == "searxng"
    first = await run(provider, max_results=2)
    assert provider.last_hit is False
    second = await run(provider, max_results=2)
    assert provider.last_hit is True
    assert second == first and second[0].published is not None and second[0].engines
    assert len(server.requests) == 1


async def test_a_rerun_in_a_new_store_and_provider_is_reproducible(server: SearxngServer, store_url: str) -> None:
    first_store = Store(store_url)
    first = await run(cached(server, first_store), max_results=2)
    first_store.close()
    second_store = Store(store_url)
    try:
        assert await run(cached(server, second_store), max_results=2) == first
    finally:
        second_store.close()
    assert len(server.requests) == 1


async def test_ttl_expiry(server: SearxngServer, store: Store) -> None:
    clock = Clock()
    provider = cached(server, store, ttl_s=60, clock=clock)
    await run(provider, max_results=2)
    clock.now += 59
    await run(provider, max_results=2)
    assert len(server.requests) == 1
    clock.now += 2  # 61 s after the first search
    await run(provider, max_results=2)
    assert len(server.requests) == 2 and provider.last_hit is False
    clock.now += 30  # the refreshed row counts from its own time
    await run(provider, max_results=2)
    assert len(server.requests) == 2


@pytest.mark.parametrize(
    "change",
    [
        {"query": "別のクエリ"},
        {"max_results": 1},
        {"time_range": "week"},
        {"region": "us-en"},
    ],
)
async def test_a_different_search_misses(server: SearxngServer, store: Store, change: dict[str, Any]) -> None:
    provider = cached(server, store)
    base: dict[str, Any] = {"query": "価格転嫁", "max_results": 2}
    await run(provider, **base)
    await run(provider, **{**base, **change})
    assert len(server.requests) == 2


async def test_equivalent_time_ranges_share_an_entry(server: SearxngServer, store: Store) -> None:
    provider = cached(server, store)
    await run(provider, max_results=2, time_range="w")
    await run(provider, max_results=2, time_range="week")
    await run(provider, max_results=2, time_range=None)
    await run(provider, max_results=2, time_range="all")
    assert len(server.requests) == 2


async def test_zero_ttl_disables_the_cache(server: SearxngServer, store: Store) -> None:
    provider = cached(server, store, ttl_s=0)
    await run(provider, max_results=2)
    await run(provider, max_results=2)
    assert len(server.requests) == 2
    assert store.query("SELECT COUNT(*) FROM search_cache")[0][0] == 0


async def test_empty_answers_are_not_cached(store: Store) -> None:
    with serving(answer()) as empty:
        provider = cached(empty, store)
        assert await run(provider) == [] and await run(provider) == []
    assert len(empty.requests) == 2


async def test_the_store_is_opened_lazily_by_the_opener(server: SearxngServer, tmp_path: Path) -> None:
    opened: list[Store] = []

    def opener() -> Store:
        opened.append(open_store(Settings(data_dir=tmp_path / "lazy")))
        return opened[-1]

    provider = cached(server, opener)
    assert opened == [] and not (tmp_path / "lazy").exists()
    await run(provider, max_results=2)
    await run(provider, max_results=2)
    assert len(opened) == 1 and len(server.requests) == 1
    row_ = opened[0].query("SELECT provider, query FROM search_cache")[0]._mapping
    assert (row_["provider"], row_["query"]) == (f"searxng:{server.url}:all:", "価格転嫁")
    opened[0].close()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_an_unusable_store_degrades_to_uncached_search(
    server: SearxngServer, tmp_path: Path, backend: str, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    unreachable = "postgresql+psycopg://nobody:secret@127.0.0.1:1/magi"  # nothing listens on port 1
    provider = cached(
        server,
        (lambda: open_store(Settings(data_dir=blocker / "data")))
        if backend == "sqlite"
        else (lambda: Store(unreachable)),
    )
    assert len(await run(provider, max_results=2)) == 2
    assert len(await run(provider, max_results=2)) == 2
    assert len(server.requests) == 2
    warnings = [r.getMessage() for r in caplog.records if "search cache" in r.getMessage()]
    assert warnings and ("MAGI_DATA_DIR" if backend == "sqlite" else "nobody:") in warnings[0]
    # the URL is named with its password masked: by the store's masking ("***"), or by the log
    # scrubbing ("[redacted]") where a logging set-up is in place
    assert "secret" not in " ".join(warnings)


async def test_concurrent_writers_in_separate_connections(
    server: SearxngServer, store_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    stores = [Store(store_url) for _ in range(4)]
    results = await run(SearxngSearchProvider(server.url), max_results=2)
    errors: list[BaseException] = []

    def write(store: Store) -> None:
        provider = cached(server, store)
        try:
            for i in range(25):
                provider._put(cache_key(provider.identity, f"q{i % 5}", 2, None, None), f"q{i % 5}", results)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and not [r for r in caplog.records if "search cache" in r.getMessage()]
    assert stores[0].query("SELECT COUNT(*) FROM search_cache")[0][0] == 5
    for s in stores:
        s.close()


def test_identity_covers_the_chain_and_provider_settings(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("# A\n\nalpha\n", encoding="utf-8")
    local = LocalSearchProvider(corpus)
    searx = SearxngSearchProvider("http://127.0.0.1:1", language="ja-JP")
    chain = FallbackSearchProvider([searx, DdgsSearchProvider(region="jp-jp"), local])
    identity = provider_identity(chain)
    assert identity.startswith("searxng:http://127.0.0.1:1:ja-JP:>ddgs:auto:jp-jp>local:")
    (corpus / "b.md").write_text("# B\n\nbeta\n", encoding="utf-8")
    assert provider_identity(LocalSearchProvider(corpus)) != provider_identity(local)  # corpus edits miss
    assert provider_identity(DdgsSearchProvider(kind="news")) == "ddgs-news:auto:jp-jp"


def _write_from_process(url: str, worker: int) -> None:
    import logging

    failures: list[logging.LogRecord] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            failures.append(record)

    logging.getLogger("scrapers.search.cache").addHandler(Collect())
    store = Store(url)
    provider = CachedSearchProvider(SearxngSearchProvider("http://127.0.0.1:1"), store, 3600)
    result = SearchResult(url=f"https://example.org/{worker}", title="t", snippet="s", provider="searxng", rank=1)
    for i in range(30):
        provider._put(cache_key(provider.identity, f"q{i % 3}", 1, None, None), f"q{i % 3}", [result])
    store.close()
    if failures:  # _put logs (rather than raises) store errors
        raise SystemExit(f"cache writes failed: {failures[0].getMessage()}")


def test_concurrent_writers_in_separate_processes(store_url: str) -> None:
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    Store(store_url).close()  # schema in place before the race
    procs = [ctx.Process(target=_write_from_process, args=(store_url, n)) for n in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=60)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    store = Store(store_url)
    assert store.query("SELECT COUNT(*) FROM search_cache")[0][0] == 3
    store.close()
