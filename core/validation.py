"""Checks shared by every entry point (HTTP, CLI, batch job, Python API) on text a caller sends.

One place decides what a usable piece of text is, so the same topic gets the same answer everywhere:
valid Unicode (no lone surrogates, which cannot be stored or printed), no control characters (they
would reach terminals and logs: ANSI escapes, NULs), whitespace collapsed, at least one letter or
digit, and a length bound. Integers read from headers are bounded before they are converted, so a
26-digit value is simply invalid instead of overflowing later.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

from core.errors import InputError, first_line

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


def without_controls(text: str, keep: str = "\n\t") -> str:
    """``text`` with terminal escape sequences removed whole (so no ``[31m`` remains of ``ESC [31m``) and
    control, format, private-use and unassigned characters dropped, but those in ``keep``."""
    return "".join(
        char for char in _ESCAPES.sub("", text) if char in keep or unicodedata.category(char) not in _DROPPED
    )


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


MAX_JSON_DEPTH = 32  # no input model of the project nests deeper; a JSON parser recurses once per level


def json_shape_problem(data: bytes | str, max_depth: int = MAX_JSON_DEPTH) -> str | None:
    """Why ``data`` cannot be JSON that is safe to parse, found without parsing it: brackets nested
    deeper than ``max_depth`` (a parser recurses once per level: 100,000 levels end in RecursionError)
    or NaN/Infinity (not JSON, yet Python's parser takes them as numbers). None when neither is there."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    depth = 0
    in_string = False
    escaped = False
    for byte in raw:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > max_depth:
                return f"nested deeper than {max_depth} levels; send a flatter document"
        elif byte in (0x5D, 0x7D):
            depth -= 1
        elif byte in (0x4E, 0x49):  # N I: NaN, Infinity, -Infinity
            return "NaN and Infinity are not JSON numbers; use finite numbers"
    return None


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def lone_surrogate_in_json(data: bytes) -> bool:
    """Whether ``data``, JSON text, escapes a lone surrogate (``"\\ud800"``) in a string or a key: valid
    JSON that no store, log or page can hold. Parsed only when such an escape appears at all."""
    if not _SURROGATE_ESCAPE.search(data):
        return False
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):
        return False  # not JSON: the route's own parser says so
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if invalid_unicode_at(item) is not None:
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def load_json(text: str, what: str, expected: str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``text`` parsed as JSON after :func:`json_shape_problem`; an InputError naming ``what`` and what
    was ``expected`` otherwise (never a RecursionError or a NaN)."""
    problem = json_shape_problem(text, max_depth)
    if problem is not None:
        raise InputError(f"{what}: {problem}; expected {expected}")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise InputError(f"{what} is not valid JSON ({first_line(exc)}); expected {expected}") from None


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
    "MAX_JSON_DEPTH",
    "bounded_int",
    "clean_text",
    "invalid_unicode_at",
    "json_shape_problem",
    "load_json",
    "lone_surrogate_in_json",
    "printable",
    "without_controls",
]
