"""The language of the ``magi`` command: its help and its own lines follow the locale.

Japanese when the locale says so (``LC_ALL``, ``LC_MESSAGES``, ``LANG``: the first one set, as POSIX
reads them), English otherwise; ``MAGI_LANG=ja|en`` overrides. A system's results keep the language of
what was asked (a Japanese question gets a Japanese decision); only the command's own words follow the
locale. The words are in ``data/cli/messages.yaml``: :func:`localize` puts them into a parser built
in English (every command, flag and argparse's own headings), so the commands declare their flags as
before; a settings option's English help stays its setting's description (the one declaration), its
Japanese comes from ``option.<section>.<key>``.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Iterator, Mapping
from typing import Any, TypeVar

from core.messages import Lang, catalogue

ENVIRONMENT = ("LC_ALL", "LC_MESSAGES", "LANG")
_DEFAULT = re.compile(r"\s*\(default: (?P<value>[^()]*(?:\([^()]*\)[^()]*)*)\)\s*$")
OFF_PREFIX = "turn off (on by default): "


def cli_language(environ: Mapping[str, str] | None = None) -> Lang:
    """``ja`` for a Japanese locale (or ``MAGI_LANG=ja``), ``en`` otherwise."""
    env = os.environ if environ is None else environ
    chosen = (env.get("MAGI_LANG") or "").strip().lower()
    if chosen in ("ja", "en"):
        return "ja" if chosen == "ja" else "en"
    locale = next((env[name] for name in ENVIRONMENT if env.get(name)), "")
    return "ja" if locale.lower().startswith("ja") else "en"


def say(key: str, lang: Lang | None = None, **fields: object) -> str:
    """One line of the command's own, in the locale's language."""
    return catalogue("cli").text(key, lang or cli_language(), **fields)


class Formatter(argparse.HelpFormatter):
    """argparse's help with the usage line's own word in the locale's language."""

    lang: Lang = "en"

    def add_usage(self, usage: Any, actions: Any, groups: Any, prefix: str | None = None) -> None:
        super().add_usage(usage, actions, groups, prefix if prefix is not None else say("usage.prefix", self.lang))


def _formatter(lang: Lang) -> type[Formatter]:
    return type("LocalizedFormatter", (Formatter,), {"lang": lang})


def _subparsers(parser: argparse.ArgumentParser) -> Iterator[argparse._SubParsersAction[Any]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield action


def _help_text(key_options: list[str], english: str, lang: Lang) -> str | None:
    """The catalogue's text for the first key it has, with the default the English help gave."""
    messages = catalogue("cli").messages
    key = next((k for k in key_options if k in messages), None)
    if key is None or (lang == "en" and key.startswith("option.")):
        return None  # an option's English help is its setting's own description (declared once)
    text = catalogue("cli").text(key, lang)
    if english.startswith(OFF_PREFIX):
        return catalogue("cli").text("option.off", lang, what=text)
    default = _DEFAULT.search(english)
    if default and key.startswith("option."):  # a setting's default, as the settings give it
        text += catalogue("cli").text("usage.default", lang, value=default.group("value"))
    return text


def _localize_parser(parser: argparse.ArgumentParser, path: list[str], lang: Lang, options: Mapping[str, str]) -> None:
    parser.formatter_class = _formatter(lang)
    parser._positionals.title = say("usage.positional", lang)
    parser._optionals.title = say("usage.options", lang)
    name = ".".join(path) or "main"
    messages = catalogue("cli").messages
    if f"desc.{name}" in messages:
        parser.description = say(f"desc.{name}", lang)
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            action.help = say("usage.help", lang)
        elif isinstance(action, argparse._VersionAction):
            action.help = say("usage.version", lang)
        elif action.help and action.help is not argparse.SUPPRESS:
            keys = [f"flag.{name}.{action.dest}", f"flag.{action.dest}"]
            if action.help in options:
                keys.insert(0, f"option.{options[str(action.help)]}")
            said = _help_text(keys, str(action.help), lang)
            if said is not None:
                action.help = said
    for group in _subparsers(parser):
        for choice in group._choices_actions:
            key = f"cmd.{'.'.join([*path, choice.dest])}"
            if key in messages:
                choice.help = say(key, lang)
        for sub_name, sub in group.choices.items():
            _localize_parser(sub, [*path, sub_name], lang, options)


def option_keys() -> dict[str, str]:
    """Each settings option's English help and its catalogue key (``option.council.rounds``): several
    sections have a ``--timeout``, so the help tells which one a flag is."""
    from core.options import declared
    from core.settings import registered_sections

    return {spec.flag_help: spec.dotted for section in registered_sections().values() for spec in declared(section)}


P = TypeVar("P", bound=argparse.ArgumentParser)


def localize(parser: P, lang: Lang | None = None) -> P:
    """``parser`` (and every subcommand's) with its help in the locale's language."""
    _localize_parser(parser, [], lang or cli_language(), option_keys())
    return parser


__all__ = ["ENVIRONMENT", "OFF_PREFIX", "Formatter", "cli_language", "localize", "option_keys", "say"]
