"""Hardening II without Ray: the attacks of issue 21 on the tools, the CLI, the sessions and the
settings, each sent for real and answered with a clear error (exit 2 / InputError) instead of an
internal error, a hang or a silent success."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from advisor.settings import AdvisorSettings
from cli.main import main
from core.errors import InputError
from core.settings import load_settings
from core.store import Store
from sessions.ids import LOCAL_OWNER, TooManySessionsError, owner_of, session_key
from sessions.models import SessionPolicy, SessionState
from sessions.store import SessionRepository, admit_session, read_session, update_session, utcnow

DEEP = "[" * 100_000 + "]" * 100_000


def _one_line(capsys: pytest.CaptureFixture[str], command: str) -> str:
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith(f"magi {command}: error: "), err
    assert "Traceback" not in err and "internal error" not in err
    return err


# --- item 7: internal errors from user input ------------------------------------------------------


@pytest.mark.parametrize(
    "amount", ["1E+40", "1E+999999999", "NaN", "Infinity", "-Infinity", "123456789012345678901234567890"]
)
async def test_cost_figures_beyond_exact_arithmetic_are_input_errors(tmp_path: Path, amount: str) -> None:
    from advisor.tools import call_tool
    from advisor.tools.base import ToolContext

    ctx = ToolContext(load_settings(None, {"data_dir": str(tmp_path)}))
    body = {"current_cost_structure": {"材料費": {"amount": amount}}, "current_price": 900}
    with pytest.raises(InputError, match="amount"):
        await call_tool("calculate_cost_impact", body, ctx)


async def test_a_margin_a_hair_below_100_percent_is_an_input_error(tmp_path: Path) -> None:
    from advisor.tools import call_tool
    from advisor.tools.base import ToolContext

    ctx = ToolContext(load_settings(None, {"data_dir": str(tmp_path)}))
    body = {
        "current_cost_structure": {"材料費": {"amount": "1e15"}},
        "price_changes": {"材料費": "1000"},
        "current_profit_margin": "0." + "9" * 23,
        "premium_margin_uplift": "0",
    }
    with pytest.raises(InputError, match="too large to compute exactly"):
        await call_tool("calculate_cost_impact", body, ctx)


def test_chart_text_is_text_and_chart_values_are_bounded() -> None:
    """Issue 21 (6, 7): a mathtext title raised ValueError; 2,600 bars took 13 s; 1e308 overflowed."""
    from advisor.fonts import japanese_font
    from advisor.tools.chart import MAX_CATEGORIES, ChartInput, render

    bars = {"data": {"categories": [{"label": "$x$", "value": 1}]}, "chart_type": "bar"}
    font = japanese_font(AdvisorSettings.of(load_settings()))
    assert render(ChartInput.model_validate({**bars, "title": "$\\frac{1}{$"}), font).startswith(b"\x89PNG")
    refused: list[dict[str, Any]] = [
        {"data": {"time_series": [{"date": "a", "value": 1e308}, {"date": "b", "value": -1e308}]}},
        {"data": {"time_series": [{"date": "a", "value": float("inf")}, {"date": "b", "value": 1}]}},
        {"data": {"categories": [{"label": str(i), "value": i} for i in range(2600)]}},
        {"data": {"categories": [{"label": str(i), "value": i} for i in range(MAX_CATEGORIES + 1)]}},
        {"data": {"categories": [{"label": "x" * 500, "value": 1}]}},
    ]
    for case in refused:
        with pytest.raises(ValidationError):
            ChartInput.model_validate({**case, "chart_type": "forecast", "title": "t"})


async def test_charts_draw_side_by_side_in_the_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 21 (6): a global lock queued every user's chart behind one; the pool draws two at once."""
    import threading

    from advisor.fonts import japanese_font
    from advisor.tools import chart

    inside: list[int] = []
    most = 0
    lock = threading.Lock()
    real = chart.render

    def watched(data: chart.ChartInput, font: Path) -> bytes:
        nonlocal most
        with lock:
            inside.append(1)
            most = max(most, len(inside))
        try:
            time.sleep(0.3)  # long enough for the second call to arrive while the first draws
            return real(data, font)
        finally:
            with lock:
                inside.pop()

    data = chart.ChartInput.model_validate(
        {"data": {"categories": [{"label": "a", "value": 1}]}, "chart_type": "bar", "title": "t"}
    )
    monkeypatch.setattr(chart, "render", watched)
    font = japanese_font(AdvisorSettings.of(load_settings()))
    pngs = await asyncio.gather(chart.POOL.render(data, font), chart.POOL.render(data, font))
    assert most == 2 and all(p.startswith(b"\x89PNG") for p in pngs)


def test_ideas_sharing_an_id_or_holding_inf_are_refused_by_the_http_model() -> None:
    from deployments.critic import CriticRequest

    idea = {"id": "i-1", "title": "t", "description": "d"}
    with pytest.raises(ValidationError, match="used twice"):
        CriticRequest.model_validate({"ideas": [idea, idea]})
    for bad in (float("inf"), float("nan")):
        with pytest.raises(ValidationError, match="finite"):
            CriticRequest.model_validate({"ideas": [{**idea, "estimatedOperatingProfit": bad}]})


