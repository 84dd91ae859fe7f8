"""The bundled sample corpus (data/corpus): manifest, pages, planted conflicts and extractability."""

from __future__ import annotations

import datetime as dt
import difflib
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
import trafilatura
import yaml
from lxml import html as lxml_html

# tests/conftest.py chdirs into tmp_path, so locate the corpus from this file.
CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
SOURCE_TYPES = {"official", "news", "academic", "community"}
LANGS = {"ja", "en"}
CONFLICT_TYPES = {"contradiction", "inconsistency", "outdated"}
MIN_CHARS = {"ja": 300, "en": 600}


def _load_yaml(name: str) -> Any:
    return yaml.safe_load((CORPUS / name).read_text(encoding="utf-8"))


MANIFEST: dict[str, Any] = _load_yaml("manifest.yaml")
PAGES: list[dict[str, Any]] = MANIFEST["pages"]
BY_URL = {p["url"]: p for p in PAGES}
PLANTED: dict[str, Any] = _load_yaml("planted.yaml")


def _read(page: dict[str, Any]) -> str:
    return (CORPUS / page["file"]).read_text(encoding="utf-8")


@cache
def _extract(file: str) -> str:
    return trafilatura.extract((CORPUS / file).read_text(encoding="utf-8")) or ""


def _page_id(page: dict[str, Any]) -> str:
    return str(page["file"])


def test_manifest_shape() -> None:
    assert MANIFEST["topic"] == "中小企業の価格転嫁の現状"
    assert isinstance(PAGES, list)
    allowed = {"file", "url", "title", "source_type", "lang", "published", "duplicate_of"}
    for page in PAGES:
        assert {"file", "url", "title", "source_type", "lang", "published"} <= page.keys(), page
        assert set(page) <= allowed, page
        assert isinstance(page["title"], str) and page["title"].strip()
        assert isinstance(page["published"], dt.date), page
        assert page["source_type"] in SOURCE_TYPES, page
        assert page["lang"] in LANGS, page


def test_files_exist_and_each_is_referenced_once() -> None:
    files = [p["file"] for p in PAGES]
    assert len(files) == len(set(files))
    for f in files:
        assert (CORPUS / f).is_file(), f
    on_disk = {p.relative_to(CORPUS).as_posix() for p in (CORPUS / "pages").rglob("*.html")}
    assert on_disk == set(files)


def test_urls_unique_and_reserved_example_hosts() -> None:
    urls = [p["url"] for p in PAGES]
    assert len(urls) == len(set(urls))
    for url in urls:
        parsed = urlparse(url)
        assert parsed.scheme == "https", url
        assert parsed.hostname is not None and parsed.hostname.endswith(".example"), url


def test_corpus_size_and_mix() -> None:
    assert len(PAGES) >= 30
    langs = Counter(p["lang"] for p in PAGES)
    assert langs["ja"] > 0 and langs["en"] > 0
    assert langs["ja"] > langs["en"]
    types = Counter(p["source_type"] for p in PAGES)
    for source_type in SOURCE_TYPES:
        assert types[source_type] >= 5, types


def test_duplicates_point_to_existing_originals() -> None:
    dups = [p for p in PAGES if "duplicate_of" in p]
    assert len(dups) >= 3
    for page in dups:
        original = BY_URL.get(page["duplicate_of"])
        assert original is not None, page
        assert original["url"] != page["url"]
        assert "duplicate_of" not in original
        assert original["lang"] == page["lang"]
        assert urlparse(original["url"]).hostname != urlparse(page["url"]).hostname
        ratio = difflib.SequenceMatcher(None, _extract(original["file"]), _extract(page["file"])).ratio()
        assert 0.8 < ratio < 1.0, (page["file"], ratio)


def test_planted_conflicts() -> None:
    conflicts = PLANTED["conflicts"]
    assert len(conflicts) >= 4
    ids = [c["id"] for c in conflicts]
    assert len(ids) == len(set(ids))
    for conflict in conflicts:
        assert conflict["type"] in CONFLICT_TYPES, conflict["id"]
        assert conflict["subject"]
        sides = conflict["sides"]
        assert len(sides) >= 2
        for side in sides:
            page = BY_URL.get(side["url"])
            assert page is not None, side
            assert side["source_type"] == page["source_type"], side
            # The conflicting value is stated in the page's main text.
            assert str(side["value"]) in _extract(page["file"]), side
        assert len({str(s["value"]) for s in sides}) >= 2, conflict["id"]
        assert len({s["source_type"] for s in sides}) >= 2, conflict["id"]
    assert any(c["type"] == "outdated" for c in conflicts)
    # at least one conflict spans both languages
    assert any(len({BY_URL[s["url"]]["lang"] for s in c["sides"]}) == 2 for c in conflicts)


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_page_head_matches_manifest(page: dict[str, Any]) -> None:
    doc = lxml_html.fromstring(_read(page).encode("utf-8"))
    assert doc.get("lang") == page["lang"]
    assert doc.xpath("//head/meta[@charset]")
    assert doc.xpath("string(//head/title)").strip()
    assert doc.xpath("//head/meta[@property='og:site_name']/@content")
    assert doc.xpath("//head/link[@rel='canonical']/@href") == [page["url"]]
    dates = doc.xpath("//head/meta[@name='date']/@content")
    dates += doc.xpath("//head/meta[@property='article:published_time']/@content")
    assert dates, page["file"]
    assert {d[:10] for d in dates} == {page["published"].isoformat()}
    articles = doc.xpath("//article")
    assert len(articles) == 1
    assert articles[0].xpath("string(.//h1)").strip() == page["title"]


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_main_text_extraction_skips_boilerplate(page: dict[str, Any]) -> None:
    raw = _read(page)
    text = _extract(page["file"])
    assert len(text) >= MIN_CHARS[page["lang"]], (page["file"], len(text))
    footer = lxml_html.fromstring(raw.encode("utf-8")).xpath("//footer")
    assert footer
    copyright_lines = [
        line.strip() for line in footer[-1].text_content().splitlines() if "©" in line or "Copyright" in line
    ]
    assert copyright_lines, page["file"]
    for line in copyright_lines:
        assert line not in text, (page["file"], line)
