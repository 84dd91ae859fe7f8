"""The message catalogue and its checker: a Japanese label with an English word is refused at load;
an English label or an internal key in a Japanese output is found."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import ConfigError
from core.messages import LANGS, catalogue, format_number, format_percent, language_of, leaks, load_catalogue

SYSTEMS = ("magi", "critic", "research", "router")


def _write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "messages.yaml"
    path.write_text("version: 1\n" + body, encoding="utf-8")
    return path


def test_a_japanese_text_with_an_english_word_is_refused_with_its_key(tmp_path: Path) -> None:
    path = _write(tmp_path, "messages:\n  votes.title: {ja: 投票 Votes, en: Votes}\n")
    with pytest.raises(ConfigError, match=r"votes\.title.*'Votes'"):
        load_catalogue(path)


def test_listed_names_may_stay_latin(tmp_path: Path) -> None:
    path = _write(tmp_path, "names: [MAGI]\nmessages:\n  t: {ja: MAGIの判定, en: MAGI decision}\n")
    assert load_catalogue(path).text("t", "ja") == "MAGIの判定"


def test_leaks_finds_english_labels_and_internal_keys(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "internal: [requestType]\nmessages:\n  votes: {ja: 投票, en: Votes}\n"
        "  why: {ja: '理由: {x}', en: 'Reason: {x}'}\n",
    )
    c = load_catalogue(path)
    assert leaks("## 投票\n理由: よい", c) == []
    assert sorted(leaks("## votes\nreason: よい, requestType", c)) == ["Reason", "Votes", "requestType"]


@pytest.mark.parametrize("system", SYSTEMS)
def test_every_system_catalogue_loads_with_both_languages(system: str) -> None:
    c = catalogue(system)
    for key in c.messages:
        for lang in LANGS:
            assert c.messages[key].model_dump()[lang].strip(), (system, key, lang)


def test_numbers_and_languages() -> None:
    assert format_number(1234567.891, "ja", 1) == "1,234,567.9"
    assert format_percent(0.524, "en", 1) == "52.4%"
    assert language_of("会員登録の方法は？") == "ja" and language_of("Should we ship?") == "en"
