"""The orchestrator with the shipped scripted LLM and sessions in a real SQLite store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from advisor.events import FileMade
from advisor.orchestrator import Orchestrator
from advisor.settings import AdvisorSettings
from core.errors import InputError, LLMError, LLMNotConfiguredError
from core.llm.base import LLMRequest
from core.llm.testing import FunctionClient
from core.settings import Settings, load_settings
from core.store import open_store
from sessions.gateway import SessionHost
from sessions.models import SessionState
from sessions.store import SessionRepository

SCRIPTED = "python:advisor.scripted:respond"


def settings_for(tmp_path: Path, **advisor: Any) -> Settings:
    return load_settings(None, {"data_dir": str(tmp_path), "llm": {"provider": SCRIPTED}, "advisor": advisor})


def make(tmp_path: Path, **advisor: Any) -> tuple[Orchestrator, SessionRepository]:
    settings = settings_for(tmp_path, **advisor)
    repo = SessionRepository(open_store(settings))
    return Orchestrator(settings, SessionHost(repo, AdvisorSettings.of(settings).session_policy())), repo


async def turn(
    o: Orchestrator, message: str | None, consent: str | None = None, sid: str = "s1"
) -> list[dict[str, Any]]:
    # Each event as the wire carries it, without the stamps every event has (time, run, progress).
    stamps = {"ts", "run_id", "progress", "attempt"}
    return [e.model_dump(mode="json", exclude=stamps) async for e in o.turn(sid, "", message, consent)]  # type: ignore[arg-type]


def state(repo: SessionRepository, sid: str = "s1") -> SessionState:
    loaded = repo.load(sid)
    assert loaded is not None
    return loaded


def first(events: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    return next(e for e in events if e["type"] == kind)


async def test_a_keyword_decides_without_asking_the_llm(tmp_path: Path) -> None:
    o, _ = make(tmp_path)
    events = await turn(o, "原材料高騰で困っています")
    detection = first(events, "detection")
    assert (detection["mode"], detection["by"], detection["keyword"]) == ("mode2", "keyword", "原材料高騰")
    assert first(events, "done")["mode"] == "mode2"


async def test_without_a_keyword_the_llm_classifies_with_the_history(tmp_path: Path) -> None:
    o, _ = make(tmp_path)
    events = await turn(o, "最近眠れなくて資金繰りが不安です")
    assert first(events, "detection") == {
        "type": "detection",
        "mode": "mode1",
        "by": "llm",
        "keyword": None,
        "confidence": 0.1,
    }
    # No keyword, but the recent history is about a buyer and costs: the classifier says 0.8 > 0.7.
    o2, _ = make(tmp_path / "b")
    await turn(o2, "取引先から原価の説明を求められました", sid="s2")
    events = await turn(o2, "どう答えればいいでしょう", sid="s2")
    assert first(events, "detection")["confidence"] == 0.8 and first(events, "detection")["mode"] == "mode2"
    # The same message with a higher threshold stays in Mode 1.
    o3, _ = make(tmp_path / "c", mode_threshold=0.85)
    await turn(o3, "取引先から原価の説明を求められました", sid="s3")
    assert first(await turn(o3, "どう答えればいいでしょう", sid="s3"), "detection")["mode"] == "mode1"


async def test_a_mode_change_waits_for_consent_and_accepting_switches(tmp_path: Path) -> None:
    o, repo = make(tmp_path)
    await turn(o, "後継者がいなくて事業承継に悩んでいます")
    assert state(repo).mode == "mode1"
    asked = await turn(o, "それと値上げの試算もお願いしたい")
    assert first(asked, "consent")["to"] == "mode2" and first(asked, "done")["pending"] == "mode2"
    assert state(repo).mode == "mode1" and state(repo).attributes["pending"]["to"] == "mode2"
    accepted = await turn(o, None, "accept")
    done = first(accepted, "done")
    assert done["mode"] == "mode2" and "切り替えました" in done["text"]
    assert [e["name"] for e in accepted if e["type"] == "tool"] == ["calculate_cost_impact"]
    s = state(repo)
    assert s.mode == "mode2" and "pending" not in s.attributes
    # History kept across modes: the Mode 1 exchange is still there, in order, before the Mode 2 one.
    texts = [e.text for e in s.history if e.role == "user"]
    assert texts == ["後継者がいなくて事業承継に悩んでいます", "それと値上げの試算もお願いしたい"]
    assert [e.agent for e in s.history if e.role == "assistant"] == ["mode1", "orchestrator", "mode2"]


async def test_refusing_keeps_the_current_mode(tmp_path: Path) -> None:
    o, repo = make(tmp_path)
    await turn(o, "人材の採用がうまくいきません")
    await turn(o, "価格転嫁についても聞きたい")
    refused = await turn(o, None, "refuse")
    assert first(refused, "mode")["mode"] == "mode1" and "継続します" in first(refused, "done")["text"]
    assert state(repo).mode == "mode1" and not [
        e for e in refused if e["type"] == "tool" and e["name"] not in ("web_search", "search_knowledge_base")
    ]
    with pytest.raises(InputError, match="no mode change is waiting"):
        await turn(o, None, "accept")


async def test_history_is_shared_when_coming_back_to_mode2(tmp_path: Path) -> None:
    o, repo = make(tmp_path)
    await turn(o, "値上げの試算をお願いします")
    await turn(o, "ところで補助金の相談もしたい")
    await turn(o, None, "accept")
    assert state(repo).mode == "mode1"
    await turn(o, "申入書を作ってください 単価の件です")
    done = first(await turn(o, None, "accept"), "done")
    assert done["mode"] == "mode2"
    s = state(repo)
    # The cost result of the first Mode 2 turn is still in the session: the letter embeds its table.
    tools = [r["tool"] for r in s.attributes["tool_results"]]
    assert tools == ["calculate_cost_impact", "generate_document", "generate_document"]  # the letter as PDF and Word
    assert all(r["input"]["include_cost_table"] is True for r in s.attributes["tool_results"][1:])


async def test_a_mode2_turn_calls_several_tools_and_attaches_their_files(tmp_path: Path) -> None:
    o, repo = make(tmp_path)
    events = await turn(o, "値上げの試算をして、グラフと申入書も作ってください。買いたたきの法的な根拠も")
    tools = [e["name"] for e in events if e["type"] == "tool"]
    assert set(tools) == {"calculate_cost_impact", "search_knowledge_base", "generate_chart", "generate_document"}
    assert tools.index("generate_chart") > tools.index("calculate_cost_impact")
    assert tools.index("generate_document") > tools.index("generate_chart")
    files = [e["file"] for e in events if e["type"] == "file"]
    assert sorted(f["type"] for f in files) == ["excel", "graph", "pdf", "word"]
    s = state(repo)
    assert s.generated_files == [f["key"] for f in files]
    assert all((tmp_path / "artifacts" / key).is_file() for key in s.generated_files)
    assert [(f["tool"], f["audience"]) for f in s.attributes["files"]] == [
        ("calculate_cost_impact", "internal"),
        ("generate_chart", "internal"),
        ("generate_document", "external"),
        ("generate_document", "external"),
    ]
    tool_entries = [e for e in s.history if e.role == "system" and (e.agent or "").startswith("tool:")]
    refused = [e for e in tool_entries if not e.metadata["ok"]]
    # The letter asked for the internal 松竹梅 chart as attachment: refused by the tool, made without it.
    assert len(tool_entries) == 7 and [e.agent for e in refused] == ["tool:generate_document"] * 2
    assert all("社内用" in e.text and e.metadata["input"]["attachments"] for e in refused)
    done = first(events, "done")
    assert (
        "3,063,859円" in done["text"] and "出典: https://" in done["text"] and "法律相談ではありません" in done["text"]
    )


async def test_negotiation_rounds_are_kept_in_the_session(tmp_path: Path) -> None:
    o, repo = make(tmp_path)
    await turn(o, "値上げ交渉の練習をしたい。最低賃金が4%上がったため単価を10%上げたいとお願いします")
    await turn(o, "交渉の練習の続き。指針に沿って労務費分の5%だけでもご相談できませんか")
    rounds = state(repo).attributes["negotiation"]
    assert [r["round"] for r in rounds] == [1, 2]
    assert all(0 <= r["score"] <= 100 for r in rounds) and rounds[0]["opponent_response"]


async def test_a_long_session_is_compressed_by_a_summary(tmp_path: Path) -> None:
    o, repo = make(tmp_path, compress_after=6, keep_recent=4)
    for i in range(5):
        await turn(o, f"資金繰りの相談その{i}です")
    s = state(repo)
    assert s.attributes["compressions"] >= 1
    assert s.history[0].agent == "summary" and s.history[0].metadata["by"] == "llm"
    assert "資金繰りの相談その0" in s.history[0].text  # the scripted summary keeps the user's words
    assert len(s.history) <= 6 + 2
    assert [e.text for e in s.history if e.role == "user"][-1] == "資金繰りの相談その4です"


async def test_a_failing_summariser_falls_back_to_a_digest(tmp_path: Path) -> None:
    from advisor import scripted

    async def flaky(request: LLMRequest) -> Any:
        if request.role == "advisor.summary":
            raise LLMError("summariser down")
        result: Any = None
        async for item in scripted.respond(request):
            result = item if not isinstance(item, str) else (result or "") + item
        return result

    settings = settings_for(tmp_path, compress_after=4, keep_recent=2)
    repo = SessionRepository(open_store(settings))
    o = Orchestrator(
        settings, SessionHost(repo, AdvisorSettings.of(settings).session_policy()), llm=FunctionClient(flaky)
    )
    for i in range(4):
        await turn(o, f"販路の相談{i}")
    summary = state(repo).history[0]
    assert summary.metadata["by"] == "fallback" and "簡易版" in summary.text and "販路の相談0" in summary.text


async def test_no_llm_and_bad_messages_are_clear_errors(tmp_path: Path) -> None:
    settings = load_settings(None, {"data_dir": str(tmp_path)})
    with pytest.raises(LLMNotConfiguredError, match="MAGI_LLM_PROVIDER"):
        Orchestrator(
            settings,
            SessionHost(SessionRepository(open_store(settings)), AdvisorSettings.of(settings).session_policy()),
        )
    o, _ = make(tmp_path / "x", max_message_chars=20)
    with pytest.raises(InputError, match="empty"):
        await turn(o, "   ")
    with pytest.raises(InputError, match="max_message_chars"):
        await turn(o, "あ" * 21)


async def test_a_new_message_instead_of_an_answer_declines_the_change(tmp_path: Path) -> None:
    o, repo = make(tmp_path)
    await turn(o, "販路を広げたいです")
    await turn(o, "値上げも考えています")
    assert state(repo).attributes["pending"]["to"] == "mode2"
    events = await turn(o, "やはり販路の話を続けたい")
    assert first(events, "done")["mode"] == "mode1" and "pending" not in state(repo).attributes


async def test_a_broken_classifier_keeps_the_current_mode(tmp_path: Path) -> None:
    from advisor import scripted

    async def garbled(request: LLMRequest) -> Any:
        if request.role == "advisor.orchestrator":
            return "たぶん関係あります"  # not the JSON asked for, twice: the classification fails
        result: Any = None
        async for item in scripted.respond(request):
            result = item if not isinstance(item, str) else (result or "") + item
        return result

    settings = settings_for(tmp_path)
    repo = SessionRepository(open_store(settings))
    o = Orchestrator(
        settings, SessionHost(repo, AdvisorSettings.of(settings).session_policy()), llm=FunctionClient(garbled)
    )
    await turn(o, "値上げの試算をお願いします")  # keyword: no classification needed
    events = await turn(o, "どう思いますか")
    assert first(events, "detection") == {
        "type": "detection",
        "mode": "mode2",
        "by": "fallback",
        "keyword": None,
        "confidence": None,
    }
    assert first(events, "done")["mode"] == "mode2"


async def test_a_file_is_listed_in_the_session_before_its_event_announces_it(tmp_path: Path) -> None:
    """A client fetches a file the moment it hears of it and the file endpoint serves listed files
    only, so the session must list each file before its ``file`` event, not at the end of the turn."""
    o, repo = make(tmp_path)
    announced: list[str] = []
    async for event in o.turn("s1", "", "値上げの試算をして、グラフと申入書も作ってください"):
        if isinstance(event, FileMade):
            announced.append(event.file["key"])
            assert state(repo).generated_files == announced, f"{event.file['name']} announced before it was listed"
    assert len(announced) == 4
    assert state(repo).generated_files == announced  # each listed once, also after the turn's own write
    assert [f["key"] for f in state(repo).attributes["files"]] == announced
