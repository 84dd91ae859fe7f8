"""Cached analyses are keyed by content and by the analyser, so a changed analyser never serves stale ones."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from nlp.analysis import analyser_fingerprint, analysis_key, fingerprint


def test_key_depends_on_text_language_and_date() -> None:
    key = analysis_key("価格転嫁率は49.7%", "ja", date(2024, 11, 29))
    assert key == analysis_key("価格転嫁率は49.7%", "ja", date(2024, 11, 29))
    assert (
        len(
            {
                key,
                analysis_key("価格転嫁率は49.8%", "ja", date(2024, 11, 29)),
                analysis_key("価格転嫁率は49.7%", "en", date(2024, 11, 29)),
                analysis_key("価格転嫁率は49.7%", "ja", None),
            }
        )
        == 4
    )


def test_fingerprint_changes_with_the_version_and_the_rule_files(tmp_path: Path) -> None:
    rules = tmp_path / "claim_attributes.yaml"
    rules.write_text("attributes: {}\n", encoding="utf-8")
    before = fingerprint(2, [rules])
    assert fingerprint(2, [rules]) == before and fingerprint(3, [rules]) != before
    rules.write_text("attributes: {rate: {kinds: [percent]}}\n", encoding="utf-8")  # a user edits the rules
    assert fingerprint(2, [rules]) != before
    assert len(analyser_fingerprint()) == 16


def test_list_numbers_are_not_entities() -> None:
    from nlp.entities import extract_entities

    found = [(e.text, e.label) for e in extract_entities("1. 価格転嫁率は49.7%だった。\n3. 労務費は44.7%。", "ja")]
    assert ("49.7%", "PERCENT") in found and not any(text.strip() in {"1.", "3."} for text, _ in found)
