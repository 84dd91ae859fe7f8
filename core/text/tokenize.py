"""Index/query tokens for Japanese and English text, identical for documents and queries.

Japanese goes through SudachiPy in split mode B: mode C keeps long compounds whole (中小企業,
人工知能), so a query for 企業 would miss them; mode A over-splits ordinary words (研究所 -> 研究+所)
and floods the index with weak affixes. Mode B gives the middle units BM25 wants.
Content words only (nouns, verbs, adjectives, adjectival nouns, numbers), in Sudachi's normalised
form. Latin words use their lowercased surface (Sudachi would normalise "price" to プライス) split
into letter and digit runs and reduced to the singular, so an English word gives the same token in
Japanese or English text.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from functools import cache
from typing import Any, Literal

# Sudachi rejects input over 49,149 bytes; 12,000 characters are at most 48,000 bytes in UTF-8.
MAX_CHUNK_CHARS = 12_000

_JAPANESE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff々〆ヶ]")
_LATIN = re.compile(r"[a-z]+|[0-9]+")
_KEEP_POS = frozenset({"名詞", "動詞", "形容詞", "形状詞"})
_NOUN = "名詞"
_STOP_EN_WORDS = (
    "a an and are as at be been but by can could did do does for from had has have he her his how i if "
    "in into is it its may more most no not of on or our she should so such than that the their them "
    "then there these they this those to was we were what when where which who will with would you your "
    "s t"
)
_STOP_JA_WORDS = "こと もの ため よう これ それ あれ どれ ところ とき 方 等 など 事 物 為 様 時 所"
_STOP_EN = frozenset(_STOP_EN_WORDS.split())
_STOP_JA = frozenset(_STOP_JA_WORDS.split())

_local = threading.local()
SplitModeName = Literal["A", "B", "C"]


@cache
def _dictionary() -> Any:
    """Sudachi's core dictionary, loaded once per process and shared by every tokenizer."""
    from sudachipy import Dictionary

    return Dictionary(dict="core")


def sudachi_tokenizer(mode: SplitModeName) -> Any:
    """The calling thread's Sudachi tokenizer for split ``mode`` (A short, B middle, C long units).

    A Sudachi tokenizer must not be used by two threads at once, so each thread gets its own, one
    per mode; all of them share the one loaded dictionary (search and the router use mode B and C).
    """
    tokenizers: dict[str, Any] | None = getattr(_local, "tokenizers", None)
    if tokenizers is None:
        tokenizers = _local.tokenizers = {}
    found = tokenizers.get(mode)
    if found is None:
        from sudachipy import SplitMode

        split = {"A": SplitMode.A, "B": SplitMode.B, "C": SplitMode.C}.get(mode)
        if split is None:
            raise ValueError(f"sudachi_tokenizer: split mode {mode!r} is not one of A, B, C")
        found = tokenizers[mode] = _dictionary().create(mode=split)
    return found


@cache
def _pos_is_content(pos_id: int) -> bool:
    pos = _dictionary().pos_of(pos_id)
    return pos[0] in _KEEP_POS and pos[1] not in ("非自立可能", "代名詞")


def _stem(word: str) -> str:
    """Harman's S-stemmer: plural to singular, nothing more (cheap and rarely wrong)."""
    if len(word) <= 3 or not word.endswith("s"):
        return word
    if word.endswith("ies") and not word.endswith(("eies", "aies")):
        return word[:-3] + "y"
    if word.endswith("es") and not word.endswith(("aes", "ees", "oes")):
        return word[:-1]
    return word if word.endswith(("us", "ss")) else word[:-1]


def _latin(text: str) -> list[tuple[str, str]]:
    words = _LATIN.findall(text.lower())
    return [(_stem(w), w) for w in words if w.isdigit() or (len(w) > 1 and w not in _STOP_EN)]


def _chunks(text: str) -> list[str]:
    """Cut text into pieces Sudachi accepts, preferring line and sentence ends as cut points."""
    out: list[str] = []
    while len(text) > MAX_CHUNK_CHARS:
        head = text[:MAX_CHUNK_CHARS]
        cut = max(head.rfind("\n"), head.rfind("。"), head.rfind(" "))
        cut = cut + 1 if cut > MAX_CHUNK_CHARS // 2 else MAX_CHUNK_CHARS
        out.append(text[:cut])
        text = text[cut:]
    out.append(text)
    return out


@cache
def _pos_is_noun(pos_id: int) -> bool:
    return _pos_is_content(pos_id) and _dictionary().pos_of(pos_id)[0] == _NOUN


def _japanese(chunk: str, nouns: bool = False) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    content = _pos_is_noun if nouns else _pos_is_content
    for m in sudachi_tokenizer("B").tokenize(chunk):
        if not content(m.part_of_speech_id()):
            continue
        surface = m.surface()
        if surface.isascii():
            out.extend(_latin(surface))
        else:
            norm = m.normalized_form()
            if norm not in _STOP_JA:
                out.append((norm, surface))
    return out


def token_pairs(text: str) -> list[tuple[str, str]]:
    """(token, surface) pairs; the surface lets snippets find the words in the original text."""
    text = unicodedata.normalize("NFKC", text)
    out: list[tuple[str, str]] = []
    for chunk in _chunks(text):
        out.extend(_japanese(chunk) if _JAPANESE.search(chunk) else _latin(chunk))
    return out


def tokenize(text: str) -> list[str]:
    """Index tokens of ``text`` (see the module docstring for the rules)."""
    return [t for t, _ in token_pairs(text)]


def noun_tokens(text: str) -> list[str]:
    """The tokens of ``text`` that are nouns (and Latin words), as :func:`tokenize` writes them: what a
    question is about, without what it asks to do with it (教えて, 変わった)."""
    text = unicodedata.normalize("NFKC", text)
    out: list[str] = []
    for chunk in _chunks(text):
        out.extend(t for t, _ in (_japanese(chunk, nouns=True) if _JAPANESE.search(chunk) else _latin(chunk)))
    return out


def is_japanese(text: str) -> bool:
    """Whether kana or kanji make up a noticeable share of the text (a cheap language guess)."""
    sample = text[:4000]
    ja = len(_JAPANESE.findall(sample))
    return ja > 0 and ja * 10 >= len(sample.strip() or "x")


__all__ = [
    "MAX_CHUNK_CHARS",
    "SplitModeName",
    "is_japanese",
    "noun_tokens",
    "sudachi_tokenizer",
    "token_pairs",
    "tokenize",
]
