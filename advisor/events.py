"""Advisor events: what one chat turn does, as the chat page and ``magi advisor`` follow it.

A turn sends ``detection`` (which mode the message calls for), ``mode``, maybe ``consent`` (a mode
change waits for the user's yes), ``compressed`` (older history summarised), ``tool`` and ``file`` as
the tools finish, ``delta`` pieces of the answer, and ends with ``done``. The HTTP app opens the stream
with ``session`` and, when the turn breaks, ends it with core's ``error``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from core.events import Event

ModeName = Literal["mode1", "mode2"]


class SessionOpened(Event):
    type: Literal["session"] = "session"
    session_id: str


class ModeDetected(Event):
    """Which mode the message calls for, and how it was told (keyword, classifier ...)."""

    type: Literal["detection"] = "detection"
    mode: ModeName
    by: str
    keyword: str | None = None
    confidence: float | None = None


class ModeSelected(Event):
    type: Literal["mode"] = "mode"
    mode: ModeName
    name: str


class ConsentAsked(Event):
    """The message calls for the other mode: the turn stops here until the user accepts or refuses."""

    type: Literal["consent"] = "consent"
    from_mode: ModeName = Field(alias="from")
    to: ModeName
    text: str


class HistoryCompressed(Event):
    type: Literal["compressed"] = "compressed"
    entries: int
    by: str


class ToolFinished(Event):
    type: Literal["tool"] = "tool"
    name: str
    label: str = Field("", description="The tool's Japanese name, as the chat page shows it.")
    ok: bool
    summary: str


class FileMade(Event):
    """A tool wrote a file (``file``: name, type, size ...; the app adds the ``href`` to fetch it)."""

    type: Literal["file"] = "file"
    file: dict[str, Any]


class AnswerDelta(Event):
    type: Literal["delta"] = "delta"
    text: str


class TurnDone(Event):
    type: Literal["done"] = "done"
    mode: ModeName
    text: str
    files: list[dict[str, Any]] = Field(default_factory=list)
    pending: ModeName | None = None


AdvisorEvent = (
    SessionOpened
    | ModeDetected
    | ModeSelected
    | ConsentAsked
    | HistoryCompressed
    | ToolFinished
    | FileMade
    | AnswerDelta
    | TurnDone
)

__all__ = [
    "AdvisorEvent",
    "AnswerDelta",
    "ConsentAsked",
    "FileMade",
    "HistoryCompressed",
    "ModeDetected",
    "ModeName",
    "ModeSelected",
    "SessionOpened",
    "ToolFinished",
    "TurnDone",
]
