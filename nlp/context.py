"""The subject a document gives a sentence: its section heading, its list lead-in, its antecedent.

Reference documentation rarely repeats what a sentence is about. "The default is 128 kilobytes."
sits under the heading "BufferSize Directive"; "Default: LimitRequestFields 100" is a row of the
table under "LimitRequestFields Directive"; "2 days" is an item after "The delays are:"; "This
parameter can only be set at server start" follows the sentence that names the parameter. A claim
read without that context has lost its subject, so a reader (and a ranker) cannot tell what it
answers. :func:`claim_context` returns it for a claim of a page's text.

The page text is the one :mod:`scrapers.structure` renders: one block per line, blank lines between
blocks, headings as short lines without end punctuation, table rows and definitions as ``key: value``
records. A block is read as a heading when it is short, has no end punctuation and no ``key: value``
shape, and is not a lone figure (a table cell).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

HEADING_CHARS = 100
LEAD_IN_BLOCKS = 4  # how far back (in blocks) a list lead-in still introduces the block
_BLOCK_BREAK = re.compile(r"\n[ \t\u3000]*\n")
_END = re.compile(r"[.!?。！？;；、,，]$|[.!?。！？][\"'”’)）」』]$")
_RECORD = re.compile(r"^[^:;\n]{1,80}: \S")
_LEAD_IN = re.compile(r"[:：]$")
_HAS_WORD = re.compile(r"[^\W\d_]{2,}|[\u3040-\u30ff\u4e00-\u9fff]")
# a link note ("→ https://..."), a URL, a caption ("Table 3.2 ...", 「図 1.4 …」) is no section heading
# nor is a byline or dateline ("2024年12月5日 取材班", "発行日:2023年2月20日 …", "… 2025年2月4日 08:02")
_NOT_HEADING = re.compile(
    r"://|^→|^(?:Table|Figure|Example|Listing|表|図|例)\s*[\dA-Z]"
    r"|^\d{4}\s*(?:年|[-/.]\d)|^(?:発行日|投稿日|更新日|公開日|掲載日|published|posted|updated)\b|\d{1,2}:\d{2}",
    re.IGNORECASE,
)
_FIGURE_ONLY = re.compile(r"^[\d\s.,%()+\-–~〜/]*(?:[^\W\d_]{0,12})?$")
_NUMBERING = re.compile(r"^(?:(?:Chapter|Section|Appendix|第)\s*)?(?:\d{1,3}|[A-Z])(?:\.\d{1,3})*\.?(?:章|節)?\s+")
# A sentence that names its subject only by pointing back at the previous one.
_ANAPHOR_EN = re.compile(
    r"^(?:this|that|these|those|it|its|such|the same)\b"
    r"|^the (?:default|value|setting|parameter|option|directive|field|variable|limit|maximum|minimum)\b",
    re.IGNORECASE,
)
_ANAPHOR_JA = re.compile(r"^(?:この|その|同(?![じ様])|これ|それ|当該|本(?:設定|項目|パラメータ|オプション))")
# What a previous sentence is about: an identifier, "the X directive", or a Japanese topic (XXは).
_IDENTIFIER = re.compile(
    r"(?<![\w/.:-])(?:\w+(?:::\w+)+|[A-Za-z]+[a-z0-9]*[A-Z][A-Za-z0-9]*|[A-Za-z]\w*_\w+|[\w.-]*/[\w./-]+|[%@][A-Za-z]\w*)(?!\w)"
)
_NAMED_EN = re.compile(
    r"\b[Tt]he ([\w./-]+ (?:directive|parameter|option|field|variable|setting|command|package|file))\b"
)
_TOPIC_JA = re.compile(r"^([^、。\s]{2,30}?)(?:は|では|には)")


@dataclass(frozen=True, slots=True)
class Block:
    start: int
    end: int
    text: str


def blocks_of(text: str) -> list[Block]:
    """The page's blocks (runs of text between blank lines) with their offsets."""
    out: list[Block] = []
    pos = 0
    for match in [*_BLOCK_BREAK.finditer(text), None]:
        end = match.start() if match else len(text)
        chunk = text[pos:end]
        stripped = chunk.strip()
        if stripped:
            lead = len(chunk) - len(chunk.lstrip())
            out.append(Block(pos + lead, pos + lead + len(stripped), stripped))
        if match:
            pos = match.end()
    return out


