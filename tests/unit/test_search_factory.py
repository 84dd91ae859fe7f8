"""open_search: the configured chain, the resolver, the cache and where its store comes from."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import ConfigError, InputError
from core.settings import load_settings
from core.store import DB_FILENAME, Store, sqlite_url
from scrapers.search.cache import CachedSearchProvider
from scrapers.search.chain import FallbackSearchProvider
from scrapers.search.ddgs import DdgsSearchProvider
from scrapers.search.factory import SearchSetup, open_search
from scrapers.search.local import LocalCorpus, LocalSearchProvider
from scrapers.search.searxng import SearxngSearchProvider
from tests.unit.test_search_server import Reply, answer, row, serving


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    d = tmp_path / "corpus"
    d.mkdir()
    (d / "price.md").write_text("# Price pass-through\n\nSmall firms pass rising costs on.\n", encoding="utf-8")
    return d


def test_default_is_the_local_corpus_uncached(corpus: Path) -> None:
    setup = open_search(load_settings(overrides={"search": {"corpus_dir": corpus}}))
    assert isinstance(setup, SearchSetup)
    assert isinstance(setup.provider, LocalSearchProvider) and isinstance(setup.resolver, LocalCorpus)
    assert setup.chain == ("local",) and setup.cached is False


def test_missing_corpus_fails_fast(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        open_search(load_settings(overrides={"search": {"corpus_dir": tmp_path / "nope"}}))


def test_searxng_without_url_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="MAGI_SEARCH_SEARXNG_URL"):
        open_search(load_settings(overrides={"search": {"provider": "searxng"}}))


def test_chain_is_deduplicated_cached_and_keeps_the_resolver(corpus: Path) -> None:
    settings = load_settings(
        overrides={
            "search": {
                "provider": "searxng",
                "fallbacks": ["local", "searxng", "ddgs", "local"],
                "searxng_url": "http://127.0.0.1:1",
                "corpus_dir": corpus,
                "ddgs_region": "us-en",
                "ddgs_backend": "bing",
            }
        }
    )
    setup = open_search(settings)
    assert setup.chain == ("searxng", "local", "ddgs") and setup.cached
    assert isinstance(setup.provider, CachedSearchProvider)
    chain = setup.provider.inner
    assert isinstance(chain, FallbackSearchProvider)
    searx, local, ddgs = chain.providers
    assert isinstance(searx, SearxngSearchProvider) and searx.language == "en-US"
    assert isinstance(local, LocalSearchProvider) and setup.resolver is local.corpus
    assert isinstance(ddgs, DdgsSearchProvider) and (ddgs.region, ddgs.backend) == ("us-en", "bing")


def test_zero_ttl_means_no_cache() -> None:
    setup = open_search(load_settings(overrides={"search": {"provider": "ddgs", "cache_ttl_s": 0}}))
    assert isinstance(setup.provider, DdgsSearchProvider) and setup.resolver is None and not setup.cached


async def test_preflight_does_not_open_the_store_the_first_search_does(corpus: Path, isolated_settings: Path) -> None:
    with serving(Reply(500, "down")) as server:
        settings = load_settings(
            overrides={
                "search": {
                    "provider": "searxng",
                    "fallbacks": ["local"],
                    "searxng_url": server.url,
                    "corpus_dir": corpus,
                }
            }
        )
        setup = open_search(settings)
        assert not isolated_settings.exists()  # MAGI_DATA_DIR: nothing created by the preflight
        first = await setup.provider.search("price", max_results=3)
        assert (isolated_settings / DB_FILENAME).is_file()
        again = await open_search(settings).provider.search("price", max_results=3)
    assert first == again and first[0].provider == "local"
    assert len(server.requests) == 2  # first search: searxng tried twice, then local; rerun: the cache


async def test_a_given_store_is_used(tmp_path: Path) -> None:
    (tmp_path / "given").mkdir()
    store = Store(sqlite_url(tmp_path / "given"))
    try:
        with serving(answer(row(1))) as server:
            settings = load_settings(overrides={"search": {"provider": "searxng", "searxng_url": server.url}})
            provider = open_search(settings, store=store).provider
            await provider.search("q", max_results=1)
            await provider.search("q", max_results=1)
        assert len(server.requests) == 1
        assert store.query("SELECT COUNT(*) FROM search_cache")[0][0] == 1
    finally:
        store.close()
