"""The systems on a real model: SmolLM2-135M-Instruct on llama.cpp, reached as ``llm.provider: openai``.

One council question, one critic evaluation of an idea, one advisor Mode 2 turn with a tool call and
one research run with LLM agents; each checks that the outputs validate against their schemas, that
usage was counted and records its wall time (printed at the end of the session). The model is tiny
and English-only: these runs prove the mechanics (prompts fit the context, schemas decode, tools are
called), not the quality of its judgement.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from core.runtime import InProcessRuntime
from core.settings import load_settings
from tests.served_model import MODEL_NAME, ServedModel, timed


@pytest.mark.timeout(900)  # the model's speed follows the machine's load; no wall-clock limit is asserted
async def test_magi_ask_parses_every_phase_and_decides_or_abstains(served_model: ServedModel, tmp_path: Path) -> None:
    from magi.api import ask
    from magi.models import Deliberation, SageName

    settings = _served(served_model, tmp_path, council={"rounds": 1, "seed": 3, "timeout_s": 900})
    with timed("magi ask"):
        result = await ask("Should a small team adopt code review for every change?", settings, InProcessRuntime())
    assert isinstance(result, Deliberation)
    assert result.decision in ("APPROVE", "DENY", "CONDITIONAL", "NO_DECISION")
    parsed = {(u.sage, u.phase) for u in result.usage if u.model}
    failed = {(f.sage, f.phase) for f in result.failures}
    for sage in SageName:  # each sage thought and voted (a debate round may be skipped: early stop)
        assert {(sage, "thinking"), (sage, "voting")} <= {(u.sage, u.phase) for u in result.usage}
    assert all((u.sage, u.phase) in parsed | failed for u in result.usage)  # every phase parsed, or on record
    for vote in result.votes:  # every vote is schema-valid or a recorded abstention with its reason
        assert vote.final is not None or (vote.abstained and vote.abstain_reason)
    assert result.usage_total.calls >= 6 and result.usage_total.input_tokens > 0
    assert {(m.provider, m.model) for m in result.sages} <= {(f"openai ({served_model.base_url[7:-3]})", MODEL_NAME)}


def _served(served_model: ServedModel, tmp_path: Path, **sections: Any) -> Any:
    return load_settings(overrides={"data_dir": tmp_path, "llm": served_model.llm_settings(), **sections})


@pytest.mark.timeout(900)
async def test_critic_evaluates_an_idea(served_model: ServedModel, tmp_path: Path) -> None:
    import json

    from core.resources import data_path
    from critic.engine import evaluate_ideas
    from critic.models import CriticInput, CriticOutput

    # one idea: one call of ~3,500 prompt tokens, 90 s on 2 cores
    ideas = json.loads(data_path("critic", "examples", "ideas.json").read_text(encoding="utf-8"))["ideas"][:1]
    settings = _served(served_model, tmp_path, critic={"samples": 1, "timeout_s": 900, "cache": False})
    runtime = InProcessRuntime()
    try:
        with timed("critic, 1 idea"):
            out = await evaluate_ideas(CriticInput.model_validate({"ideas": ideas}), settings, runtime)
    finally:
        await runtime.close()
    CriticOutput.model_validate(out.model_dump(mode="json", by_alias=True))  # the output round-trips its schema
    assert {e.idea_id for e in out.evaluations} == {"idea-1"}
    scored = [e for e in out.evaluations if e.status == "ok"]
    assert scored, [e.error for e in out.evaluations]  # at least one judgement decoded and validated
    assert all(e.total_score is not None and 0 <= e.total_score <= 100 for e in scored)
    assert out.usage.llm.calls >= len(ideas) and out.usage.llm.input_tokens > 0
    assert out.model == f"openai/{MODEL_NAME}"


@pytest.mark.timeout(900)
async def test_advisor_mode2_turn_calls_a_tool(served_model: ServedModel, tmp_path: Path) -> None:
    from advisor.orchestrator import Orchestrator
    from advisor.settings import AdvisorSettings
    from core.store import open_store
    from sessions.gateway import SessionHost
    from sessions.store import SessionRepository

    # the agent's own token budget (2000): the longest forced call of its six tools (a document) needs ~1400
    llm = served_model.llm_settings(roles={"advisor.mode2": {"params": {"require_tool": True}}})
    settings = load_settings(
        overrides={"data_dir": tmp_path, "llm": llm, "advisor": {"max_tool_turns": 2}, "search": {"provider": "local"}}
    )
    repo = SessionRepository(open_store(settings))
    orchestrator = Orchestrator(settings, SessionHost(repo, AdvisorSettings.of(settings).session_policy()))
    message = "原材料高騰で困っています。原価1000円のうち材料費が400円で、材料費が20%上がりました。影響を計算して。"
    with timed("advisor mode 2 turn"):
        events = [e.model_dump(mode="json") async for e in orchestrator.turn("served-1", "", message)]
    kinds = [e["type"] for e in events]
    said = "".join(e.get("text", "") for e in events if e["type"] == "delta")
    assert "tool" in kinds, said  # the model called at least one tool (its arguments decoded under the schema)
    done = next(e for e in events if e["type"] == "done")
    assert done["mode"] == "mode2"
    state = repo.load("served-1")
    assert state is not None
    assert any(e.agent and e.agent.startswith("tool:") for e in state.history)
    answered = [e for e in state.history if e.role == "assistant"]
    assert answered and answered[-1].text.strip()


ENGLISH_PAGES = {
    "resolver.md": "# Resolver\n\nThe default step limit of the resolver is 5000 steps. It stops after that.\n",
    "cache.md": "# Cache\n\nThe cache holds at most 100 MB by default. Older entries are evicted first.\n",
}


@pytest.mark.timeout(900)
async def test_research_with_llm_agents(served_model: ServedModel, tmp_path: Path) -> None:
    from core.events import ListSink
    from research.engine import run_research

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, text in ENGLISH_PAGES.items():
        (corpus / name).write_text(text * 3, encoding="utf-8")
    settings = _served(
        served_model,
        tmp_path,
        search={"corpus_dir": corpus},
        nlp={"workers": 1},
        research={"agents": 1, "iterations": 1, "agent_timeout_s": 900},
    )
    runtime = InProcessRuntime()
    try:
        with timed("research, 1 agent x 1 iteration"):
            result = await run_research(
                "What is the default step limit of the resolver?", settings, runtime, ListSink()
            )
    finally:
        await runtime.close()
    (report,) = result.iterations[0].agent_reports
    assert report.llm_usage is not None and report.llm_usage.calls >= 3  # plan, read, write
    assert report.llm_usage.input_tokens > 0
    assert any(d.startswith("LLM notes: ") for d in report.decisions), report.decisions
    assert result.usage is not None and result.usage.calls >= report.llm_usage.calls
    type(result).model_validate(result.model_dump(mode="json"))  # schema-valid end to end


OTHER_VENDOR = """from magi.scripted import respond as scripted


