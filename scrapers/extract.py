"""Main text and metadata of a fetched page, with trafilatura."""

from __future__ import annotations

import re

import trafilatura
from pydantic import BaseModel

from core.errors import ExtractionError

_HTML_LANG = re.compile(rb"<html[^>]*\blang=[\"']?([A-Za-z]{2})", re.IGNORECASE)
MIN_TEXT_CHARS = 80


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
    doc = trafilatura.bare_extraction(content, url=url, with_metadata=True, include_comments=False, include_tables=True)
    if doc is None:
        raise ExtractionError(f"{url}: no main text found in the page")
    data = doc.as_dict() if hasattr(doc, "as_dict") else dict(doc)
    text = (data.get("text") or "").strip()
    if len(text) < MIN_TEXT_CHARS:
        raise ExtractionError(f"{url}: main text has only {len(text)} characters")
    raw = content if isinstance(content, bytes) else content.encode("utf-8", errors="replace")
    match = _HTML_LANG.search(raw[:4096])
    return ExtractedPage(
        url=url,
        title=(data.get("title") or "").strip() or url,
        text=text,
        published=data.get("date"),
        site_name=data.get("sitename"),
        lang=match.group(1).decode().lower() if match else None,
    )


__all__ = [
    "MIN_TEXT_CHARS",
    "ExtractedPage",
    "extract_page",
]
