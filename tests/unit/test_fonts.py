"""Finding a Japanese font by file (core/fonts.py): the configured path, suffix rules, the message."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.fonts import japanese_font
from advisor.settings import AdvisorSettings
from core.errors import ConfigError
from core.fonts import INSTALL_HINT, find_japanese_font, missing_font_message
from core.settings import load_settings


def test_a_configured_font_file_wins_and_a_pdf_needs_truetype(tmp_path: Path) -> None:
    ttf, ttc = tmp_path / "mine.ttf", tmp_path / "mine.ttc"
    ttf.write_bytes(b"\0")
    ttc.write_bytes(b"\0")
    assert find_japanese_font(ttf, truetype_only=True) == ttf
    assert find_japanese_font(ttc) == ttc
    assert find_japanese_font(ttc, truetype_only=True) is None  # fpdf2 cannot embed a CFF collection


def test_a_configured_path_that_is_not_a_file_finds_nothing_rather_than_something_else(tmp_path: Path) -> None:
    assert find_japanese_font(tmp_path / "gone.ttf") is None
    assert find_japanese_font(tmp_path) is None


def test_the_message_says_what_was_left_out_why_and_the_command_in_the_users_language() -> None:
    ja = missing_font_message("グラフ2点", "ja")
    en = missing_font_message("2 chart(s)", "en")
    assert ja.startswith("グラフ2点は省略") and "日本語フォント" in ja and INSTALL_HINT in ja
    assert en.startswith("2 chart(s) left out") and INSTALL_HINT in en


def test_the_advisors_documented_font_variable_is_a_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    from core.fonts import find_japanese_font

    installed = find_japanese_font(None, truetype_only=True)
    assert installed is not None, "the test machine has IPAex Gothic (.ci/run installs it)"
    font = Path(shutil.copy(installed, tmp_path / "company.ttf"))
    monkeypatch.setenv("MAGI_ADVISOR_FONT", str(font))
    assert japanese_font(AdvisorSettings.of(load_settings())) == font
    (tmp_path / "broken.ttf").write_bytes(b"\0")  # named .ttf, but no font: refused, not a crash later
    monkeypatch.setenv("MAGI_ADVISOR_FONT", str(tmp_path / "broken.ttf"))
    with pytest.raises(ConfigError, match=r"MAGI_ADVISOR_FONT.*broken\.ttf"):
        japanese_font(AdvisorSettings.of(load_settings()))
    monkeypatch.setenv("MAGI_ADVISOR_FONT", str(tmp_path / "missing.ttf"))
    with pytest.raises(ConfigError, match=r"MAGI_ADVISOR_FONT.*missing\.ttf.*not a TrueType font file"):
        japanese_font(AdvisorSettings.of(load_settings()))
