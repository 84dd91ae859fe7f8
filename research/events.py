"""Research events: the KATASHIRO spec's types plus ``stageProgress`` (per-agent pipeline stages, for
progress bars) and ``researchRequeued`` (a restarted service runs the run again)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from core.events import Event


class ResearchStarted(Event):
    type: Literal["researchStarted"] = "researchStarted"
    topic: str
    config: dict[str, Any] = Field(default_factory=dict)


class IterationStarted(Event):
    type: Literal["iterationStarted"] = "iterationStarted"
    iteration: int
    context: dict[str, Any] = Field(default_factory=dict)


class AgentStarted(Event):
    type: Literal["agentStarted"] = "agentStarted"
    iteration: int
    agent_id: int
    strategy: dict[str, Any] = Field(default_factory=dict)


class StageProgress(Event):
    type: Literal["stageProgress"] = "stageProgress"
    iteration: int
    agent_id: int
    stage: str
    done: int
    total: int


class AgentCompleted(Event):
    type: Literal["agentCompleted"] = "agentCompleted"
    iteration: int
    agent_id: int
    duration_ms: int
    success: bool
    error: str | None = None


class ScoringCompleted(Event):
    type: Literal["scoringCompleted"] = "scoringCompleted"
    iteration: int
    scores: list[dict[str, Any]] = Field(default_factory=list)


class ConsensusSelected(Event):
    type: Literal["consensusSelected"] = "consensusSelected"
    iteration: int
    selected_agent_id: int
    reason: str


class IterationCompleted(Event):
    type: Literal["iterationCompleted"] = "iterationCompleted"
    iteration: int
    duration_ms: int
    retried: bool = False


class ResearchRequeued(Event):
    """Ours: the service restarted while the run was pending or running; it will run again from the start.

    Sent once per restart; its ``attempt`` is the attempt about to start, and every later event of the
    run carries that number, so a client tells the new attempt's events from the interrupted one's.
    """

    type: Literal["researchRequeued"] = "researchRequeued"
    attempts: int  # times it had started before


class ResearchCompleted(Event):
    """The spec sends the whole result here; ours carries its headline figures (the result is one GET away)."""

    type: Literal["researchCompleted"] = "researchCompleted"
    report_path: str | None = None
    iterations: int | None = None
    overall_score: float | None = None
    claims: int | None = None
    disputed: int | None = None


class ResearchFailed(Event):
    type: Literal["researchFailed"] = "researchFailed"
    error: str


__all__ = [
    "AgentCompleted",
    "AgentStarted",
    "ConsensusSelected",
    "IterationCompleted",
    "IterationStarted",
    "ResearchCompleted",
    "ResearchFailed",
    "ResearchRequeued",
    "ResearchStarted",
    "ScoringCompleted",
    "StageProgress",
]
