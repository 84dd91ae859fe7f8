"""The readable structure of an HTML page: headings, paragraphs, list items, records, not a bag of text.

Manuals say much of what matters in tables and definition lists. A flattened table row reads as
noise (``18805 postgresql49876 postgres ...``); read as a record (``Parameter: max_wal_size;
Default: 1GB``) it is a claim. So each table row becomes one ``header: value`` record, each ``<dt>/<dd>``
pair one ``term: definition`` record, and each heading, paragraph and list item one block, with the
whitespace inside it collapsed (a line break inside a paragraph is not a sentence end).

What is not prose is left out: navigation (``<nav>``, headers, footers, sidebars, breadcrumbs, tables
of contents, DocBook nav bars), code listings (``<pre>``, ``<code>`` blocks, screens, program
listings) and log dumps (lines mostly made of numbers and identifiers). Inline ``<code>`` inside a
sentence stays: it is part of the sentence. So does a one-line listing that ends a sentence the text
left open ("... list the contents using the command" + ``<pre>$ lsinitramfs /boot/initrd.img</pre>``):
without it the sentence names nothing. A literal block whose every line is a sentence of words (Sphinx
sets a paragraph so when its author ends the one before with ``::``) is text, read line by line.

Blocks are rendered one per line with a blank line between them, so sentence segmentation and
chunking see the page's own boundaries.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

import lxml.html
from lxml import etree

from core.text.noise import is_listing_line
from scrapers.footnotes import inline_footnotes

BlockKind = Literal["heading", "paragraph", "item", "record", "caption"]

_DROP_TAGS = ("script", "style", "noscript", "template", "svg", "iframe", "nav", "footer", "form", "button")
_CODE_TAGS = frozenset({"pre", "listing", "xmp", "samp"})
# class/id words of page furniture (any site generator) and of code listings (DocBook, Sphinx, Pygments)
_FURNITURE = re.compile(
    r"(?:^|[\s_-])(?:nav|navbar|navheader|navfooter|docnav|menu|sidebar|sphinxsidebar|side-menu|breadcrumbs?|related"
    r"|footer|header|toc|footnotes?|skip|cookie|banner|masthead|pagination|headerlink|copyright)(?:$|[\s_-])",
    re.IGNORECASE,
)
_CODE_CLASS = re.compile(
    r"(?:^|[\s_-])(?:screen|programlisting|synopsis|highlight|literal-block|code-block|sourcecode|example-code"
    r"|console|terminal)(?:$|[\s_-])",
    re.IGNORECASE,
)
# a boxed note of the text (Sphinx "admonition note", asciidoc "admonitionblock", DocBook div.note/.tip/...):
# its title ("Note", 「注記」) is a label, not a section heading that would end the section it sits in
_ADMONITION = re.compile(
    r"^(?:admonition|admonitionblock|note|tip|hint|warning|caution|important|attention|danger|seealso)$",
    re.IGNORECASE,
)
_ADMONITION_TITLE = re.compile(r"(?:^|[\s_-])(?:admonition-title|title|icon)(?:$|[\s_-])", re.IGNORECASE)
_BLOCK_TAGS = frozenset(
    {"p", "div", "section", "article", "main", "blockquote", "li", "ul", "ol", "dl", "dt", "dd", "table",
     "tr", "td", "th", "thead", "tbody", "tfoot", "caption", "figure", "figcaption", "h1", "h2", "h3", "h4",
     "h5", "h6", "hr", "br", "address", "body", "details", "summary", "aside", "header"}
)  # fmt: skip
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_SPACE = re.compile(r"\s+")
_XML_DECL = re.compile(r"^\s*<\?xml[^>]*\?>")
_PAIR = re.compile(r"^([^:;。.!?]{1,30}): (?=\S)")
_FOOTNOTE_MARK = re.compile(r"\s?\[\d{1,3}\]")  # DocBook footnote references: "tools.[94]"
_WORD = re.compile(r"[^\W\d_]{2,}", re.UNICODE)
_JA = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")
_OPEN_END = re.compile(r"[\w:：)]$")  # a paragraph that stops mid-sentence or introduces what follows
_PROMPT = re.compile(r"^(?:[$#%>]|\S+[$#])\s+")  # a shell prompt before a command: "$ ", "root# "
MAX_INLINE_LISTING_CHARS = 120
MIN_PROSE_WORDS = 3  # of every line of a literal block read as prose (see _is_prose_listing)
_CODE_MARK = re.compile(r"[=(){};<>$\\\[\]|]|^\s*(?:#|//|>>>|\.\.\.)")
MAX_FIELD_VALUE_WORDS = 4  # of a "key: value" paragraph that opens a record of fields (see _Reader.add)
_SENTENCE_END = re.compile(r"[.。!?！？]$")
MAX_CELL_CHARS = 400
MAX_KEY_CHARS, MAX_KEY_VALUE_ROWS = 30, 10  # a key-value table read as one record (see _Reader.key_value_table)


@dataclass(frozen=True, slots=True)
class Block:
    """One readable unit of a page; ``section`` is the nearest heading above it."""

    kind: BlockKind
    text: str
    section: str = ""
    level: int = 0


def _squash(text: str) -> str:
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text)).strip()


def _inline_text(el: etree._Element) -> str:
    """The element's text with nested blocks already handled elsewhere skipped; footnote marks and
    permalink signs (a heading's trailing pilcrow) removed."""
    return _FOOTNOTE_MARK.sub("", _squash(el.text_content().replace("¶", "")))


def _key(cell: str) -> str:
    """A header cell as a record key: "Default:" reads "Default" (the record adds its own colon)."""
    return cell.rstrip(":：").strip()


def _is_furniture(el: etree._Element) -> bool:
    marks = f"{el.get('class') or ''} {el.get('id') or ''} {el.get('role') or ''}"
    if not marks.strip() or not _FURNITURE.search(marks):
        return False
    # DocBook's sidebar is a boxed note of the text (a "CULTURE" aside), not navigation
    return (el.get("class") or "").split() != ["sidebar"] or _mostly_links(el)


def _mostly_links(el: etree._Element) -> bool:
    """Whether at least half of an element's text is link text (a menu, not prose)."""
    text = len(_SPACE.sub("", el.text_content()))
    linked = sum(len(_SPACE.sub("", a.text_content())) for a in el.iter("a"))
    return text == 0 or linked * 2 >= text


def _is_code(el: etree._Element) -> bool:
    if el.tag in _CODE_TAGS:
        return True
    if el.tag == "code" and (el.getparent() is None or el.getparent().tag in ("div", "body", "section")):
        return True
    return bool(_CODE_CLASS.search(el.get("class") or ""))


def _is_admonition(el: etree._Element) -> bool:
    return any(_ADMONITION.match(word) for word in (el.get("class") or "").split())


def _drop_admonition_titles(el: etree._Element) -> None:
    """Remove a boxed note's title and icon (a title class, a header cell, an icon cell), tails kept."""
    doomed = [
        c
        for c in el.iter()
        if c is not el and isinstance(c.tag, str) and (_ADMONITION_TITLE.search(c.get("class") or "") or c.tag == "th")
    ]
    doomed += [c for c in el.iter("td") if c.find("img") is not None and not _SPACE.sub("", c.text_content())]
    for c in doomed:
        if c.getparent() is not None:
            c.drop_tree()


def _is_prose_listing(lines: list[str]) -> bool:
    """Whether a literal block holds sentences, not code: every line at least
    :data:`MIN_PROSE_WORDS` words and none of code's punctuation (``= ( ) { } ; < > $``, a prompt), and
    some line ending as a sentence does (Sphinx ``::`` blocks such as "``time`` -- How long the
    statement took to execute, in seconds.")."""
    if not lines:
        return False
    for line in lines:
        if _CODE_MARK.search(line) or _PROMPT.match(line):
            return False
        if len(_WORD.findall(line)) < MIN_PROSE_WORDS and not _JA.search(line):
            return False
    return any(_SENTENCE_END.search(line) for line in lines)


def _has_block_child(el: etree._Element) -> bool:
    return any(isinstance(c.tag, str) and c.tag in _BLOCK_TAGS and c.tag != "br" for c in el)


class _Reader:
    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self.section = ""
        self.group_key = ""  # the first key of a run of "key: value" paragraphs being merged

    def add(self, kind: BlockKind, text: str, level: int = 0) -> None:
        text = text.strip()
        if not text or (not _WORD.search(text) and not _JA.search(text)):
            return
        if kind in ("paragraph", "item") and is_listing_line(text):
            return
        pair = _PAIR.match(text) if kind == "paragraph" else None
        if pair and self.group_key and pair.group(1) != self.group_key and self.blocks:
            last = self.blocks[-1]  # "Option: X" / "Default: 8" / "Description: ..." paragraphs: one record
            self.blocks[-1] = Block("record", f"{last.text}; {text}", last.section, last.level)
            return
        # a record starts at a field whose value is a name ("Option: Aptitude::UI::Styles"), not a
        # sentence: "/var: <a paragraph on /var>", "/tmp: <one on /tmp>" are terms with their definitions
        value = text[pair.end() :] if pair else ""
        names_a_value = len(value.split()) <= MAX_FIELD_VALUE_WORDS and not _SENTENCE_END.search(value)
        self.group_key = pair.group(1) if pair and names_a_value else ""
        self.blocks.append(Block(kind, text, self.section, level))

    def walk(self, el: etree._Element) -> None:
        if not isinstance(el.tag, str):
            return
        tag = el.tag.lower()
        if tag in _HEADINGS or tag in ("table", "dl", "ul", "ol"):
            self.group_key = ""
        if tag in _DROP_TAGS or _is_furniture(el):
            return
        if _is_code(el):
            self.listing(el)
            return
        if _is_admonition(el):
            _drop_admonition_titles(el)  # its text reads as part of the section it sits in
        if tag in _HEADINGS:
            text = _inline_text(el)
            self.section = text
            self.add("heading", text, _HEADINGS[tag])
            return
        if tag == "table":
            self.table(el)
            return
        if "seglistitem" in (el.get("class") or ""):  # DocBook segmented list: "Title: value" segments
            segments = [_inline_text(c) for c in el if isinstance(c.tag, str) and _inline_text(c)]
            self.group_key = ""
            self.add("record", "; ".join(segments))
            self.group_key = ""
            return
        if tag == "dl":
            self.definitions(el)
            return
        if tag in ("p", "li", "dd", "blockquote", "figcaption", "caption", "address", "summary", "div", "td"):
            if not _has_block_child(el):
                kind: BlockKind = (
                    "item" if tag == "li" else "caption" if tag in ("caption", "figcaption") else "paragraph"
                )
                self.add(kind, _inline_text(el))
                return
            self.mixed(el)
            return
        self.mixed(el)

    def mixed(self, el: etree._Element) -> None:
        """An element holding both loose text and blocks: loose runs become paragraphs."""
        run: list[str] = [el.text or ""]

        def flush() -> None:
            text = _FOOTNOTE_MARK.sub("", _squash(" ".join(run)))
            run.clear()
            self.add("item" if el.tag == "li" else "paragraph", text)

        for child in el:
            if not isinstance(child.tag, str):
                run.append(child.tail or "")
                continue
            if child.tag in _BLOCK_TAGS:
                flush()
                self.walk(child)
            elif child.tag in _DROP_TAGS or _is_furniture(child):
                pass  # left out; its tail is still read below
            elif _is_code(child):
                if child.tag not in ("code", "samp"):  # a listing, not inline code
                    flush()
                    self.listing(child)
            else:
                run.append(child.text_content())
            run.append(child.tail or "")
        flush()

    def listing(self, el: etree._Element) -> None:
        """A code listing is left out, unless it is one short line that completes the paragraph just
        read (see the module docstring): then it joins that paragraph. A "listing" whose every line is
        prose (see :func:`_is_prose_listing`) is text set in a literal block: its lines are items."""
        lines = [line.strip() for line in el.text_content().splitlines() if line.strip()]
        if _is_prose_listing(lines):
            for line in lines:
                self.add("item", _squash(line))
            self.group_key = ""
            return
        if len(lines) != 1 or not self.blocks or self.blocks[-1].kind not in ("paragraph", "item"):
            return
        command = _PROMPT.sub("", _squash(lines[0]))
        last = self.blocks[-1]
        if command and len(command) <= MAX_INLINE_LISTING_CHARS and _OPEN_END.search(last.text):
            self.blocks[-1] = Block(last.kind, f"{last.text} {command}", last.section, last.level)
        self.group_key = ""

    def table(self, table: etree._Element) -> None:
        caption = table.find("caption")
        if caption is not None:
            self.add("caption", _inline_text(caption))
        rows = [r for r in table.iter("tr")]
        if not rows:
            return
        header: list[str] = []
        first = rows[0]
        if all(c.tag == "th" for c in first.iter("td", "th")) or first.getparent().tag == "thead":
            header = [_key(_inline_text(c)) for c in first.iter("td", "th")]
            rows = rows[1:]
        if not header and self.key_value_table(rows):
            return
        for row in rows:
            cells = [_inline_text(c)[:MAX_CELL_CHARS] for c in row.iter("td", "th")]
            if not any(cells):
                continue
            if header and len(header) == len(cells):
                pairs = [f"{h}: {c}" if h else c for h, c in zip(header, cells, strict=True) if c]
                self.add("record", "; ".join(pairs))
            elif len(cells) == 2 and cells[0]:
                self.add("record", f"{_key(cells[0])}: {cells[1]}")
            else:
                self.add("paragraph", " ".join(c for c in cells if c))

    def key_value_table(self, rows: list[etree._Element]) -> bool:
        """A short table of "header cell: value" rows (a directive's Description, Syntax, Default,
        Context...) describes one thing: it becomes one record, so each value keeps the others as its
        context. False (nothing added) for any other table."""
        pairs: list[str] = []
        for row in rows:
            cells = [c for c in row.iter("td", "th")]
            if len(cells) != 2 or cells[0].tag != "th" or cells[1].tag != "td":
                return False
            key, value = _key(_inline_text(cells[0])), _inline_text(cells[1])[:MAX_CELL_CHARS]
            if not key or len(key) > MAX_KEY_CHARS:
                return False
            if value:
                pairs.append(f"{key}: {value}")
        if not 2 <= len(pairs) <= MAX_KEY_VALUE_ROWS:
            return False
        self.add("record", "; ".join(pairs))
        return True

    def definitions(self, dl: etree._Element) -> None:
        """Each ``<dt>``/``<dd>`` pair as ``term: definition`` records. Several terms of one definition
        ("-v, --version"; three paths of one file) are joined; every block of a definition of several
        blocks (a second paragraph, a "New in version 1.3" note, a list) carries the term too, so no
        sentence of it is read without what it defines."""
        terms: list[str] = []
        for child in dl:
            if not isinstance(child.tag, str):
                continue
            if child.tag == "dt":
                terms.append(_inline_text(child).rstrip(":"))
            elif child.tag == "dd":
                term = ", ".join(t for t in terms if t)
                terms = []
                if not _has_block_child(child):
                    text = _inline_text(child)
                    self.add("record", f"{term}: {text}" if term else text)
                    continue
                saved = len(self.blocks)
                self.mixed(child)
                self.group_key = ""
                if term:
                    for i in range(saved, len(self.blocks)):
                        block = self.blocks[i]
                        if not block.text.startswith(f"{term}: "):
                            self.blocks[i] = Block("record", f"{term}: {block.text}", block.section, block.level)
            else:
                self.walk(child)


_MAIN_XPATHS = (
    "//main",
    "//article",
    "//*[@role='main']",
    "//div[contains(concat(' ', normalize-space(@class), ' '), ' body ')]",  # Sphinx: div.body
    "//div[@id='content']",  # asciidoc, many hand-written sites
)
MIN_MAIN_SHARE = 0.5  # of the body's text a main-content container must hold to stand for the page


def _main(root: etree._Element) -> etree._Element:
    """The element that holds the page's content: the first semantic or conventional container that
    holds at least :data:`MIN_MAIN_SHARE` of the body's text, else the body. A class that merely
    contains "body" is no container (asciidoc's ``sectionbody`` is one section: taking the first one
    read a whole man page as its preamble)."""
    body = root.find("body")
    whole = body if body is not None else root
    total = len(_SPACE.sub("", whole.text_content()))
    for xpath in _MAIN_XPATHS:
        for found in root.xpath(xpath):
            if len(_SPACE.sub("", found.text_content())) >= MIN_MAIN_SHARE * total:
                return found
    return whole


def parse_html(source: str | bytes) -> etree._Element | None:
    """The lxml document of a page, or None when it is not HTML at all.

    An XHTML page decoded to text may still open with ``<?xml ... encoding=...?>``, which lxml refuses
    in a str: the declaration is dropped (the text is already decoded)."""
    if isinstance(source, str):
        source = _XML_DECL.sub("", source, count=1)
    try:
        return lxml.html.document_fromstring(source)
    except (etree.ParserError, ValueError):
        return None


def html_blocks(root: etree._Element) -> list[Block]:
    """The page's main content as blocks, in reading order (see the module docstring)."""
    main = _main(root)
    inline_footnotes(main)
    doomed = [el for el in main.iter() if isinstance(el.tag, str) and el is not main and _is_furniture(el)]
    for el in doomed:  # permalinks inside headings, footnote marks inside paragraphs: gone, tails kept
        if el.getparent() is not None:
            el.drop_tree()
    reader = _Reader()
    reader.walk(main)
    return reader.blocks


def render_blocks(blocks: list[Block]) -> str:
    """One block per line, a blank line between blocks; a heading keeps no trailing punctuation."""
    return "\n\n".join(b.text for b in blocks)


__all__ = [
    "MAX_CELL_CHARS",
    "Block",
    "BlockKind",
    "html_blocks",
    "parse_html",
    "render_blocks",
]
