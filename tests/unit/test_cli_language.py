"""The ``magi`` command speaks the locale's language: Japanese help with no English left in it (and
English help with no Japanese), flags that say what they do, the locale read as POSIX reads it."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator

import pytest

from cli.language import cli_language, say
from cli.main import build_parser, main
from core.messages import catalogue

JAPANESE = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")
LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_\-]*[A-Za-z0-9]|[A-Za-z]")
# what a person types as it is: flags, environment variables, paths and file names, a default's value
LITERAL = re.compile(r"(?<![\w-])--?[a-z][a-z-]*|\$[A-Z_]+|\./\S+|\b\w+\.yaml\b|[（(]既定: [^）)]*[）)]")


def parsers(parser: argparse.ArgumentParser, path: str = "magi") -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from parsers(sub, f"{path} {name}")


def texts(parser: argparse.ArgumentParser) -> Iterator[str]:
    """Every help text a person reads: the description, each flag's and each subcommand's line."""
    if parser.description:
        yield parser.description
    for action in parser._actions:
        if action.help and action.help is not argparse.SUPPRESS:
            yield str(action.help)
        if isinstance(action, argparse._SubParsersAction):
            yield from (str(choice.help) for choice in action._choices_actions if choice.help)


def english_left(text: str) -> list[str]:
    names = {n.casefold() for n in catalogue("cli").names}
    return [w for w in LATIN_WORD.findall(LITERAL.sub(" ", text)) if w.casefold() not in names]


@pytest.mark.parametrize(
    ("environ", "lang"),
    [
        ({"LANG": "ja_JP.UTF-8"}, "ja"),
        ({"LC_ALL": "C.UTF-8", "LANG": "ja_JP.UTF-8"}, "en"),  # LC_ALL first, as POSIX reads it
        ({"LC_MESSAGES": "ja_JP.UTF-8", "LANG": "en_US.UTF-8"}, "ja"),
        ({}, "en"),
        ({"LANG": "ja_JP.UTF-8", "MAGI_LANG": "en"}, "en"),
    ],
)
def test_the_locale_chooses_the_language(environ: dict[str, str], lang: str) -> None:
    assert cli_language(environ) == lang


def test_japanese_help_of_every_command_has_no_english_left(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAGI_LANG", "ja")
    leftovers = {}
    for path, parser in parsers(build_parser([])):
        for text in texts(parser):
            if not JAPANESE.search(text) or english_left(text):
                leftovers[f"{path}: {text}"] = english_left(text)
        shown = parser.format_help()
        assert shown.startswith("使い方: ") and "オプション:" in shown and "show this help" not in shown, path
    assert leftovers == {}


def test_english_help_has_no_japanese_and_negating_flags_read_right(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAGI_LANG", "en")
    for path, parser in parsers(build_parser([])):
        for text in texts(parser):
            assert not JAPANESE.search(text), f"{path}: {text}"
            assert "switch off" not in text, f"{path}: {text}"
        assert parser.format_help().startswith("usage: "), path
    ask = build_parser([]).format_help  # the command list is English too
    assert "ask the MAGI council" in ask()
    flags = {a.dest: str(a.help) for a in dict(parsers(build_parser([])))["magi ask"]._actions}
    assert flags["anonymous"].startswith("turn off (on by default): Show peers as anonymous")


def test_the_commands_own_lines_follow_the_locale(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MAGI_LANG", "ja")
    assert say("advisor.files") == "作成したファイル:" and "--consent accept" in say("advisor.consent_hint")
    assert not english_left(say("progress.agent", n=1, agent=2))
    with pytest.raises(SystemExit):
        main(["no-such-command"])
    said = capsys.readouterr().err
    assert "エラー" in said and "コマンドは次のとおりです" in said
