"""Search over a local folder of pages (the offline corpus), with the same interface as web search.

Documents and the BM25 index are cached per process, keyed by the directory and every file's
mtime and size, so repeated searches (and new ``LocalCorpus`` objects for the same folder) are cheap
and an edited file is picked up.

``time_range`` is relative to the newest published date in the corpus, not to today, so an offline
corpus gives the same answers whenever it is searched; undated documents always pass the filter.
``region`` is accepted for interface compatibility and ignored (use the manifest's ``lang``).
When a ``manifest.yaml`` lists pages, it defines the corpus: files it does not list are skipped.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlparse
from urllib.request import url2pathname

from core.errors import InputError
from core.runtime import current_node_id
from core.text.tokenize import is_japanese, token_pairs, tokenize
from scrapers.search.base import SearchResult
from scrapers.search.bm25 import BM25Index
from scrapers.search.corpus_files import CorpusLimits, CorpusReadError, Deadline, describe_skips, read_regular, scan
from scrapers.search.manifest import MANIFEST_NAME, Manifest, load_manifest
from scrapers.search.snippet import snippet
from scrapers.search.textfiles import SUFFIXES, parse_file

log = logging.getLogger(__name__)

TIME_RANGES = {"d": 1, "day": 1, "w": 7, "week": 7, "m": 30, "month": 30, "y": 365, "year": 365}
_CACHE_SIZE = 8
_HINT = "pass --corpus DIR with HTML, Markdown or text files"

T = TypeVar("T")
Fingerprint = tuple[str, tuple[tuple[str, int, int], ...]]


@dataclass(frozen=True, slots=True)
class CorpusDocument:
    """One file of the corpus with its canonical URL and metadata."""

    path: Path
    url: str
    title: str
    text: str
    source_type: str | None = None
    lang: str | None = None
    published: date | None = None
    duplicate_of: str | None = None


class _LRU:
    """A tiny thread-safe per-process cache that builds each value once, without one lock for all.

    The global lock only guards the dictionaries; a build holds just its own key's lock, so a slow or
    hostile corpus delays the callers that want that corpus and nobody else.
    """

    def __init__(self) -> None:
        self._items: OrderedDict[Fingerprint, object] = OrderedDict()
        self._building: dict[Fingerprint, threading.Lock] = {}
        self._lock = threading.Lock()

    def _cached(self, key: Fingerprint) -> tuple[bool, object]:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return True, self._items[key]
            return False, None

    def get(self, key: Fingerprint, build: Callable[[], T]) -> T:
        found, value = self._cached(key)
        if found:
            return value  # type: ignore[return-value]
        with self._lock:
            key_lock = self._building.setdefault(key, threading.Lock())
        with key_lock:
            found, value = self._cached(key)
            if found:
                return value  # type: ignore[return-value]
            try:
                built = build()
            finally:
                with self._lock:
                    self._building.pop(key, None)
            with self._lock:
                self._items[key] = built
                while len(self._items) > _CACHE_SIZE:
                    self._items.popitem(last=False)
            return built


_DOCUMENTS = _LRU()
_INDEXES = _LRU()


@dataclass(frozen=True, slots=True)
class _Loaded:
    topic: str | None
    documents: list[CorpusDocument]
    skipped: dict[str, int]
    node_id: str  # the Ray node whose disk the files were read from


def _load(
    files: list[tuple[Path, os.stat_result]], directory: Path, limits: CorpusLimits, deadline: Deadline
) -> _Loaded:
    manifest = load_manifest(directory, limits.max_file_bytes) or Manifest()
    docs: list[CorpusDocument] = []
    skipped: Counter[str] = Counter()
    for path, _ in files:
        deadline.check()
        entry = manifest.entries.get(path)
        if entry is None and manifest.entries and path.is_symlink():
            entry = manifest.entries.get(path.resolve())
        if entry is None and manifest.entries:
            continue  # a manifest defines the corpus: unlisted files (README, notes) are not sources
        real = path.resolve()
        if not real.is_relative_to(directory):  # re-pointed since the walk
            skipped["outside_root"] += 1
            continue
        try:
            parsed = parse_file(read_regular(real, limits.max_file_bytes, inside=directory), path.suffix)
        except CorpusReadError as exc:
            skipped[exc.reason] += 1
            continue
        if not parsed.text and entry is None:
            continue
        lang = (entry.lang if entry else None) or ("ja" if is_japanese(parsed.text) else "en")
        docs.append(
            CorpusDocument(
                path=path,
                url=entry.url if entry else path.as_uri(),
                title=(entry.title if entry else None) or parsed.title or path.stem,
                text=parsed.text,
                source_type=entry.source_type if entry else None,
                lang=lang,
                published=(entry.published if entry else None) or parsed.published,
                duplicate_of=entry.duplicate_of if entry else None,
            )
        )
    return _Loaded(manifest.topic, docs, dict(skipped), current_node_id())


class LocalCorpus:
    """A folder of HTML/Markdown/text files (recursively) plus an optional ``manifest.yaml``.

    Built within ``limits`` (see :mod:`scrapers.search.corpus_files`); ``skipped`` counts the files
    left out by reason, and ``node_id`` is the Ray node whose disk they were read from.
    """

    def __init__(self, directory: Path | str, limits: CorpusLimits | None = None) -> None:
        given = Path(directory).expanduser()
        if not given.exists():
            raise InputError(f"corpus directory {given} does not exist; {_HINT}")
        if not given.is_dir():
            raise InputError(f"corpus path {given} is not a directory; {_HINT}")
        self.directory = given.resolve()
        self.limits = limits = limits or CorpusLimits()
        deadline = Deadline(self.directory, limits.budget_s)
        walk_skipped: Counter[str] = Counter()
        files = scan(self.directory, SUFFIXES, limits, deadline, walk_skipped)
        stats = list(files)
        if (manifest := self.directory / MANIFEST_NAME).is_file():
            stats.append((manifest, manifest.stat()))
        self.fingerprint: Fingerprint = (
            str(self.directory),
            tuple((str(p.relative_to(self.directory)), s.st_mtime_ns, s.st_size) for p, s in stats),
        )
        loaded = _DOCUMENTS.get(self.fingerprint, lambda: _load(files, self.directory, limits, deadline))
        self.topic, self.documents, self.node_id = loaded.topic, loaded.documents, loaded.node_id
        self.skipped: dict[str, int] = dict(walk_skipped + Counter(loaded.skipped))
        if self.skipped:
            log.warning("corpus %s: %s", self.directory, describe_skips(self.skipped))
        if not self.documents:
            raise InputError(
                f"corpus directory {self.directory} has no usable files "
                f"({', '.join(sorted(SUFFIXES))} with text); {_HINT}"
            )
        self._by_url = {doc.url: doc for doc in self.documents}
        self._by_path = {doc.path: doc for doc in self.documents}

    def __len__(self) -> int:
        return len(self.documents)

    @property
    def newest_date(self) -> date | None:
        """The latest published date in the corpus: the "now" of ``time_range``."""
        return max((d.published for d in self.documents if d.published), default=None)

    def get(self, url: str) -> CorpusDocument | None:
        """The document behind a manifest URL or a ``file://`` URI of a corpus file, else None."""
        doc = self._by_url.get(url) or self._by_url.get(url.split("#", 1)[0])
        if doc is None and url.startswith("file:"):
            path = Path(url2pathname(urlparse(url).path))
            doc = self._by_path.get(path) or self._by_path.get(path.resolve())
        return doc

    def path_for(self, url: str) -> Path | None:
        """The local file for ``url`` (so fetchers can read the page offline), else None."""
        doc = self.get(url)
        return doc.path if doc else None


