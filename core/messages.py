"""Message catalogues: every human-facing label of a system in Japanese and English, from data.

A system keeps its labels in ``data/<system>/messages.yaml``::

    version: 1
    names: [MAGI, MELCHIOR-1]        # proper names allowed in Japanese text as they are
    internal: [BusinessInfoAgent]    # identifiers that must never reach a person
    messages:
      votes.title: {ja: 投票, en: Votes}
      decision.headline: {ja: "判定: {decision}", en: "Decision: {decision}"}

The file is checked at load: both languages for every key, and no
Latin word in the Japanese text other than the listed names  (an English label left in Japanese
output is the defect this module exists to prevent). :func:`leaks` is the same check on a rendered
output: the golden tests run it over every Japanese Markdown a system writes.
"""

from __future__ import annotations

import re
import string
from functools import cache
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from core.policy import PolicyModel, load_policy
from core.resources import data_path
from core.text.tokenize import is_japanese

Lang = Literal["ja", "en"]
LANGS: tuple[Lang, ...] = ("ja", "en")
_LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_.\-]*[A-Za-z0-9]|[A-Za-z]")
# Short or symbolic English fragments ("in", "of") would match any text; labels are checked from this length.
MIN_LABEL_CHARS = 4


def language_of(text: str, default: Lang = "ja") -> Lang:
    """The language a person wrote ``text`` in (ja when kana/kanji are a noticeable share)."""
    if not text.strip():
        return default
    return "ja" if is_japanese(text) else "en"


def _fields(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def _static_parts(template: str) -> list[str]:
    return [literal for literal, _, _, _ in string.Formatter().parse(template) if literal]


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    ja: str
    en: str


class Catalogue(PolicyModel):
    """One system's labels (see the module docstring); ``text(key, lang, **fields)`` renders one."""

    policy_name: ClassVar[str] = "message catalogue"

    names: list[str] = Field(default_factory=list)
    internal: list[str] = Field(default_factory=list)
    messages: dict[str, Message]

    @model_validator(mode="after")
    def _consistent(self) -> Catalogue:
        allowed = {n.casefold() for n in self.names}
        for key, message in self.messages.items():
            try:  # the fields may differ: a Japanese date is not written from the same parts as an English one
                _fields(message.ja), _fields(message.en)
            except ValueError as exc:
                raise ValueError(f"{key}: not a valid template ({exc}); double literal braces") from None
            for part in _static_parts(message.ja):
                for word in _LATIN_WORD.findall(part):
                    if word.casefold() not in allowed:
                        raise ValueError(
                            f"{key}: the Japanese text has the Latin word {word!r}; translate it or list it "
                            "under names if it is a proper name"
                        )
        return self

    def text(self, key: str, lang: Lang, **fields: object) -> str:
        message = self.messages.get(key)
        if message is None:
            raise KeyError(f"message {key!r} is not in the catalogue; add it to data/<system>/messages.yaml")
        template = message.ja if lang == "ja" else message.en
        return template.format(**fields) if fields else template.replace("{{", "{").replace("}}", "}")

    def english_labels(self) -> list[str]:
        """The static English fragments of every message that differ from its Japanese text."""
        found: set[str] = set()
        for message in self.messages.values():
            ja = " ".join(_static_parts(message.ja))
            for part in _static_parts(message.en):
                for piece in re.split(r"[:;,.()|\[\]—·/\n]+", part):
                    piece = piece.strip(" -*#>`'\"")
                    letters = sum(c.isalpha() for c in piece)
                    if letters >= MIN_LABEL_CHARS and piece not in ja and piece.casefold() not in self._names():
                        found.add(piece)
        return sorted(found, key=len, reverse=True)

    def _names(self) -> set[str]:
        return {n.casefold() for n in self.names}


def leaks(text: str, catalogue: Catalogue, *, extra_internal: tuple[str, ...] = ()) -> list[str]:
    """English catalogue labels and internal identifiers found in a Japanese ``text`` (empty: clean).

    A label counts when it appears as whole words, case ignored ("Votes" in 「投票 (Votes)」); an
    internal identifier when it appears at all (``requestType``, ``BusinessInfoAgent``, ``None``).
    """
    found = []
    for label in catalogue.english_labels():
        if re.search(rf"(?<![A-Za-z]){re.escape(label)}(?![A-Za-z])", text, re.IGNORECASE):
            found.append(label)
    for key in (*catalogue.internal, *extra_internal):
        if re.search(rf"(?<![A-Za-z0-9_]){re.escape(key)}(?![A-Za-z0-9_])", text):
            found.append(key)
    return found


def format_number(value: float, lang: Lang, digits: int = 0) -> str:
    """A number for people: thousands grouped, ``digits`` decimals (both languages write 1,234.5)."""
    del lang  # ja and en share the grouping; the parameter keeps call sites honest about locale
    text = f"{value:,.{digits}f}"
    return "0" if text in ("-0", "-0.0") and digits == 0 else text


def format_percent(share: float, lang: Lang, digits: int = 0) -> str:
    """A share 0-1 as a percentage (``52.4%`` in both languages)."""
    return f"{format_number(share * 100, lang, digits)}%"


@cache
def catalogue(system: str) -> Catalogue:
    """``data/<system>/messages.yaml``, loaded once per process."""
    return load_catalogue(data_path(system, "messages.yaml"))


def load_catalogue(path: Path) -> Catalogue:
    return load_policy(path, Catalogue)


__all__ = [
    "LANGS",
    "MIN_LABEL_CHARS",
    "Catalogue",
    "Lang",
    "Message",
    "catalogue",
    "format_number",
    "format_percent",
    "language_of",
    "leaks",
    "load_catalogue",
]
