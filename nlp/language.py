"""Cheap, script-based language detection: enough to route a text to the right NER pipeline.

Only letters count (digits, punctuation, symbols and emoji are ignored), split into three scripts:
Japanese (hiragana, katakana, kanji), Latin (ASCII, accented and full-width letters) and anything else.

Thresholds, over the letters present:

* ``ja`` when kana + kanji make up at least ``JA_MIN_SHARE`` (30%). One Japanese character carries
  about as much text as two or three Latin letters, so 30% means Japanese is the larger part by
  words; a Japanese sentence naming a few English products (「AppleのiPhone 16は…」) stays ``ja``.
  Kanji without any kana is accepted only up to ``HAN_ONLY_MAX`` characters (names, headings such
  as 「東京証券取引所」); longer kana-free Han text is almost surely Chinese, hence ``other``.
* ``en`` when Latin letters make up at least ``EN_MIN_SHARE`` (50%). Text of ``MARKER_MIN_WORDS``
  words or more must also contain some common English function words (``MARKER_MIN_SHARE``, 5%),
  so that a long French or German text is not sent to the English rules.
* ``other`` for everything else, including empty, digit-only and emoji-only strings.
"""

from __future__ import annotations

import re
from typing import Literal

LangCode = Literal["ja", "en", "other"]

JA_MIN_SHARE = 0.30
HAN_ONLY_MAX = 20
EN_MIN_SHARE = 0.50
MARKER_MIN_WORDS = 12
MARKER_MIN_SHARE = 0.05

# Words frequent in any English prose and rare as words in other Latin-script languages.
# fmt: off
_ENGLISH_MARKERS = frozenset(
    {
        "the", "of", "and", "to", "that", "with", "for", "was", "were", "are", "this", "from", "by",
        "have", "has", "had", "said", "which", "its", "it", "be", "will", "been", "their", "not", "or",
        "an", "at", "would", "than", "also", "after",
    }
)
# fmt: on
_LATIN_WORD = re.compile(r"[A-Za-z\u00c0-\u024f]+")


def _script(char: str) -> str:
    """Classify one letter as 'kana', 'han', 'latin' or 'other'."""
    code = ord(char)
    if 0x3040 <= code <= 0x30FF or 0x31F0 <= code <= 0x31FF or 0xFF66 <= code <= 0xFF9F:
        return "kana"
    if (
        0x4E00 <= code <= 0x9FFF
        or 0x3400 <= code <= 0x4DBF
        or 0xF900 <= code <= 0xFAFF
        or 0x20000 <= code <= 0x2FFFF
        or char in "々〆ヶ"
    ):
        return "han"
    if code < 0x250 or 0xFF21 <= code <= 0xFF5A or 0x1E00 <= code <= 0x1EFF:
        return "latin"
    return "other"


def script_counts(text: str) -> dict[str, int]:
    """Count the letters of ``text`` per script (kana, han, latin, other)."""
    counts = {"kana": 0, "han": 0, "latin": 0, "other": 0}
    for char in text:
        if char.isalpha() or char in "々〆":
            counts[_script(char)] += 1
    return counts


def detect_language(text: str) -> LangCode:
    """Return ``ja``, ``en`` or ``other`` for ``text`` from the scripts of its letters."""
    counts = script_counts(text)
    letters = sum(counts.values())
    if letters == 0:
        return "other"
    japanese = counts["kana"] + counts["han"]
    if japanese / letters >= JA_MIN_SHARE:
        if counts["kana"] > 0 or counts["han"] <= HAN_ONLY_MAX:
            return "ja"
        return "other"
    if counts["latin"] / letters >= EN_MIN_SHARE and _looks_english(text):
        return "en"
    return "other"


def _looks_english(text: str) -> bool:
    """Long Latin text must contain English function words; short text gets the benefit of the doubt."""
    words = [w.lower() for w in _LATIN_WORD.findall(text)]
    if len(words) < MARKER_MIN_WORDS:
        return True
    markers = sum(1 for w in words if w in _ENGLISH_MARKERS)
    return markers / len(words) >= MARKER_MIN_SHARE


__all__ = [
    "EN_MIN_SHARE",
    "HAN_ONLY_MAX",
    "JA_MIN_SHARE",
    "MARKER_MIN_SHARE",
    "MARKER_MIN_WORDS",
    "LangCode",
    "detect_language",
    "script_counts",
]
