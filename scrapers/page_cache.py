"""Content-addressed page snapshots in the store: URL -> extracted text, metadata, fetch time, status.

Texts are stored once per content hash (syndicated copies and re-fetches share a row); each URL
points at its latest snapshot. A snapshot younger than the TTL is reused instead of refetching.
Failures are not cached: a page that failed may work next time. With a PostgreSQL store every node
of a cluster shares one cache. Epoch columns are ``DOUBLE PRECISION`` (PostgreSQL's ``REAL`` is 4 bytes,
minutes off at today's epoch; SQLite reads both as REAL).
"""

from __future__ import annotations

import hashlib
import time
from datetime import UTC, datetime

import sqlalchemy as sa

from core.store import Store, register_migration
from scrapers.extract import ExtractedPage

register_migration(
    "page_cache",
    1,
    """
    CREATE TABLE page_texts (
        content_hash TEXT PRIMARY KEY,
        text TEXT NOT NULL
    );
    CREATE TABLE page_snapshots (
        url TEXT PRIMARY KEY,
        final_url TEXT NOT NULL,
        status INTEGER NOT NULL,
        content_hash TEXT NOT NULL REFERENCES page_texts(content_hash),
        title TEXT NOT NULL,
        published TEXT,
        site_name TEXT,
        lang TEXT,
        fetched_at TEXT NOT NULL,
        fetched_epoch DOUBLE PRECISION NOT NULL
    );
    """,
)


# Version 2 of the page reader (scrapers/structure.py: records, no navigation or code, metadata-only
# dates) extracts other text from the same HTML: snapshots taken by the old reader are dropped once, so
# they are fetched and read again instead of serving the old text until the TTL ends.
register_migration(
    "page_cache",
    2,
    """
    DELETE FROM page_snapshots;
    DELETE FROM page_texts;
    """,
)


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class PageCache:
    def __init__(self, store: Store, ttl_s: float) -> None:
        self._store = store
        self._ttl_s = ttl_s

    def get(self, url: str) -> ExtractedPage | None:
        if self._ttl_s <= 0:
            return None
        rows = self._store.query(
            "SELECT s.title, s.published, s.site_name, s.lang, t.text FROM page_snapshots s "
            "JOIN page_texts t USING (content_hash) WHERE s.url = :url AND s.fetched_epoch >= :since",
            {"url": url, "since": time.time() - self._ttl_s},
        )
        if not rows:
            return None
        title, published, site_name, lang, text = rows[0]
        return ExtractedPage(url=url, title=title, text=text, published=published, site_name=site_name, lang=lang)

    def put(self, page: ExtractedPage, *, final_url: str, status: int) -> str:
        digest = text_hash(page.text)
        with self._store.transaction() as conn:
            conn.execute(
                sa.text(
                    "INSERT INTO page_texts (content_hash, text) VALUES (:hash, :text) "
                    "ON CONFLICT (content_hash) DO NOTHING"
                ),
                {"hash": digest, "text": page.text},
            )
            conn.execute(
                sa.text(
                    "INSERT INTO page_snapshots (url, final_url, status, content_hash, title, published, site_name,"
                    " lang, fetched_at, fetched_epoch) VALUES (:url, :final_url, :status, :hash, :title, :published,"
                    " :site_name, :lang, :fetched_at, :fetched_epoch) ON CONFLICT (url) DO UPDATE SET"
                    " final_url=excluded.final_url, status=excluded.status, content_hash=excluded.content_hash,"
                    " title=excluded.title, published=excluded.published, site_name=excluded.site_name,"
                    " lang=excluded.lang, fetched_at=excluded.fetched_at, fetched_epoch=excluded.fetched_epoch"
                ),
                {
                    "url": page.url,
                    "final_url": final_url,
                    "status": status,
                    "hash": digest,
                    "title": page.title,
                    "published": page.published,
                    "site_name": page.site_name,
                    "lang": page.lang,
                    "fetched_at": datetime.now(UTC).isoformat(),
                    "fetched_epoch": time.time(),
                },
            )
        return digest


__all__ = [
    "PageCache",
    "text_hash",
]
