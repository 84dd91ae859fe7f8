"""Typed progress events: the base every system's events extend, and the sinks that carry them.

Each system declares its own events (``research/events.py`` ...) as subclasses of :class:`Event` with a
``type: Literal[...]`` default; subclasses register themselves, so :func:`parse_event` rebuilds any
of them from JSON (after a Ray queue, the store or SSE) without core knowing the system. On the wire
fields are camelCase (``runId``, ``durationMs``); either spelling parses.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Any, ClassVar, Protocol

from pydantic import BaseModel, ConfigDict, Field
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


__all__ = ["Event", "EventSink", "FanoutSink", "ListSink", "parse_event"]
