"""Text from users, pages, ideas and tools reaches a model fenced and named as data.

``fence(text, "REQUEST")`` wraps the text between ``<<<REQUEST`` and ``REQUEST>>>`` lines, after
breaking any fence marker inside it (``<<<``/``>>>`` become ``<< <``/``> >>``), so a request cannot
close its own fence and continue as instructions. Prompts say what each fence holds and that nothing
inside one is an instruction; :func:`fenced` reads the fences back (tests, scripted models).
"""

from __future__ import annotations

import re

_OPEN, _CLOSE = "<<<", ">>>"


def fence(text: str, name: str) -> str:
    safe = text.replace(_OPEN, "<< <").replace(_CLOSE, "> >>")
    return f"{_OPEN}{name}\n{safe}\n{name}{_CLOSE}"


def fenced(prompt: str, name: str) -> list[str]:
    """The contents of every ``name`` fence in ``prompt``, in order."""
    return re.findall(rf"{_OPEN}{re.escape(name)}\n(.*?)\n{re.escape(name)}{_CLOSE}", prompt, flags=re.DOTALL)


def outside_fences(prompt: str) -> str:
    """``prompt`` with every fence's contents removed: what the model is told as instructions."""
    return re.sub(rf"{_OPEN}([A-Z_]+)\n.*?\n\1{_CLOSE}", r"<<<\1 … \1>>>", prompt, flags=re.DOTALL)


__all__ = ["fence", "fenced", "outside_fences"]
