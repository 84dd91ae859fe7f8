"""The CLI's progress bars follow the engine's events (drawing disabled: only the bar state is checked)."""

from __future__ import annotations

from cli.progress import ProgressBars
from research.events import (
    AgentCompleted,
    AgentStarted,
    ConsensusSelected,
    IterationStarted,
    ResearchCompleted,
    ResearchStarted,
    StageProgress,
)


def test_bars_track_the_run_and_each_agent() -> None:
    bars = ProgressBars(enabled=False)
    events = [
        ResearchStarted(topic="t", progress=0),
        IterationStarted(iteration=1, progress=0),
        AgentStarted(iteration=1, agent_id=1, progress=0),
        StageProgress(iteration=1, agent_id=1, stage="fetch", done=3, total=6),
        AgentCompleted(iteration=1, agent_id=1, duration_ms=5, success=True, progress=30),
        AgentStarted(iteration=1, agent_id=2, progress=30),
        AgentCompleted(iteration=1, agent_id=2, duration_ms=5, success=False, error="boom", progress=40),
        ConsensusSelected(iteration=1, selected_agent_id=1, reason="r", progress=45),
    ]
    with bars:
        for event in events:
            bars.emit(event)
        tasks = {t.description: t for t in bars._progress.tasks}
        assert tasks["research"].completed == 45
        assert tasks["research"].fields["stage"] == "iteration 1: consensus from agent 1"
        agent1 = tasks["iteration 1 · agent 1"]
        assert agent1.completed == 100 and agent1.fields["stage"] == "done"
        assert tasks["iteration 1 · agent 2"].fields["stage"] == "failed: boom"
        bars.emit(ResearchCompleted(progress=100))
        assert tasks["research"].completed == 100 and tasks["research"].fields["stage"] == "done"
