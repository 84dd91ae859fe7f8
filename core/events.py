"""Typed progress events: the base every system's events extend, the sinks that carry them, and the
one Server-Sent Events encoder every HTTP app streams them with.

Each system declares its own events (``research/events.py`` ...) as subclasses of :class:`Event` with a
``type: Literal[...]`` default; subclasses register themselves, so :func:`parse_event` rebuilds any
of them from JSON (after a Ray queue, the store or SSE) without core knowing the system. On the wire
fields are camelCase (``runId``, ``durationMs``); either spelling parses.
"""

from __future__ import annotations

import json
import logging
import threading
from datetime import UTC, datetime
from typing import Any, ClassVar, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, computed_field
from pydantic.alias_generators import to_camel


def _now() -> datetime:
    return datetime.now(UTC)


class Event(BaseModel):
    """Base of every event: when, which run, how far (percent, when known) and its ``type`` name."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, serialize_by_alias=True)
    registry: ClassVar[dict[str, type[Event]]] = {}

    type: str
    ts: datetime = Field(default_factory=_now)
    run_id: str = ""
    progress: float | None = Field(None, ge=0, le=100, description="Run progress in percent, when known.")
    attempt: int | None = Field(
        None, ge=1, description="Which attempt of the run emitted it (a run restarted by its service starts again)."
    )

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        name = cls.model_fields["type"].default
        if isinstance(name, str) and name:
            known = Event.registry.get(name)
            if known is not None and known.__qualname__ != cls.__qualname__:
                raise TypeError(f"event type {name!r} is declared twice ({known.__module__} and {cls.__module__})")
            Event.registry[name] = cls


class StreamFailed(Event):
    """A stream of events ended in an error; what went wrong, said for the one waiting. Every system's
    streams end this way, so it lives here rather than in a system."""

    type: Literal["error"] = "error"
    message: str
    code: str = Field("failed", description="The kind of failure (no_llm, llm_failed, invalid, timeout, failed).")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def error(self) -> str:
        """The message again, under the name the first streams used for it."""
        return self.message


def parse_event(data: dict[str, Any]) -> Event:
    """Rebuild a typed event from its JSON form; an unknown type stays a plain :class:`Event`."""
    cls = Event.registry.get(str(data.get("type", "")), Event)
    return cls.model_validate(data)


class EventSink(Protocol):
    def emit(self, event: Event) -> None: ...


class ListSink:
    """Keeps every event in order; thread-safe. Used by tests and by the report's timeline."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.events: list[Event] = []

    def emit(self, event: Event) -> None:
        with self._lock:
            self.events.append(event)


class FanoutSink:
    """Sends each event to several sinks (e.g. a list and a progress display)."""

    def __init__(self, *sinks: EventSink) -> None:
        self._sinks = sinks

    def emit(self, event: Event) -> None:
        for sink in self._sinks:
            sink.emit(event)


class LogSink:
    """Writes each event as one JSON log line (``event {...}``), for events nobody waits on live."""

    def __init__(self, logger: logging.Logger, level: int = logging.INFO) -> None:
        self._logger = logger
        self._level = level

    @property
    def enabled(self) -> bool:
        """Whether an event would be written (skip building one when not)."""
        return self._logger.isEnabledFor(self._level)

    def emit(self, event: Event) -> None:
        if self.enabled:
            self._logger.log(self._level, "event %s", event.model_dump_json())


class CallbackSink:
    """An :class:`EventSink` over a plain function (a queue's ``put_nowait``, a progress printer)."""

    def __init__(self, callback: Any) -> None:
        self._callback = callback

    def emit(self, event: Event) -> None:
        self._callback(event)


SSE_KEEPALIVE = b": keepalive\n\n"  # a comment line: keeps proxies from closing an idle stream


def sse_frame(name: str, data: str, event_id: int | None = None) -> bytes:
    """One Server-Sent Events frame: its id (what ``Last-Event-ID`` resumes after), its name and its
    data; a line break in ``data`` becomes a second ``data:`` line, as the format wants."""
    head = f"id: {event_id}\n" if event_id is not None else ""
    lines = "".join(f"data: {line}\n" for line in data.split("\n"))
    return f"{head}event: {name}\n{lines}\n".encode()


def event_frame(event: Event, event_id: int | None = None) -> bytes:
    """A typed event as an SSE frame named by its ``type``, its JSON (camelCase) as data."""
    return sse_frame(event.type, event.model_dump_json(), event_id)


def json_frame(name: str, payload: Any) -> bytes:
    """Any JSON value (a final result) as an SSE frame named ``name``."""
    return sse_frame(name, json.dumps(payload, ensure_ascii=False, default=str))


__all__ = [
    "SSE_KEEPALIVE",
    "CallbackSink",
    "Event",
    "EventSink",
    "FanoutSink",
    "ListSink",
    "LogSink",
    "StreamFailed",
    "event_frame",
    "json_frame",
    "parse_event",
    "sse_frame",
]
