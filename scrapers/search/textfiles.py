"""Title, plain text and date of a local HTML, Markdown or text file, fast enough for thousands of files.

This is indexing text, not article extraction: lxml text of the page minus script/style/nav/footer.
Bytes are decoded as UTF-8, then the declared charset, then cp932 and EUC-JP (old Japanese pages).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import lxml.html
from lxml import etree

HTML_SUFFIXES = frozenset({".html", ".htm"})
MARKDOWN_SUFFIXES = frozenset({".md", ".markdown"})
TEXT_SUFFIXES = frozenset({".txt"})
SUFFIXES = HTML_SUFFIXES | MARKDOWN_SUFFIXES | TEXT_SUFFIXES

_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE)
_XML_DECL = re.compile(r"^\s*<\?xml[^>]*\?>")
_ALIASES = {"shift_jis": "cp932", "shift-jis": "cp932", "sjis": "cp932", "x-sjis": "cp932", "windows-31j": "cp932"}
_DROP = ("script", "style", "nav", "footer", "noscript", "template", "svg", "iframe")
_BLOCKS = (
    "p", "div", "br", "li", "ul", "ol", "tr", "td", "th", "table", "section", "article", "header", "main",
    "aside", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre", "dd", "dt", "figcaption", "hr",
)  # fmt: skip
_DATE_META = frozenset(
    {"date", "dc.date", "dcterms.date", "dcterms.created", "pubdate", "publishdate", "article:published_time"}
)
_DATE = re.compile(r"(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})")
_HIRAGANA = re.compile(r"[\u3041-\u3096]")
_SPACES = re.compile(r"[ \t\r\f\v]+")
_NEWLINES = re.compile(r" ?\n[\s]*")
_MD_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_MD_MARKUP = re.compile(r"^\s{0,3}(?:#{1,6}\s+|>\s?|[-*+]\s+|\d+\.\s+)|[*_`~]+", re.MULTILINE)
_MD_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
_FRONT_MATTER = re.compile(r"\A---\s*\n(.*?)\n---\s*\n", re.DOTALL)


@dataclass(frozen=True, slots=True)
class FileText:
    """What indexing needs from one file."""

    title: str
    text: str
    published: date | None


def decode(raw: bytes) -> str:
    """Bytes to text: UTF-8, the meta charset, then cp932 or EUC-JP (whichever yields more hiragana)."""
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    candidates = ["utf-8"]
    declared = _CHARSET.search(raw[:4096])
    if declared:
        name = declared.group(1).decode("ascii").lower()
        candidates.append(_ALIASES.get(name, name))
    for encoding in candidates:
        try:
            return raw.decode(encoding)
        except (UnicodeDecodeError, LookupError):
            continue
    decoded: list[str] = []
    for encoding in ("cp932", "euc-jp"):
        try:
            decoded.append(raw.decode(encoding))
        except UnicodeDecodeError:
            continue
    if decoded:  # EUC-JP bytes often decode as cp932 half-width katakana; real Japanese has hiragana
        return max(decoded, key=lambda text: len(_HIRAGANA.findall(text)))
    return raw.decode("utf-8", errors="replace")


def clean(text: str) -> str:
    """NFKC (full-width ASCII, half-width kana), one space between words, one newline between blocks."""
    text = _SPACES.sub(" ", unicodedata.normalize("NFKC", text))
    return _NEWLINES.sub("\n", text).strip()


def parse_date(value: str | None) -> date | None:
    """First YYYY-MM-DD (or / or .) date in ``value``; None when there is none or it is impossible."""
    match = _DATE.search(value or "")
    if not match:
        return None
    try:
        return date(int(match.group(1)), int(match.group(2)), int(match.group(3)))
    except ValueError:
        return None


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")[:200]


def _html(source: str) -> FileText:
    try:
        root = lxml.html.document_fromstring(_XML_DECL.sub("", source, count=1))
    except (etree.ParserError, ValueError):
        return FileText("", "", None)
    title = clean(root.findtext(".//title") or "")
    published = None
    for meta in root.iter("meta"):
        key = (meta.get("name") or meta.get("property") or meta.get("itemprop") or "").lower()
        if key in _DATE_META and (published := parse_date(meta.get("content"))):
            break
    body = root.find("body")
    if body is None:
        body = root
    etree.strip_elements(body, *_DROP, etree.Comment, etree.ProcessingInstruction, with_tail=False)
    for el in body.iter(*_BLOCKS):
        el.tail = "\n" + (el.tail or "")
    text = clean(body.text_content())
    if not title:
        h1 = body.find(".//h1")
        title = clean(h1.text_content()) if h1 is not None else _first_line(text)
    return FileText(title, f"{title}\n{text}" if title else text, published)


def _markdown(source: str) -> FileText:
    meta: dict[str, str] = {}
    front = _FRONT_MATTER.match(source)
    if front:
        source = source[front.end() :]
        for line in front.group(1).splitlines():
            key, _, value = line.partition(":")
            meta[key.strip().lower()] = value.strip().strip("\"'")
    heading = _MD_HEADING.search(source)
    text = clean(_MD_MARKUP.sub("", _MD_LINK.sub(r"\1", source)))
    title = clean(meta.get("title") or (heading.group(1) if heading else _first_line(text)))
    return FileText(title, text, parse_date(meta.get("date") or meta.get("published")))


def read_file(path: Path) -> FileText:
    """Title, text and published date of one corpus file (by suffix); empty text when nothing is usable."""
    return parse_file(path.read_bytes(), path.suffix)


def parse_file(raw: bytes, suffix: str) -> FileText:
    """:func:`read_file` on bytes already read (corpus builds read files through ``corpus_files``)."""
    source = decode(raw)
    suffix = suffix.lower()
    if suffix in HTML_SUFFIXES:
        return _html(source)
    if suffix in MARKDOWN_SUFFIXES:
        return _markdown(source)
    text = clean(source)
    return FileText(_first_line(text), text, None)


__all__ = [
    "HTML_SUFFIXES",
    "MARKDOWN_SUFFIXES",
    "SUFFIXES",
    "TEXT_SUFFIXES",
    "FileText",
    "clean",
    "decode",
    "parse_date",
    "parse_file",
    "read_file",
]