def _build_index(corpus: LocalCorpus) -> BM25Index:
    started = time.perf_counter()
    deadline = Deadline(corpus.directory, corpus.limits.budget_s)

    def tokens() -> Iterator[list[str]]:
        for d in corpus.documents:
            deadline.check()
            yield tokenize(d.text if d.text.startswith(d.title) else f"{d.title}\n{d.text}")

    index = BM25Index(tokens())
    log.info("indexed %d documents of %s in %.2f s", len(index), corpus.directory, time.perf_counter() - started)
    return index


def _cutoff(time_range: str | None, newest: date | None) -> date | None:
    key = (time_range or "all").strip().lower()
    if key == "all":
        return None
    if key not in TIME_RANGES:
        raise InputError(f"time_range {time_range!r} is not one of d, w, m, y, day, week, month, year, all")
    return newest - timedelta(days=TIME_RANGES[key]) if newest else None


def _in_range(doc: CorpusDocument, cutoff: date | None) -> bool:
    return cutoff is None or doc.published is None or doc.published >= cutoff


class LocalSearchProvider:
    """BM25 search (k1=1.5, b=0.75) over a :class:`LocalCorpus`; Japanese via SudachiPy."""

    name = "local"

    def __init__(self, corpus: LocalCorpus | Path | str) -> None:
        self.corpus = corpus if isinstance(corpus, LocalCorpus) else LocalCorpus(corpus)

    def index(self) -> BM25Index:
        """The corpus index, built on first use and then shared by the whole process."""
        return _INDEXES.get(self.corpus.fingerprint, lambda: _build_index(self.corpus))

    async def search(
        self,
        query: str,
        *,
        max_results: int = 10,
        time_range: str | None = None,
        region: str | None = None,
    ) -> list[SearchResult]:
        """Top ``max_results`` documents for ``query``; ``[]`` when nothing matches."""
        return await asyncio.to_thread(
            self.search_sync, query, max_results=max_results, time_range=time_range, region=region
        )

    def search_sync(
        self,
        query: str,
        *,
        max_results: int = 10,
        time_range: str | None = None,
        region: str | None = None,
    ) -> list[SearchResult]:
        """Blocking form of :meth:`search` (for threads, scripts and benchmarks)."""
        if not query or not query.strip():
            raise InputError("search query is empty; give some words to search for")
        if max_results < 1:
            raise InputError(f"max_results must be at least 1, got {max_results}")
        cutoff = _cutoff(time_range, self.corpus.newest_date)
        pairs = token_pairs(query)
        index = self.index()
        docs = self.corpus.documents
        scored = [(score, i) for i, score in index.scores(t for t, _ in pairs).items() if _in_range(docs[i], cutoff)]
        scored.sort(key=lambda item: (-item[0], docs[item[1]].url))
        weights: dict[str, float] = {}
        for token, surface in pairs:
            for needle in (token, surface):
                weights[needle] = max(weights.get(needle, 0.0), index.idf(token))
        return [
            SearchResult(
                url=docs[i].url,
                title=docs[i].title,
                snippet=snippet(docs[i].text, weights),
                published=docs[i].published,
                provider=self.name,
                rank=rank,
                score=round(score, 4),
                source_type=docs[i].source_type,
                lang=docs[i].lang,
            )
            for rank, (score, i) in enumerate(scored[:max_results], start=1)
        ]


__all__ = [
    "TIME_RANGES",
    "CorpusDocument",
    "Fingerprint",
    "LocalCorpus",
    "LocalSearchProvider",
]