def test_deeply_nested_files_are_exit_2_not_internal_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 21 (7): ``magi critic`` and ``magi route --batch`` on 100,000-deep nesting exited 1."""
    deep = tmp_path / "deep.json"
    deep.write_text(DEEP, encoding="utf-8")
    assert main(["critic", str(deep)]) == 2
    assert "nested deeper" in _one_line(capsys, "critic")
    assert main(["route", "--batch", str(deep)]) == 2
    assert "nested deeper" in _one_line(capsys, "route")
    tool_input = tmp_path / "tool.json"
    tool_input.write_text('{"query": NaN}', encoding="utf-8")
    assert main(["tool", "web_search", "--input", str(tool_input)]) == 2
    assert "NaN" in _one_line(capsys, "tool")


def test_an_endless_batch_file_is_refused_after_a_bounded_read(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 21 (7): ``--batch /dev/zero`` read until MemoryError."""
    assert main(["route", "--batch", "/dev/zero"]) == 2
    assert "larger than" in _one_line(capsys, "route")


# --- item 10: escape sequences, documented variables ----------------------------------------------


def test_a_question_that_is_only_an_escape_sequence_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    from magi.question import clean_question

    for text in ("\x1b[31m", "\x1b]0;title\x07", "\x1b[2J\x1b[H", "\u200b\x1b[0m"):
        with pytest.raises(InputError, match="empty"):
            clean_question(text, max_chars=100)
    assert clean_question("導入すべき？\x1b[0m", max_chars=100) == "導入すべき？"


def test_an_advisor_message_of_escape_sequences_is_exit_2(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MAGI_LLM_PROVIDER", "python:advisor.scripted:respond")
    assert main(["advisor", "\x1b[31m", "--session", "esc-only"]) == 2
    assert "empty" in _one_line(capsys, "advisor")


def test_the_documented_variables_are_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Issue 21 (10): each of these made every command exit 2 ("names no 'advisor' setting")."""
    from advisor.settings import AdvisorSettings
    from router.settings import RouterSettings

    font = tmp_path / "font.ttf"
    font.write_bytes(b"\x00\x01\x00\x00")
    monkeypatch.setenv("MAGI_ADVISOR_FONT", str(font))
    monkeypatch.setenv("MAGI_ADVISOR_SCRIPTED_LATENCY_S", "0.25")
    monkeypatch.setenv("MAGI_ROUTER_SCRIPTED_LATENCY_S", "0.5")
    settings = load_settings()
    assert AdvisorSettings.of(settings).font == font and AdvisorSettings.of(settings).scripted_latency_s == 0.25
    assert RouterSettings.of(settings).scripted_latency_s == 0.5
    monkeypatch.setenv("MAGI_ROUTER_SCRIPTED_LATENCY_S", "-1")
    with pytest.raises(Exception, match=r"router\.scripted_latency_s"):
        load_settings()


# --- items 4, 5: session namespaces and limits ----------------------------------------------------

POLICY = SessionPolicy(ttl_s=3600)


def _say(text: str) -> Any:
    from sessions.models import HistoryEntry

    def change(state: SessionState, now: Any) -> int:
        state.history.append(HistoryEntry(role="user", text=text, timestamp=now))
        return len(state.history)

    return change


def test_a_squatted_id_does_not_lock_out_another_client(tmp_path: Path) -> None:
    """Issue 21 (4): key B creating ``visitor-9`` first made it 404 for key A forever."""
    repo = SessionRepository(Store(f"sqlite:///{tmp_path / 'store.db'}"))
    alice, bob = owner_of("key-a"), owner_of("key-b")
    update_session(repo, session_key("router", bob, "visitor-9"), bob, _say("squat"), POLICY)
    update_session(repo, session_key("router", alice, "visitor-9"), alice, _say("mine"), POLICY)
    mine = read_session(repo, session_key("router", alice, "visitor-9"), alice, POLICY)
    assert [e.text for e in mine.history] == ["mine"]
    keys = {session_key(s, o, "visitor-9") for s in ("router", "advisor") for o in (alice, bob, LOCAL_OWNER)}
    assert len(keys) == 6 and not any("visitor-9" in k for k in keys)


def test_a_client_holds_at_most_its_share_of_live_sessions(tmp_path: Path) -> None:
    repo = SessionRepository(Store(f"sqlite:///{tmp_path / 'store.db'}"))
    owner, other = owner_of("key-c"), owner_of("key-d")
    for number in range(3):
        key = session_key("router", owner, f"s{number}")
        admit_session(repo, key, owner, "router", 3, POLICY)
        update_session(repo, key, owner, _say("hi"), POLICY)
    with pytest.raises(TooManySessionsError, match=r"sessions\.max_per_client"):
        admit_session(repo, session_key("router", owner, "s3"), owner, "router", 3, POLICY)
    admit_session(repo, session_key("router", owner, "s0"), owner, "router", 3, POLICY)  # its own: fine
    admit_session(repo, session_key("router", other, "s3"), other, "router", 3, POLICY)  # another client
    admit_session(repo, session_key("advisor", owner, "s3"), owner, "advisor", 3, POLICY)  # another system
    stale = repo.load(session_key("router", owner, "s1"))
    assert stale is not None
    aged = stale.model_copy(update={"updated_at": utcnow() - timedelta(hours=2), "revision": stale.revision + 1})
    assert repo.save(aged, stale)
    admit_session(repo, session_key("router", owner, "s3"), owner, "router", 3, POLICY)  # expired ones free a place


def test_in_flight_limit_per_client() -> None:
    from deployments.security import ClientBusyError, InFlightLimit

    limit = InFlightLimit(2)
    with limit.slot("a"), limit.slot("a"):
        with pytest.raises(ClientBusyError, match=r"serve\.client_in_flight"), limit.slot("a"):
            pass
        with limit.slot("b"):
            assert limit.in_flight("a") == 2 and limit.in_flight("b") == 1
    assert limit.in_flight("a") == 0
