"""Footnotes read where they are referenced, not dropped with the page furniture.

Manuals put much of their reasoning in footnotes: the Debian Policy Manual gives the rationale of a
rule there ("Having multiple copies of the same code in Debian is inefficient ... increases the
difficulty of handling security vulnerabilities"). Dropped with the navigation, a "why" question has
no answer; left at the page's end, the note reads without the rule it explains. So each note becomes a
paragraph right after the paragraph that first refers to it, as a reader following the mark reads it.

A reference is a link whose text is a mark ("18", "[15]") to an element inside a footnote container
(a class word ``footnote``: Sphinx's ``dl.footnote``, docutils' ``aside.footnote``, DocBook's
``div.footnote``). A reference inside a table cell or a term is left as it was (dropped): a paragraph
cannot follow it there.
"""

from __future__ import annotations

import re

from lxml import etree

_MARK = re.compile(r"\[?\d{1,3}\]?|[*†‡]")
_NOTE_CLASS = re.compile(r"(?:^|\s)footnotes?(?:\s|$)")
_LABEL = re.compile(r"^\s*(?:\[\s*\d{1,3}\s*\]|\d{1,3}(?=\s|[^\d.,:]))\s*")
_HOSTS = frozenset({"p", "li", "dd", "div", "blockquote"})  # blocks a note's paragraph may follow
_PARAGRAPHS = ".//p|.//*[contains(concat(' ', normalize-space(@class), ' '), ' para ')][not(self::a)][not(self::sup)]"


def _note_of(target: etree._Element) -> etree._Element | None:
    """The element holding a note's text, given the element its reference points at."""
    if target.tag == "dt":  # Sphinx: <dl class="footnote"><dt id=...>18</dt><dd>text</dd></dl>
        body = target.getnext()
        return body if body is not None and body.tag == "dd" and _in_note(target) else None
    for el in (target, *target.iterancestors()):
        if _NOTE_CLASS.search(el.get("class") or ""):
            return el if el.tag != "dl" else None
    return None


def _in_note(el: etree._Element) -> bool:
    """Whether the element lies inside a footnote container (DocBook's reference link itself has the
    class ``footnote``: only its ancestors count)."""
    return any(_NOTE_CLASS.search(a.get("class") or "") for a in el.iterancestors())


def _paragraphs(note: etree._Element) -> list[str]:
    """The note's paragraphs as text, its label ("[15]", "18") removed (the reader squashes spaces)."""
    candidates = note.xpath(_PARAGRAPHS)
    nested = set(candidates)
    outer = [p for p in candidates if not any(q in nested for q in p.iterancestors())]
    texts = (_LABEL.sub("", p.text_content(), count=1).strip() for p in (outer or [note]))
    return [t for t in texts if t]


def _host(ref: etree._Element, root: etree._Element) -> etree._Element | None:
    for el in ref.iterancestors():
        if el is root or el.tag in ("td", "th", "dt", "caption") or _NOTE_CLASS.search(el.get("class") or ""):
            return None
        if el.tag in _HOSTS:
            return el
    return None


def inline_footnotes(root: etree._Element) -> int:
    """Place each footnote's paragraphs after the block that first refers to it (see the module
    docstring); the notes' own containers stay in place, to be dropped as furniture. Returns how many
    notes were placed."""
    by_id = {el.get("id"): el for el in root.iter() if isinstance(el.tag, str) and el.get("id")}
    placed: set[etree._Element] = set()  # held here, so each proxy stays the same object
    last: dict[etree._Element, etree._Element] = {}  # per host block, the last note paragraph placed after it
    for ref in list(root.iter("a")):
        href = ref.get("href") or ""
        target = by_id.get(href[1:]) if href.startswith("#") and len(href) > 1 else None
        if target is None or not _MARK.fullmatch(ref.text_content().strip()) or _in_note(ref):
            continue
        note = _note_of(target)
        host = _host(ref, root) if note is not None else None
        if note is None or host is None or note in placed:
            continue
        placed.add(note)
        for text in _paragraphs(note):
            paragraph = etree.Element("p")
            paragraph.text = text
            last.get(host, host).addnext(paragraph)
            last[host] = paragraph
    return len(placed)


__all__ = ["inline_footnotes"]
