"""core.validation: the one check every entry point applies to text a caller sends (no Ray)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.errors import InputError
from core.validation import bounded_int, clean_text, invalid_unicode_at, printable
from jobs.research_batch import parse_topics
from research.engine import validate_topic
from tests.unit.test_cli import magi


@pytest.mark.parametrize(
    "hostile", ["\x01\x02\x03", "\u0000\u0000", "\x1b[31m\x1b[0m", "\u202e\u200b", " \t\n", "!?-・"]
)
def test_text_without_letters_or_digits_is_refused(hostile: str) -> None:
    with pytest.raises(InputError, match=r"the research topic (is empty|has no letters or digits)"):
        validate_topic(hostile)


def test_control_characters_are_removed_and_whitespace_collapsed() -> None:
    assert validate_topic("  価格\x00転嫁\x1b[31m red\u200b \t\n x ") == "価格転嫁 red x"
    assert clean_text("Ünïcode ３", "t", max_chars=20) == "Ünïcode ３"


def test_lone_surrogate_is_an_input_error_with_its_position() -> None:
    assert invalid_unicode_at("ab\ud800c") == 2 and invalid_unicode_at("価格") is None
    with pytest.raises(InputError, match=r"not valid Unicode \(a lone surrogate at character 1\)"):
        validate_topic("\ud800abc")


def test_length_and_type_are_bounded() -> None:
    with pytest.raises(InputError, match="has 501 characters; keep it under 500"):
        validate_topic("x" * 501)
    with pytest.raises(InputError, match="must be text, got int"):
        clean_text(3, "the topic", max_chars=10)


def test_printable_strips_what_a_terminal_would_interpret() -> None:
    assert printable("a\x1b]0;title\x07b\x00c\u202ed\nx\ud800") == "abcd x\ufffd"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("42", 42),
        (" 7 ", 7),
        ("0", 0),
        ("9" * 26, None),
        ("-1", None),
        ("1e3", None),
        ("", None),
        (None, None),
        ("٣", None),
        ("18446744073709551616", None),
    ],
)
def test_bounded_int_never_raises(text: str | None, expected: int | None) -> None:
    assert bounded_int(text) == expected


def test_bounded_int_range() -> None:
    assert bounded_int("11", low=1, high=10) is None and bounded_int("10", low=1, high=10) == 10


def test_batch_topics_use_the_same_check() -> None:
    with pytest.raises(InputError, match=r"topics\.txt:2: the topic has no letters or digits"):
        parse_topics("good topic\n\x01\x02 ---\n", source="topics.txt")
    assert [t.text for t in parse_topics("a\x1b[2Jb\n", source="t")] == ["ab"]


def test_cli_refuses_control_characters_and_invalid_unicode() -> None:
    control = magi("research", "\x01\x02\x03", "--no-progress")
    assert control.returncode == 2 and "the research topic is empty" in control.stderr
    assert "\x1b" not in magi("research", "\x1b[31m", "--no-progress").stderr
    # argv bytes that are not UTF-8 arrive as lone surrogates (surrogateescape)
    raw = subprocess.run(
        [sys.executable, "-m", "cli.main", "research", b"abc\xff".decode("utf-8", "surrogateescape")],
        capture_output=True,
        env={**os.environ, "PYTHONUTF8": "1"},
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert raw.returncode == 2, raw.stderr
    assert b"not valid Unicode" in raw.stderr and b"Traceback" not in raw.stderr