def is_heading(block: str) -> bool:
    """A short block without end punctuation, record shape or lead-in colon that is not a lone figure."""
    line = block.strip()
    if not line or "\n" in line or len(line) > HEADING_CHARS:
        return False
    if _END.search(line) or _LEAD_IN.search(line) or _RECORD.match(line) or _NOT_HEADING.search(line):
        return False
    return bool(_HAS_WORD.search(line)) and not _FIGURE_ONLY.match(line)


def clean_heading(heading: str) -> str:
    """A heading without its section number ("4.5.1.1. Disk space requirements" -> "Disk space ...")."""
    cleaned = _NUMBERING.sub("", heading.strip()).strip()
    return cleaned or heading.strip()


class PageContext:
    """Headings and lead-ins of one page's text, to give any claim of it its context."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.blocks = blocks_of(text)
        self._starts = [b.start for b in self.blocks]
        self._headings = [i for i, b in enumerate(self.blocks) if is_heading(b.text)]

    def _block_index(self, offset: int) -> int:
        return max(0, bisect.bisect_right(self._starts, offset) - 1)

    def heading(self, offset: int) -> str:
        """The nearest heading above ``offset`` (not the block itself), numbering removed."""
        at = self._block_index(offset)
        k = bisect.bisect_left(self._headings, at) - 1
        return clean_heading(self.blocks[self._headings[k]].text) if k >= 0 else ""

    def section_span(self, offset: int) -> tuple[int, int]:
        """Character span of the section holding ``offset``: from its heading to the next heading."""
        at = self._block_index(offset)
        k = bisect.bisect_right(self._headings, at)
        start = self.blocks[self._headings[k - 1]].start if k > 0 else 0
        end = self.blocks[self._headings[k]].start if k < len(self._headings) else len(self.text)
        return start, end

    def sections(self) -> list[tuple[str, int, int]]:
        """(heading, start, end) of every section; text before the first heading is a section without one."""
        starts = [self.blocks[i].start for i in self._headings]
        out: list[tuple[str, int, int]] = []
        if not starts or starts[0] > 0:
            out.append(("", 0, starts[0] if starts else len(self.text)))
        for n, i in enumerate(self._headings):
            end = starts[n + 1] if n + 1 < len(starts) else len(self.text)
            out.append((clean_heading(self.blocks[i].text), starts[n], end))
        return out

    def lead_in(self, offset: int) -> str:
        """The nearest earlier block of the same section ending with a colon ("The delays are:")."""
        at = self._block_index(offset)
        for i in range(at - 1, max(-1, at - 1 - LEAD_IN_BLOCKS), -1):
            block = self.blocks[i].text
            if is_heading(block):
                return ""
            if _LEAD_IN.search(block):  # "... Here are the recommended delays:": its last sentence leads in
                last = _last_sentence(block)
                return last.rstrip(":：").strip() if len(last) <= 2 * HEADING_CHARS else ""
        return ""

    def antecedent(self, sentence: str, offset: int) -> str:
        """What an anaphoric sentence ("This parameter ...", 「この設定は…」) points back at: the subject
        of the sentence before it in the same block, else ""."""
        if not (_ANAPHOR_EN.match(sentence) or _ANAPHOR_JA.match(sentence)):
            return ""
        block = self.blocks[self._block_index(offset)] if self.blocks else None
        if block is None:
            return ""
        before = self.text[block.start : offset].strip()
        if not before:
            return ""
        return subject_of(_last_sentence(before))


def _last_sentence(text: str) -> str:
    parts = re.split(r"(?<=[.!?])\s+|(?<=[。！？])", text.strip())
    parts = [p for p in parts if p.strip()]
    return parts[-1] if parts else ""


def subject_of(sentence: str) -> str:
    """The thing a sentence is about, when it names one plainly: an identifier, "the X directive",
    a Japanese topic (XXは); else ""."""
    named = _NAMED_EN.search(sentence)
    if named:
        return named.group(1)
    ident = _IDENTIFIER.search(sentence)
    if ident:
        return ident.group(0)
    topic = _TOPIC_JA.match(sentence)
    return topic.group(1) if topic else ""


def claim_context(page: PageContext, sentence: str, offset: int) -> str:
    """The context a claim's document gives it, most general first: heading › lead-in › antecedent.
    Parts the sentence already contains are left out."""
    parts: list[str] = []
    for part in (page.heading(offset), page.lead_in(offset), page.antecedent(sentence, offset)):
        if part and part not in sentence and all(part not in p for p in parts):
            parts.append(part)
    return " › ".join(parts)


__all__ = [
    "Block",
    "PageContext",
    "blocks_of",
    "claim_context",
    "clean_heading",
    "is_heading",
    "subject_of",
]
