"""Main text and metadata of a fetched page.

HTML is read as a document (:mod:`scrapers.structure`: headings, paragraphs, list items, table rows and
definition lists as records, no navigation or code listings); trafilatura is the fallback for pages
whose structure yields too little text. The published date comes only from the page's own metadata
(``<meta>`` date fields, ``<time datetime>``): a guessed or default date is worse than none.
"""

from __future__ import annotations

import re
from typing import Any

import trafilatura
from pydantic import BaseModel

from scrapers.errors import ExtractionError
from scrapers.search.textfiles import parse_date
from scrapers.structure import html_blocks, parse_html, render_blocks

_HTML_LANG = re.compile(rb"<html[^>]*\blang=[\"']?([A-Za-z]{2})", re.IGNORECASE)
MIN_TEXT_CHARS = 80
_DATE_META = frozenset(
    {"date", "dc.date", "dcterms.date", "dcterms.created", "dcterms.issued", "pubdate", "publishdate",
     "article:published_time", "datepublished"}
)  # fmt: skip


class ExtractedPage(BaseModel):
    url: str
    title: str
    text: str
    published: str | None = None
    site_name: str | None = None
    lang: str | None = None  # from <html lang>; the caller detects it when missing


def extract_page(content: bytes | str, *, url: str, content_type: str = "text/html") -> ExtractedPage:
    """Extract the main text; plain text and Markdown pass through with their first line as title."""
    if not content_type.startswith(("text/html", "application/xhtml")):
        text = content.decode("utf-8", errors="replace") if isinstance(content, bytes) else content
        text = text.strip()
        if len(text) < MIN_TEXT_CHARS:
            raise ExtractionError(f"{url}: fewer than {MIN_TEXT_CHARS} characters of text")
        title = text.splitlines()[0].lstrip("# ").strip()[:200]
        return ExtractedPage(url=url, title=title, text=text)
    raw = content if isinstance(content, bytes) else content.encode("utf-8", errors="replace")
    match = _HTML_LANG.search(raw[:4096])
    lang = match.group(1).decode().lower() if match else None
    root = parse_html(content)
    text = render_blocks(html_blocks(root)) if root is not None else ""
    title = _squash(root.findtext(".//title") or "") if root is not None else ""
    published = _metadata_date(root) if root is not None else None
    site_name = _meta(root, "og:site_name") if root is not None else None
    if len(text) < MIN_TEXT_CHARS:
        doc = trafilatura.bare_extraction(
            content, url=url, with_metadata=True, include_comments=False, include_tables=True
        )
        if doc is None:
            raise ExtractionError(f"{url}: no main text found in the page")
        data = doc.as_dict() if hasattr(doc, "as_dict") else dict(doc)
        text = (data.get("text") or "").strip()
        title = title or (data.get("title") or "").strip()
        site_name = data.get("sitename")
    if len(text) < MIN_TEXT_CHARS:
        raise ExtractionError(f"{url}: main text has only {len(text)} characters")
    return ExtractedPage(url=url, title=title or url, text=text, published=published, site_name=site_name, lang=lang)


def _squash(text: str) -> str:
    return " ".join(text.split())


def _meta(root: Any, key: str) -> str | None:
    for meta in root.iter("meta"):
        if (meta.get("property") or meta.get("name") or "").lower() == key and meta.get("content"):
            return str(meta.get("content")).strip() or None
    return None


def _metadata_date(root: Any) -> str | None:
    """ISO date from the page's metadata only: ``<meta>`` date fields, then the first ``<time datetime>``."""
    for meta in root.iter("meta"):
        key = (meta.get("name") or meta.get("property") or meta.get("itemprop") or "").lower()
        if key in _DATE_META and (found := parse_date(meta.get("content"))):
            return found.isoformat()
    for time_el in root.iter("time"):
        if found := parse_date(time_el.get("datetime")):
            return found.isoformat()
    return None


__all__ = [
    "MIN_TEXT_CHARS",
    "ExtractedPage",
    "extract_page",
]
