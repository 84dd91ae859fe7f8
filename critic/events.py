"""Critic events: an evaluation's progress, idea by idea, for ``POST /critic/evaluate/stream`` and
anyone else following a run (``runId`` is the evaluation's run id)."""

from __future__ import annotations

from typing import Literal

from core.events import Event

# ok: scored; cached: taken from an earlier run; failed: no sample could be scored (or the worker
# broke); timeout: not done within the run's timeout. As ``status`` in the output's evaluations.
IdeaStatus = Literal["ok", "cached", "failed", "timeout"]


class EvaluationStarted(Event):
    """The ideas are known; ``cached`` of them need no LLM call."""

    type: Literal["evaluationStarted"] = "evaluationStarted"
    ideas: int
    cached: int


class IdeaJudging(Event):
    """A worker took the idea and its judgement began (ideas wait while every worker is busy)."""

    type: Literal["ideaJudging"] = "ideaJudging"
    idea_id: str


class IdeaJudged(Event):
    """One idea is done (``done`` of ``total``), however it ended."""

    type: Literal["ideaJudged"] = "ideaJudged"
    idea_id: str
    status: IdeaStatus
    done: int
    total: int


class EvaluationCompleted(Event):
    """Every idea is scored and the best one chosen (none when every idea failed)."""

    type: Literal["evaluationCompleted"] = "evaluationCompleted"
    selected_idea_id: str | None = None


CriticEvent = EvaluationStarted | IdeaJudging | IdeaJudged | EvaluationCompleted

__all__ = ["CriticEvent", "EvaluationCompleted", "EvaluationStarted", "IdeaJudged", "IdeaJudging", "IdeaStatus"]
