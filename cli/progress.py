"""Progress bars for research runs: one for the whole run, one per agent and iteration; drawn on stderr."""

from __future__ import annotations

import threading
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from cli.language import say
from core.events import Event
from research.events import (
    AgentCompleted,
    AgentStarted,
    ConsensusSelected,
    IterationStarted,
    ResearchCompleted,
    StageProgress,
)

STAGES = ("search", "fetch", "entities", "report")  # the stages a research agent reports, in order


class ProgressBars:
    """An :class:`EventSink` that turns agent events into rich progress bars."""

    def __init__(self, enabled: bool = True) -> None:
        self._progress = Progress(
            TextColumn("{task.description:<28}"),
            BarColumn(),
            TextColumn("{task.percentage:>3.0f}%"),
            TextColumn("{task.fields[stage]}"),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            disable=not enabled,
        )
        self._tasks: dict[tuple[int, int], TaskID] = {}
        self._run = self._progress.add_task(say("progress.research"), total=100, stage=say("progress.starting"))
        self._lock = threading.Lock()

    def __enter__(self) -> ProgressBars:
        self._progress.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._progress.stop()

    def _task(self, iteration: int, agent_id: int) -> TaskID:
        key = (iteration, agent_id)
        if key not in self._tasks:
            self._tasks[key] = self._progress.add_task(
                say("progress.agent", n=iteration, agent=agent_id), total=100, stage=say("progress.waiting")
            )
        return self._tasks[key]

    def _overall(self, event: Event) -> None:
        """The run bar follows the events' progress percentage; its label says what the run is doing."""
        label = None
        if isinstance(event, IterationStarted):
            label = say("progress.iteration", n=event.iteration)
        elif isinstance(event, ConsensusSelected):
            label = say("progress.consensus", n=event.iteration, agent=event.selected_agent_id)
        elif isinstance(event, ResearchCompleted):
            label = say("progress.done")
        if event.progress is not None:
            self._progress.update(self._run, completed=event.progress)
        if label:
            self._progress.update(self._run, stage=label)

    def emit(self, event: Event) -> None:
        with self._lock:
            self._overall(event)
            if isinstance(event, AgentStarted):  # also a retried agent: its bar starts again
                self._progress.update(
                    self._task(event.iteration, event.agent_id), completed=0, stage=say("progress.starting")
                )
            elif isinstance(event, StageProgress):
                index = STAGES.index(event.stage) if event.stage in STAGES else 0
                fraction = event.done / event.total if event.total else 1.0
                percent = 100 * (index + fraction) / len(STAGES)
                name = say(f"stage.{event.stage}") if event.stage in STAGES else event.stage
                stage = say("progress.stage", stage=name, done=event.done, total=event.total)
                self._progress.update(self._task(event.iteration, event.agent_id), completed=percent, stage=stage)
            elif isinstance(event, AgentCompleted):
                stage = (
                    say("progress.done") if event.success else say("progress.failed", error=(event.error or "")[:40])
                )
                self._progress.update(self._task(event.iteration, event.agent_id), completed=100, stage=stage)


__all__ = [
    "STAGES",
    "ProgressBars",
]
