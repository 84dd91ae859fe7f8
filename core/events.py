"""Typed progress events: actors emit them, the driver consumes them (CLI progress bars, SSE).

Event ``type`` names follow the KATASHIRO spec; ``stageProgress`` is ours, for the per-agent pipeline
stages that progress bars need. In JSON (the store, SSE, the Ray queue) fields are camelCase like the
spec's (``runId``, ``agentId``, ``durationMs``); :func:`parse_event` reads either spelling.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from pydantic.alias_generators import to_camel


def _now() -> datetime:
    return datetime.now(UTC)


class _Event(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, serialize_by_alias=True)

    ts: datetime = Field(default_factory=_now)
    run_id: str = ""
    progress: float | None = Field(None, ge=0, le=100, description="Run progress in percent, when known.")


class ResearchStarted(_Event):
    type: Literal["researchStarted"] = "researchStarted"
    topic: str
    config: dict[str, Any] = Field(default_factory=dict)


class IterationStarted(_Event):
    type: Literal["iterationStarted"] = "iterationStarted"
    iteration: int
    context: dict[str, Any] = Field(default_factory=dict)


class AgentStarted(_Event):
    type: Literal["agentStarted"] = "agentStarted"
    iteration: int
    agent_id: int
    strategy: dict[str, Any] = Field(default_factory=dict)


class StageProgress(_Event):
    type: Literal["stageProgress"] = "stageProgress"
    iteration: int
    agent_id: int
    stage: str
    done: int
    total: int


class AgentCompleted(_Event):
    type: Literal["agentCompleted"] = "agentCompleted"
    iteration: int
    agent_id: int
    duration_ms: int
    success: bool
    error: str | None = None


class ScoringCompleted(_Event):
    type: Literal["scoringCompleted"] = "scoringCompleted"
    iteration: int
    scores: list[dict[str, Any]] = Field(default_factory=list)


class ConsensusSelected(_Event):
    type: Literal["consensusSelected"] = "consensusSelected"
    iteration: int
    selected_agent_id: int
    reason: str


class IterationCompleted(_Event):
    type: Literal["iterationCompleted"] = "iterationCompleted"
    iteration: int
    duration_ms: int
    retried: bool = False


class ResearchRequeued(_Event):
    """Ours: the service restarted while the run was pending or running; it will run again from the start."""

    type: Literal["researchRequeued"] = "researchRequeued"
    attempts: int  # times it had started before


class ResearchCompleted(_Event):
    """The spec sends the whole result here; ours carries its headline figures (the result is one GET away)."""

    type: Literal["researchCompleted"] = "researchCompleted"
    report_path: str | None = None
    iterations: int | None = None
    overall_score: float | None = None
    claims: int | None = None
    disputed: int | None = None


class ResearchFailed(_Event):
    type: Literal["researchFailed"] = "researchFailed"
    error: str


Event = Annotated[
    ResearchStarted | IterationStarted | AgentStarted | StageProgress | AgentCompleted | ScoringCompleted
    | ConsensusSelected | IterationCompleted | ResearchRequeued | ResearchCompleted | ResearchFailed,
    Field(discriminator="type"),
]
EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)


def parse_event(data: dict[str, Any]) -> Event:
    """Rebuild a typed event from its JSON form (e.g. after crossing a Ray queue)."""
    return EVENT_ADAPTER.validate_python(data)


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
