"""Which language a query is in (ja/en), whether it mixes both, and how sure that is.

Hiragana means Japanese: particles and endings are written in it, so a sentence with any is
Japanese whatever loanwords it carries (「Engineer Cafeのwifiは何時まで？」). Without hiragana the
words are counted: Latin words against runs of kanji/katakana, ties going to Japanese. Text with no
letters at all cannot be read: the spec's fallback, ``ja``, with confidence 0 and ``failed``.
"""

from __future__ import annotations

from router.models import LanguageDetection
from router.text import has_hiragana, japanese_runs, latin_words


def detect_language(normalised: str) -> LanguageDetection:
    ja_runs = japanese_runs(normalised)
    en_words = latin_words(normalised)
    mixed = ja_runs > 0 and en_words > 0
    if ja_runs == 0 and en_words == 0:
        return LanguageDetection(detected_language="ja", confidence=0.0, is_mixed=False, failed=True)
    if has_hiragana(normalised):
        share = ja_runs / (ja_runs + en_words)
        return LanguageDetection(detected_language="ja", confidence=round(max(0.7, share), 3), is_mixed=mixed)
    if en_words > ja_runs:
        return LanguageDetection(
            detected_language="en", confidence=round(en_words / (ja_runs + en_words), 3), is_mixed=mixed
        )
    return LanguageDetection(
        detected_language="ja", confidence=round(ja_runs / (ja_runs + en_words), 3), is_mixed=mixed
    )


__all__ = ["detect_language"]
