"""Checks shared by every entry point (HTTP, CLI, batch job, Python API) on text a caller sends.

One place decides what a usable piece of text is, so the same topic gets the same answer everywhere:
valid Unicode (no lone surrogates, which cannot be stored or printed), no control characters (they
would reach terminals and logs: ANSI escapes, NULs), whitespace collapsed, at least one letter or
digit, and a length bound. Integers read from headers are bounded before they are converted, so a
26-digit value is simply invalid instead of overflowing later.
"""

from __future__ import annotations

import re
import unicodedata

from core.errors import InputError

# Categories removed from text: controls (Cc), format characters (Cf: bidi overrides, zero widths),
# surrogates (Cs), private use (Co) and unassigned code points (Cn).
_DROPPED = frozenset({"Cc", "Cf", "Cs", "Co", "Cn"})
_WHITESPACE = re.compile(r"\s+")
# Terminal escape sequences as a whole (CSI "ESC [ ... m", OSC "ESC ] ... BEL"), so no "[31m" remains.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]?|\x9b[0-?]*[ -/]*[@-~]")
_DIGITS = re.compile(r"[0-9]+")


def invalid_unicode_at(text: str) -> int | None:
    """Index of the first lone surrogate in ``text`` (not encodable as UTF-8), else None."""
    for index, char in enumerate(text):
        if "\ud800" <= char <= "\udfff":
            return index
    return None


def printable(text: str) -> str:
    """``text`` safe to echo to a terminal or a log: control and format characters removed (tabs and
    newlines become spaces), lone surrogates replaced by U+FFFD."""
    out: list[str] = []
    for char in _ESCAPES.sub("", text):
        category = unicodedata.category(char)
        if category == "Cs":
            out.append("\ufffd")
        elif char in "\t\n\r":
            out.append(" ")
        elif category not in ("Cc", "Cf"):
            out.append(char)
    return "".join(out)


def clean_text(text: object, what: str, *, max_chars: int, example: str = "") -> str:
    """``text`` checked and normalised for use; an :class:`InputError` (exit 2, HTTP 422) otherwise.

    ``what`` names the value in messages ("the research topic", "topics.txt:3"); ``example`` is
    appended to the "no letters or digits" message as a hint.
    """
    if not isinstance(text, str):
        raise InputError(f"{what} must be text, got {type(text).__name__}")
    bad = invalid_unicode_at(text)
    if bad is not None:
        raise InputError(f"{what} is not valid Unicode (a lone surrogate at character {bad + 1}); send UTF-8 text")
    kept = "".join(
        " " if char.isspace() else char for char in _ESCAPES.sub("", text) if unicodedata.category(char) not in _DROPPED
    )
    cleaned = _WHITESPACE.sub(" ", kept).strip()
    if not any(char.isalnum() for char in cleaned):
        hint = f"; {example}" if example else ""
        if not cleaned:
            raise InputError(f"{what} is empty once control characters are removed{hint}")
        raise InputError(f"{what} has no letters or digits{hint}")
    if len(cleaned) > max_chars:
        raise InputError(f"{what} has {len(cleaned)} characters; keep it under {max_chars}")
    return cleaned


def bounded_int(text: str | None, *, low: int = 0, high: int = 2**63 - 1) -> int | None:
    """``text`` as an integer in ``[low, high]`` if it is plain ASCII digits, else None (never raises).

    The digit count is checked before converting, so a huge value costs nothing and cannot overflow
    anything downstream (a database column, a C library).
    """
    if text is None:
        return None
    text = text.strip()
    if not _DIGITS.fullmatch(text) or len(text) > len(str(high)):
        return None
    value = int(text)
    return value if low <= value <= high else None


__all__ = [
    "bounded_int",
    "clean_text",
    "invalid_unicode_at",
    "printable",
]
