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
LEAD_IN_BLOCKS = 4  # how far back (in prose blocks) a list lead-in still introduces the block
_BLOCK_BREAK = re.compile(r"\n[ \t\u3000]*\n")
_END = re.compile(r"[.!?。！？;；、,，]$|[.!?。！？][\"'”’)）」』]$")
_RECORD = re.compile(r"^[^:;\n]{1,80}: \S")
_QUESTION_HEADING = re.compile(r"[?？]$")
_LEAD_IN = re.compile(r"[:：]$")
# "/tmp: ...", "general.periodicsave (default: 0): ...", "autovacuum_vacuum_cost_delay (floating point): ...":
# a definition's term; a dot inside a name and a parenthesised note (which may hold a colon) belong to it
_TERM = re.compile(r"^((?:[^:;\n。.()]|\.(?=\S)|\([^()\n]{0,40}\)){1,80}?): (?=\S)")
_HAS_WORD = re.compile(r"[^\W\d_]{2,}|[\u3040-\u30ff\u4e00-\u9fff]")
# a link note ("→ https://..."), a URL, a caption ("Table 3.2 ...", "Example A", 「図 1.4 …」, 「図表2-1 …」: a
# number or a lone letter follows; "Examples" and "Tables of limits" are headings) is no section heading,
# nor is a byline or dateline ("2024年12月5日 取材班", 「令和7年5月30日 企画調整部」, "発行日:2023年2月20日 …",
# "… 2025年2月4日 08:02")
_NOT_HEADING = re.compile(
    r"://|^→|^(?:Table|Figure|Fig\.?|Chart|Example|Listing|表|図|図表|資料|例)\s*(?:\d|(?<=\s)[A-Z]\b)"
    r"|^\d{4}\s*(?:年|[-/.]\d)|^(?:令和|平成|昭和)\s*(?:\d{1,2}|元)\s*年\s*\d"
    r"|^(?:発行日|投稿日|更新日|公開日|公表日|発表日|掲載日|published|posted|updated)\b|\d{1,2}:\d{2}",
    re.IGNORECASE,
)
# a lone figure with its unit ("256 MB", "2.4 GHz", "30 日"), which is a table cell; a numbered title
# ("2. 価格転嫁の現状", "1.6. リリースライフサイクル": the number ends with a period) is none
_FIGURE_ONLY = re.compile(r"^(?=.*\d)(?!\d{1,3}(?:\.\d{1,3})*\.\s)[\d\s.,%()+\-–~〜/]*(?:[^\W\d_]{0,12})?$")
# a section number of two levels or more ("4.14. Source package handling: debian/README.source") makes a
# title of a line that otherwise reads as a "key: value" record
_NUMBERED_TITLE = re.compile(r"^(?:\d{1,3}|[A-Z])(?:\.\d{1,3})+\.?\s+(?:[A-Z]|[^\x00-\x7f])")
_NUMBERING = re.compile(r"^(?:(?:Chapter|Section|Appendix|第)\s*)?(?:\d{1,3}|[A-Z])(?:\.\d{1,3})*\.?(?:章|節)?\s+")
# A sentence that names its subject only by pointing back at the previous one.
_ANAPHOR_EN = re.compile(
    r"^(?:this|that|these|those|it|its|such|the same)\b"
    r"|^(?:all|some|most|each|none|both) of (?:this|that|these|those|such|them|it)\b"
    r"|^the (?:default|value|setting|parameter|option|directive|field|variable|limit|maximum|minimum)\b"
    r"|^defaults?(?: value)? (?:is|to)\b",  # "Default is False.": the default of what the definition defines
    re.IGNORECASE,
)
_ANAPHOR_JA = re.compile(r"^(?:この|その|同(?![じ様])|これ|それ|当該|本(?:設定|項目|パラメータ|オプション))")
# ... or later in the sentence: "... so this shouldn't be longer than 60 characters", "keep its length".
_ANAPHOR_EN_INSIDE = re.compile(
    r"\b(?:its|their)\b|\b(?:this|it|they|these)\s+(?:is|are|was|were|must|should|can|cannot|may|might|will"
    r"|would|has|have|does|do|needs?|shouldn't|mustn't|can't|won't|doesn't|don't)\b",
    re.IGNORECASE,
)
MAX_ANTECEDENT_SENTENCES = 3  # how far back a chain of "It ... It ..." sentences is followed
# What a previous sentence is about: an identifier, "the X directive", or a Japanese topic (XXは).
_IDENTIFIER = re.compile(
    r"(?<![\w/.:-])(?:\w+(?:::\w+)+|[A-Za-z]+[a-z0-9]*[A-Z][A-Za-z0-9]*|[A-Za-z]\w*_\w+|[\w.-]*/[\w./-]+|[%@][A-Za-z]\w*)(?!\w)"
)
_NAMED_EN = re.compile(
    r"\b[Tt]he ([\w./-]+ (?:directive|parameter|option|field|variable|setting|command|package|file))\b"
)
_TOPIC_JA = re.compile(r"^([^、。\s]{2,30}?)(?:は|では|には)")
# Plain English: the first "the ..." noun phrase ("You should choose the upstream version to ..."),
# at most two words, up to a function word or verb form that cannot be part of a name.
_THE_PHRASE = re.compile(r"\b[Tt]he\s+([A-Za-z][\w-]*(?:\s+[a-z][\w-]*)?)")  # two words: a third is often the verb
_NOT_IN_PHRASE_WORDS = (
    "of to in on for with by at from as into than and or but so that which who whom whose when where if not "
    "is are was were be been being must should can could may might will would shall has have had does do did "
    "same following other first next last above below such one"
)
_NOT_IN_PHRASE = frozenset(_NOT_IN_PHRASE_WORDS.split())
_HAS_LETTER = re.compile(r"[^\W\d_]")


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
    """A short block without end punctuation, record shape (unless numbered as a section) or lead-in
    colon that is not a lone figure; or a question standing alone as a block (a FAQ's question heading:
    "1.1. "WeeChat" という名前の由来は何ですか?", "How do I add a field to a model?"), whose answer is the
    section that follows."""
    line = block.strip()
    if not line or "\n" in line:
        return False
    asked = _NUMBERING.sub("", line)
    if _QUESTION_HEADING.search(line) and len(line) <= 2 * HEADING_CHARS and len(_sentences(asked)) == 1:
        return not _RECORD.match(line)
    if len(line) > HEADING_CHARS:
        return False
    if _END.search(line) or _LEAD_IN.search(line) or _NOT_HEADING.search(line):
        return False
    if _RECORD.match(line) and not _NUMBERED_TITLE.match(line):
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
        self._heading_set = frozenset(self._headings)

    def _block_index(self, offset: int) -> int:
        return max(0, bisect.bisect_right(self._starts, offset) - 1)

    def in_heading(self, offset: int) -> bool:
        """Whether ``offset`` lies in a heading block (a short sentence ending a paragraph does not)."""
        at = self._block_index(offset)
        return bool(self.blocks) and at in self._heading_set

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
        """The nearest earlier block of the same section ending with a colon ("The delays are:"), at most
        :data:`LEAD_IN_BLOCKS` prose blocks back; the rows of a table or list it introduces (``key: value``
        records) do not count, so its tenth row still has it, but a lead-in inside the definition of
        another term does not reach past it ("exclude_patterns: The patterns available are:" introduces
        no later setting). A block of several sentences is a paragraph of its own, not an item, and has
        none; nor has a record with prose between it and the lead-in (the lead-in's own list was a code
        listing, left out; this record is of a later list)."""
        at = self._block_index(offset)
        own = self.blocks[at].text if self.blocks else ""
        if not _RECORD.match(own) and len(_sentences(own)) > 1:
            return ""  # a paragraph of its own, not an item of the list a lead-in introduces
        in_list = bool(_RECORD.match(own))
        own_term = _term_of(own)
        prose = 0
        for i in range(at - 1, -1, -1):
            block = self.blocks[i].text
            if is_heading(block):
                return ""
            if _term_of(block) and _term_of(block) != own_term:
                return ""  # a lead-in inside another definition introduces that definition's list only
            if _LEAD_IN.search(block):  # "... Here are the recommended delays:": its last sentence leads in
                last = _last_sentence(block)
                return last.rstrip(":：").strip() if len(last) <= 2 * HEADING_CHARS else ""
            if not _RECORD.match(block):
                prose += 1
                if prose == LEAD_IN_BLOCKS or in_list:
                    return ""
        return ""

    def term(self, offset: int) -> str:
        """The term a definition block defines ("/tmp: Programs keep temporary data here. 40-100MB is
        usually enough."), for its sentences after the first: they are about the term, named once."""
        block = self.blocks[self._block_index(offset)] if self.blocks else None
        found = _TERM.match(block.text) if block else None
        return found.group(1) if block and found and offset >= block.start + found.end() + 1 else ""

    def previous_sentence(self, offset: int) -> str:
        """The sentence before ``offset`` in the same block ("" at a block's start): an anaphoric
        sentence continues it ("Nor does this reference detail the standards. All of such information
        can be found in the Policy Manual.")."""
        block = self.blocks[self._block_index(offset)] if self.blocks else None
        if block is None:
            return ""
        before = [s for s in _sentences(self.text[block.start : offset]) if _HAS_LETTER.search(s)]
        return before[-1] if before else ""

    def antecedent(self, sentence: str, offset: int) -> str:
        """What an anaphoric sentence ("This parameter ...", "... so this shouldn't ...", 「この設定は…」)
        points back at: the subject of the nearest sentence before it in the same block that names one,
        following a chain of anaphoric sentences ("It must ... It is ...") at most
        :data:`MAX_ANTECEDENT_SENTENCES` back; else ""."""
        if not is_anaphoric(sentence):
            return ""
        block = self.blocks[self._block_index(offset)] if self.blocks else None
        if block is None:
            return ""
        before = [s for s in _sentences(self.text[block.start : offset]) if _HAS_LETTER.search(s)]
        for previous in reversed(before[-MAX_ANTECEDENT_SENTENCES:]):
            anaphoric = is_anaphoric(previous)
            subject = named_subject(previous) if anaphoric else subject_of(previous)
            if subject or not anaphoric:
                return subject
        return ""