async def respond(request):
    answer = await scripted(request)
    return answer.model_copy(update={"model": "other-vendor-1"})
"""


@pytest.mark.timeout(900)
async def test_a_council_on_three_providers_names_each_sages_provider_and_model(
    served_model: ServedModel, tmp_path: Path
) -> None:
    from magi.api import ask
    from magi.models import Deliberation, SageName
    from magi.output import to_json, to_markdown

    other = tmp_path / "other_vendor.py"
    other.write_text(OTHER_VENDOR, encoding="utf-8")
    roles = {
        "magi.melchior": {"provider": "python:magi.scripted:respond", "model": "scripted-1"},
        "magi.balthasar": {"provider": f"python:{other}:respond", "model": "other-vendor-1"},
        "magi.casper": {"provider": "openai", "base_url": served_model.base_url, "model": MODEL_NAME},
    }
    settings = _served(served_model, tmp_path, council={"rounds": 1, "seed": 7, "timeout_s": 900})
    settings = settings.updated({"llm": {"roles": roles}})
    with timed("council on three providers"):
        result = await ask("Should a small team adopt code review for every change?", settings, InProcessRuntime())
    assert isinstance(result, Deliberation)
    host = served_model.base_url.split("//", 1)[1].removesuffix("/v1")
    shown = {m.sage: (m.provider, m.model) for m in result.sages}
    assert shown[SageName.MELCHIOR] == ("python:magi.scripted:respond", "magi-scripted")  # as it reports itself
    assert shown[SageName.BALTHASAR][1] == "other-vendor-1" and shown[SageName.BALTHASAR][0].endswith(":respond")
    if SageName.CASPER in shown:  # the small model may fail every phase; then it abstained, on record
        assert shown[SageName.CASPER] == (f"openai ({host})", MODEL_NAME)
    else:
        assert any(f.sage is SageName.CASPER for f in result.failures)
    markdown = to_markdown(result)
    assert "| MELCHIOR-1 | python:magi.scripted:respond | magi-scripted |" in markdown
    assert {s["sage"] for s in to_json(result)["sages"]} >= {"melchior", "balthasar"}
