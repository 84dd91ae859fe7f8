"""The question as the sages read it: checked once for the CLI, the Serve app and plugin commands."""

from __future__ import annotations

from core.errors import InputError
from core.validation import without_controls


def clean_question(text: str, *, max_chars: int, where: str = "the question") -> str:
    """The question as the sages will read it: valid Unicode, no control characters but newlines and
    tabs, not blank, not longer than ``max_chars``; an InputError says which rule failed."""
    for index, char in enumerate(text):
        if "\ud800" <= char <= "\udfff":
            raise InputError(f"{where} is not valid Unicode (a lone surrogate at character {index}); send UTF-8 text")
    cleaned = without_controls(text).strip()
    if not any(c.isalnum() for c in cleaned):
        raise InputError(f"{where} is empty; give the request to decide on (argument, '-' for stdin, or --file)")
    if len(cleaned) > max_chars:
        raise InputError(f"{where} has {len(cleaned)} characters, more than council.max_prompt_chars ({max_chars})")
    return cleaned


__all__ = ["clean_question"]