def in_definition(page: PageContext, offset: int) -> bool:
    """Whether ``offset`` lies in a definition or record block ("term: definition", "Default: 5"): a
    reference entry, not prose."""
    if not page.blocks:
        return False
    block = page.blocks[page._block_index(offset)].text
    return bool(_TERM.match(block) or _RECORD.match(block))


def entry_subject(page: PageContext, offset: int) -> str | None:
    """What the definition or record at ``offset`` describes: its section heading and its term
    ("Variables split-view-height (mixed)") or its first field ("Syntax: AuthFormSize size"); None when
    ``offset`` is in prose (:func:`in_definition`)."""
    if not in_definition(page, offset):
        return None
    block = page.blocks[page._block_index(offset)].text
    return f"{page.heading(offset)} {_term_of(block) or block.split(';', 1)[0]}"


def _term_of(block: str) -> str:
    found = _TERM.match(block)
    return found.group(1) if found else ""


def is_anaphoric(sentence: str) -> bool:
    """Whether a sentence names its subject only by pointing back: it starts with "This ...", "It ...",
    「この…」, or, naming nothing itself, says "its ..." or "this must ..." later on."""
    if _ANAPHOR_EN.match(sentence) or _ANAPHOR_JA.match(sentence):
        return True
    return bool(_ANAPHOR_EN_INSIDE.search(sentence)) and not named_subject(sentence)


