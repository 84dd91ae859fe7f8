"""Script-based language detection on Japanese, English, mixed and letter-less strings."""

from __future__ import annotations

import pytest

from nlp.language import HAN_ONLY_MAX, detect_language, script_counts


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024年9月、東京都の中小企業の価格転嫁率は49.7%で、トヨタ自動車は1兆5000億円を投じた。", "ja"),
        ("トヨタ", "ja"),
        ("東京証券取引所", "ja"),  # kanji only, but short: a name or heading
        ("日本銀行、追加利上げ", "ja"),
        ("ｶﾀｶﾅ", "ja"),  # half-width katakana
        ("Toyota said operating profit rose 12 percent.", "en"),
        ("Q3 FY2024", "en"),
        ("ＴＯＹＯＴＡ", "en"),  # full-width Latin
        ("OK 👍", "en"),
    ],
)
def test_single_language(text: str, expected: str) -> None:
    assert detect_language(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "AppleのiPhone 16 Proは9月に発売された。",
        "ソニーのPlayStation 5 ProとNintendo Switch 2の価格を比較した。",
        "SoftBank Groupは、OpenAIへの追加出資を発表した。",
    ],
)
def test_japanese_with_english_product_names_is_ja(text: str) -> None:
    assert detect_language(text) == "ja"


def test_english_with_a_japanese_term_is_en() -> None:
    assert detect_language("The Bank of Japan (日本銀行) kept its policy rate unchanged on Friday.") == "en"


@pytest.mark.parametrize("text", ["", "   \n\t", "🎉🎉👍", "12345 % 3.14", "!!!", "2024-11-29"])
def test_no_letters_is_other(text: str) -> None:
    assert detect_language(text) == "other"


@pytest.mark.parametrize(
    "text",
    [
        "서울은 한국의 수도입니다",
        "Привет, как дела?",
        "中华人民共和国国家统计局今天发布了最新的经济数据显示经济增长稳定",  # long Han without kana
        "Die Bundesregierung hat heute neue Maßnahmen zur Stärkung der Wirtschaft beschlossen und vorgestellt",
    ],
)
def test_other_scripts_and_languages_are_other(text: str) -> None:
    assert detect_language(text) == "other"


def test_han_only_limit() -> None:
    assert detect_language("経" * HAN_ONLY_MAX) == "ja"
    assert detect_language("経" * (HAN_ONLY_MAX + 1)) == "other"


def test_script_counts_ignore_digits_punctuation_and_emoji() -> None:
    assert script_counts("トヨタ自動車は3%増🎉 Prius!") == {"kana": 4, "han": 4, "latin": 5, "other": 0}
