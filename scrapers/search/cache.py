"""Query cache in the project store: re-running a research is reproducible and spares web engines.

Rows are keyed by a SHA-256 of (provider identity, query, max_results, time range, region); the
identity covers the whole fallback chain and each provider's settings (backend, region, instance
URL, local corpus fingerprint), so changing any of them misses. Empty answers are not cached (a
blank page from a flaky engine should not stick for a day). The cache is best-effort: a store
error is logged and the search goes to the providers.

Store connections do not cross processes: give a :class:`Store` opened in this process, or a
callable opening one, which is called on the first search (so building a provider stays cheap).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable

import sqlalchemy as sa
from pydantic import TypeAdapter, ValidationError
from sqlalchemy.exc import SQLAlchemyError

from core.errors import ConfigError
from core.settings import Settings
from core.store import Store, configured_url, open_store, register_migration
from scrapers.search.base import SearchProvider, SearchResult, time_limit
from scrapers.search.chain import FallbackSearchProvider
from scrapers.search.local import LocalSearchProvider

log = logging.getLogger(__name__)

COMPONENT = "search_cache"
register_migration(
    COMPONENT,
    1,
    """
    CREATE TABLE search_cache (
        key TEXT PRIMARY KEY,
        provider TEXT NOT NULL,
        query TEXT NOT NULL,
        results_json TEXT NOT NULL,
        created_at DOUBLE PRECISION NOT NULL
    );
    CREATE INDEX search_cache_created_at ON search_cache(created_at);
    """,
)
_RESULTS = TypeAdapter(list[SearchResult])


def provider_identity(provider: SearchProvider) -> str:
    """Everything about a provider that changes its answers, as one string (part of the cache key)."""
    if isinstance(provider, FallbackSearchProvider):
        return ">".join(provider_identity(p) for p in provider.providers)
    if isinstance(provider, LocalSearchProvider):
        digest = hashlib.sha256(repr(provider.corpus.fingerprint).encode()).hexdigest()[:16]
        return f"local:{digest}"
    identity = getattr(provider, "cache_identity", None)
    return identity if isinstance(identity, str) else provider.name


def cache_key(identity: str, query: str, max_results: int, time_range: str | None, region: str | None) -> str:
    parts = [identity, query.strip(), max_results, time_limit(time_range) or "all", region or ""]
    return hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode()).hexdigest()


_SHARED: dict[tuple[int, str], Store] = {}
_SHARED_LOCK = threading.Lock()


def shared_store(settings: Settings) -> Store:
    """One :class:`Store` per process and database (agents call ``open_search`` per run)."""
    key = (os.getpid(), configured_url(settings))
    with _SHARED_LOCK:
        if key not in _SHARED:
            _SHARED[key] = open_store(settings)
        return _SHARED[key]


class CachedSearchProvider:
    """Answers from the store when an identical search is younger than ``ttl_s``; ``ttl_s=0`` disables."""

    def __init__(
        self,
        inner: SearchProvider,
        store: Store | Callable[[], Store],
        ttl_s: float,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.ttl_s = ttl_s
        self.identity = provider_identity(inner)
        self._store_or_opener = store
        self._store: Store | None = None
        self._clock = clock
        self._lock = threading.Lock()
        self.last_hit = False

    def store(self) -> Store:
        """The store, opened (and migrated for this table) on first use."""
        with self._lock:
            if self._store is None:
                given = self._store_or_opener
                store = given if isinstance(given, Store) else given()
                if (COMPONENT, 1) not in store.applied_migrations():
                    store.migrate()  # the store was opened before this module registered its table
                self._store = store
            return self._store

    async def search(
        self,
        query: str,
        *,
        max_results: int = 10,
        time_range: str | None = None,
        region: str | None = None,
    ) -> list[SearchResult]:
        self.last_hit = False
        if self.ttl_s <= 0:
            return await self.inner.search(query, max_results=max_results, time_range=time_range, region=region)
        key = cache_key(self.identity, query, max_results, time_range, region)
        cached = await asyncio.to_thread(self._get, key)
        if cached is not None:
            self.last_hit = True
            return cached
        results = await self.inner.search(query, max_results=max_results, time_range=time_range, region=region)
        if results:
            await asyncio.to_thread(self._put, key, query, results)
        return results

    def _get(self, key: str) -> list[SearchResult] | None:
        try:
            rows = self.store().query(
                "SELECT results_json FROM search_cache WHERE key = :key AND created_at > :since",
                {"key": key, "since": self._clock() - self.ttl_s},
            )
            return _RESULTS.validate_json(rows[0][0]) if rows else None
        except (SQLAlchemyError, OSError, ConfigError, ValidationError) as exc:
            log.warning("search cache read failed (%s); searching without it", exc)
            return None

    def _put(self, key: str, query: str, results: list[SearchResult]) -> None:
        try:
            with self.store().transaction() as conn:
                conn.execute(
                    sa.text(
                        "INSERT INTO search_cache (key, provider, query, results_json, created_at) "
                        "VALUES (:key, :provider, :query, :results, :at) ON CONFLICT (key) DO UPDATE SET "
                        "provider=excluded.provider, query=excluded.query, results_json=excluded.results_json, "
                        "created_at=excluded.created_at"
                    ),
                    {
                        "key": key,
                        "provider": self.identity,
                        "query": query,
                        "results": _RESULTS.dump_json(results).decode(),
                        "at": self._clock(),
                    },
                )
        except (SQLAlchemyError, OSError, ConfigError) as exc:
            log.warning("search cache write failed (%s); results are not cached", exc)


__all__ = [
    "COMPONENT",
    "CachedSearchProvider",
    "cache_key",
    "provider_identity",
    "shared_store",
]