def _sentences(text: str) -> list[str]:
    return [p for p in re.split(r"(?<=[.!?])\s+|(?<=[。！？])", text.strip()) if p.strip()]


def _last_sentence(text: str) -> str:
    parts = _sentences(text)
    return parts[-1] if parts else ""


def named_subject(sentence: str) -> str:
    """The thing a sentence names plainly: an identifier, "the X directive", a Japanese topic (XXは); else ""."""
    named = _NAMED_EN.search(sentence)
    if named:
        return named.group(1)
    ident = _IDENTIFIER.search(sentence)
    if ident:
        return ident.group(0)
    topic = _TOPIC_JA.match(sentence)
    return topic.group(1) if topic else ""


def subject_of(sentence: str) -> str:
    """The thing a sentence is about: :func:`named_subject`, else its first "the ..." noun phrase
    ("Line 12 is the short description." -> "short description"); else ""."""
    named = named_subject(sentence)
    if named:
        return named
    for match in _THE_PHRASE.finditer(sentence):
        words: list[str] = []
        for word in match.group(1).split():
            if word.lower() in _NOT_IN_PHRASE:
                break
            words.append(word)
        if words:
            return " ".join(words)
    return ""


def claim_context(page: PageContext, sentence: str, offset: int) -> str:
    """The context a claim's document gives it, most general first: heading › lead-in › defined term ›
    antecedent (none inside a definition: its term is the subject). Parts the sentence already contains
    are left out."""
    parts: list[str] = []
    term = page.term(offset)
    # within a definition the term is what its sentences are about: "autovacuum_vacuum_cost_delay: ... the
    # regular vacuum_cost_delay value will be used. The default value is 2 milliseconds." is not about
    # the parameter the previous sentence mentions
    antecedent = "" if term else page.antecedent(sentence, offset)
    for part in (page.heading(offset), page.lead_in(offset), term, antecedent):
        if part and part not in sentence and all(part not in p for p in parts):
            parts.append(part)
    return " › ".join(parts)


__all__ = [
    "Block",
    "PageContext",
    "blocks_of",
    "claim_context",
    "clean_heading",
    "entry_subject",
    "in_definition",
    "is_anaphoric",
    "is_heading",
    "named_subject",
    "subject_of",
]
