"""Cached analyses are keyed by content and by the analyser, so a changed analyser never serves stale ones."""

from __future__ import annotations

from datetime import date

import pytest

import nlp.analysis as analysis
from nlp.analysis import analysis_key


def test_key_depends_on_text_language_date_and_analyser(monkeypatch: pytest.MonkeyPatch) -> None:
    key = analysis_key("価格転嫁率は49.7%", "ja", date(2024, 11, 29))
    assert key == analysis_key("価格転嫁率は49.7%", "ja", date(2024, 11, 29))
    assert len({key, analysis_key("価格転嫁率は49.8%", "ja", date(2024, 11, 29)),
                analysis_key("価格転嫁率は49.7%", "en", date(2024, 11, 29)),
                analysis_key("価格転嫁率は49.7%", "ja", None)}) == 4
    analysis.analyser_fingerprint.cache_clear()
    monkeypatch.setattr(analysis, "ANALYSER_VERSION", analysis.ANALYSER_VERSION + 1)
    try:
        assert analysis_key("価格転嫁率は49.7%", "ja", date(2024, 11, 29)) != key
    finally:
        analysis.analyser_fingerprint.cache_clear()


def test_list_numbers_are_not_entities() -> None:
    from nlp.entities import extract_entities

    found = [(e.text, e.label) for e in extract_entities("1. 価格転嫁率は49.7%だった。\n3. 労務費は44.7%。", "ja")]
    assert ("49.7%", "PERCENT") in found and not any(text.strip() in {"1.", "3."} for text, _ in found)
