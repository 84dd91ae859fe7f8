"""Typed events of every system through core/events.py, and the one SSE encoder every app uses."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from advisor.events import ConsentAsked, FileMade, TurnDone
from core.events import (
    Event,
    ListSink,
    LogSink,
    StreamFailed,
    event_frame,
    json_frame,
    parse_event,
    sse_frame,
)
from core.runtime import InProcessRuntime
from core.settings import load_settings
from critic.engine import evaluate_ideas
from critic.events import EvaluationCompleted, EvaluationStarted, IdeaJudged, IdeaJudging
from critic.models import CriticInput
from magi.events import CouncilDecided, CouncilEvent, PhaseStarted, SageAnswered
from magi.protocol import deliberate
from router.events import RouteDecided
from router.route import Router


def frames(raw: bytes) -> list[dict[str, str]]:
    """An SSE byte stream read back as a client reads it: one dict of fields per frame."""
    out: list[dict[str, str]] = []
    for block in raw.decode().split("\n\n"):
        if not block:
            continue
        fields: dict[str, str] = {}
        for line in block.split("\n"):
            name, _, value = line.partition(": ")
            fields[name] = fields[name] + "\n" + value if name in fields else value
        out.append(fields)
    return out


def test_a_frame_has_its_id_name_and_data_and_splits_line_breaks() -> None:
    assert sse_frame("phase", '{"a":1}', 7) == b'id: 7\nevent: phase\ndata: {"a":1}\n\n'
    assert frames(sse_frame("note", "one\ntwo")) == [{"event": "note", "data": "one\ntwo"}]
    assert json_frame("result", {"text": "価格"}) == 'event: result\ndata: {"text": "価格"}\n\n'.encode()


def test_an_event_frame_is_named_by_its_type_with_camel_case_json() -> None:
    event = ConsentAsked(from_mode="mode1", to="mode2", text="切り替えますか？", run_id="s1")
    [frame] = frames(event_frame(event, 3))
    data = json.loads(frame["data"])
    assert (frame["id"], frame["event"]) == ("3", "consent")
    assert (data["from"], data["to"], data["runId"]) == ("mode1", "mode2", "s1")
    assert parse_event(data) == event  # the registry rebuilds it from the wire


def test_a_failed_stream_says_why_under_both_names() -> None:
    data = json.loads(frames(event_frame(StreamFailed(message="LLM timed out")))[0]["data"])
    assert data["type"] == "error" and data["message"] == data["error"] == "LLM timed out"
    assert isinstance(parse_event(data), StreamFailed)


def test_every_systems_event_type_is_registered_once() -> None:
    kinds = {
        "phase": PhaseStarted,
        "sage": SageAnswered,
        "decided": CouncilDecided,
        "ideaJudged": IdeaJudged,
        "ideaJudging": IdeaJudging,
        "evaluationStarted": EvaluationStarted,
        "evaluationCompleted": EvaluationCompleted,
        "routeDecided": RouteDecided,
        "file": FileMade,
        "done": TurnDone,
        "error": StreamFailed,
    }
    for name, cls in kinds.items():
        assert Event.registry[name] is cls
    with pytest.raises(TypeError, match="declared twice"):

        class Again(Event):  # another system may not take a type name already taken
            type: str = "phase"


async def test_the_council_reports_its_phases_typed_with_progress() -> None:
    seen: list[CouncilEvent] = []
    settings = load_settings(
        None, {"llm": {"provider": "python:magi.scripted:respond"}, "council": {"rounds": 2, "early_stop": "off"}}
    )
    question = "Adopt it?\nmagi-script: melchior=APPROVE balthasar=DENY casper=APPROVE"
    result = await deliberate(question, settings, InProcessRuntime(), seed=5, on_event=seen.append)
    phases = [(e.phase, e.round) for e in seen if isinstance(e, PhaseStarted)]
    assert phases == [("thinking", None), ("debate", 1), ("debate", 2), ("voting", None)]
    assert [e.sage for e in seen if isinstance(e, SageAnswered) and e.phase == "thinking"] == [
        "melchior",
        "balthasar",
        "casper",
    ]
    # each answer carries the sage's position, so a page fills the sage's panel as it comes in
    blind = {e.sage: e.stance for e in seen if isinstance(e, SageAnswered) and e.phase == "thinking"}
    assert {s: x.verdict for s, x in blind.items() if x} == {
        "melchior": "APPROVE",
        "balthasar": "DENY",
        "casper": "APPROVE",
    }
    finals = {e.sage: e.stance for e in seen if isinstance(e, SageAnswered) and e.phase == "voting"}
    assert all(x is not None and x.reason and 0 <= x.confidence <= 1 for x in finals.values())
    rounds = [e.round for e in seen if isinstance(e, SageAnswered) and e.phase == "debate" and e.stance]
    assert rounds == [1, 1, 1, 2, 2, 2]
    progress = [e.progress for e in seen if e.progress is not None]
    assert progress == sorted(progress) and progress[0] == 0 and progress[-1] == 100
    decided = seen[-1]
    assert isinstance(decided, CouncilDecided) and decided.decision == result.decision
    assert {e.run_id for e in seen} == {"s5"}


async def test_the_critic_reports_each_idea_as_it_finishes() -> None:
    sink = ListSink()
    settings = load_settings(
        None,
        {
            "llm": {
                "provider": "python:tests.unit.providers.critic_faults:judge",
                "backoff_initial_s": 0.01,
                "backoff_max_s": 0.02,
            },
            "critic": {"timeout_s": 1.0, "min_total": 0},  # the tiny test ideas score below the default bar
        },
    )
    ideas = CriticInput.model_validate(
        {
            "ideas": [
                {"id": f"i{n}", "title": t, "description": f"丸の内のテナント向け {t}", "estimatedRevenue": 1e9}
                for n, t in enumerate(["quick", "FAIL idea", "SLOW idea"], start=1)
            ]
        }
    )
    out = await evaluate_ideas(ideas, settings, InProcessRuntime(), events=sink)
    judging = [e for e in sink.events if isinstance(e, IdeaJudging)]
    assert sorted(e.idea_id for e in judging) == ["i1", "i2", "i3"]  # each idea's judgement began
    started, *judged, completed = [e for e in sink.events if not isinstance(e, IdeaJudging)]
    assert isinstance(started, EvaluationStarted) and (started.ideas, started.cached) == (3, 0)
    assert all(isinstance(e, IdeaJudged) for e in judged)
    by_idea = {e.idea_id: e for e in judged if isinstance(e, IdeaJudged)}
    assert {k: e.status for k, e in by_idea.items()} == {"i1": "ok", "i2": "failed", "i3": "timeout"}
    assert [e.done for e in judged if isinstance(e, IdeaJudged)] == [1, 2, 3] and judged[-1].progress == 100
    assert isinstance(completed, EvaluationCompleted) and completed.selected_idea_id == "i1"
    assert {e.run_id for e in sink.events} == {out.run_id}


def test_a_route_decision_is_one_json_log_line_without_the_question(caplog: pytest.LogCaptureFixture) -> None:
    result = Router(confidence_threshold=0.5).route("明日のイベントは何時から？")
    sink = LogSink(logging.getLogger("router.decisions"))
    with caplog.at_level(logging.INFO, logger="router.decisions"):
        sink.emit(RouteDecided.of(result, "visitor-1"))
    [record] = caplog.records
    data: dict[str, Any] = json.loads(record.getMessage().removeprefix("event "))
    assert data["type"] == "routeDecided" and data["sessionId"] == "visitor-1" and data["agent"] == result.agent
    assert "イベント" not in record.getMessage()
    quiet = LogSink(logging.getLogger("router.decisions"), logging.DEBUG)
    assert not quiet.enabled  # below the logger's level: the app does not even build the event
