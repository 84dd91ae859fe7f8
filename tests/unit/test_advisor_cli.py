"""``magi tool``, ``magi kb ingest`` and ``magi advisor``: outputs, and exit 2 naming the bad field."""

from __future__ import annotations

import json
import os
from datetime import timedelta
from pathlib import Path

import pytest

from cli.main import main
from tests.unit.test_advisor_cost import SPEC_INPUT


def write(path: Path, value: object) -> Path:
    path.write_text(json.dumps(value, ensure_ascii=False), encoding="utf-8")
    return path


def test_magi_tool_prints_the_output_as_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "tool",
                "calculate_cost_impact",
                "--input",
                str(write(tmp_path / "in.json", SPEC_INPUT)),
                "--format",
                "json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["new_total_cost"] == "2818750" and out["scenarios"]["standard"]["new_price"] == "3063859"


@pytest.mark.parametrize(
    ("name", "value", "field"),
    [
        ("calculate_cost_impact", {**SPEC_INPUT, "price_changes": {"fuel": 0.1}}, "price_changes.fuel"),
        ("web_search", {"query": 5}, "query"),
        ("generate_chart", {"data": {}, "chart_type": "pie", "title": "x"}, "chart_type"),
        ("search_knowledge_base", {"query": "手形", "top_k": 0}, "top_k"),
        ("generate_document", {"document_type": "invoice"}, "document_type"),
    ],
)
def test_bad_input_is_exit_2_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, value: object, field: str
) -> None:
    assert main(["tool", name, "--input", str(write(tmp_path / "in.json", value))]) == 2
    assert field in capsys.readouterr().err


def test_not_json_and_unknown_tools_are_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{", encoding="utf-8")
    assert main(["tool", "web_search", "--input", str(bad)]) == 2
    assert "not valid JSON" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main(["tool", "market_analysis", "--input", str(bad)])
    assert exit_info.value.code == 2


def test_simulate_negotiation_without_an_llm_says_how_to_configure_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    value = {
        "scenario": {"client_name": "A社", "negotiation_goal": "10%"},
        "opponent_persona": "logical",
        "user_response": "お願いします",
    }
    assert main(["tool", "simulate_negotiation", "--input", str(write(tmp_path / "in.json", value))]) == 5
    assert "llm.provider" in capsys.readouterr().err


def test_simulate_negotiation_scores_with_the_rubric(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MAGI_LLM_PROVIDER", "python:advisor.scripted:respond")
    value = {
        "scenario": {"client_name": "A社", "negotiation_goal": "10%の値上げ"},
        "opponent_persona": "aggressive",
        "user_response": "最低賃金が4%上がったため、労務費転嫁指針に沿って単価10%の改定をお願いします。",
        "previous_rounds": [
            {"round": 1, "user_response": "値上げをお願いします", "opponent_response": "無理です", "score": 40}
        ],
    }
    assert (
        main(["tool", "simulate_negotiation", "--input", str(write(tmp_path / "in.json", value)), "--format", "json"])
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    fb = out["feedback"]
    # The rubric in data/advisor/negotiation.yaml: logic 0.4, tone 0.3, evidence 0.3.
    assert fb["score"] == int(fb["logic_score"] * 0.4 + fb["tone_score"] * 0.3 + fb["evidence_usage_score"] * 0.3 + 0.5)
    assert out["round"] == 2 and out["continue"] is True and "他社" in out["opponent_response"]
    assert fb["evidence_usage_score"] > 50 and fb["strengths"]


def test_kb_ingest_and_advisor_turns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "note.txt").write_text("D社との取引では毎年10月に価格改定の協議をする。", encoding="utf-8")
    assert main(["kb", "ingest", str(docs), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["chunks"] == 1
    assert main(["kb", "ingest", str(tmp_path / "none")]) == 2
    capsys.readouterr()
    assert main(["advisor", "値上げの相談です"]) == 5  # no LLM: exit 5 before any work
    assert "MAGI_LLM_PROVIDER" in capsys.readouterr().err
    monkeypatch.setenv("MAGI_LLM_PROVIDER", "python:advisor.scripted:respond")
    assert main(["advisor", "資金繰りが不安です", "--session", "c1"]) == 0
    assert main(["advisor", "値上げの試算をお願いします", "--session", "c1"]) == 0
    assert "--consent accept" in capsys.readouterr().out
    assert main(["advisor", "--consent", "accept", "--session", "c1", "--format", "json"]) == 0
    events = json.loads(capsys.readouterr().out)["events"]
    assert events[-1]["mode"] == "mode2" and events[-1]["files"][0]["type"] == "excel"
    assert main(["advisor", "--session", "c1"]) == 2
    assert main(["advisor", "x", "--session", "../etc"]) == 2


def test_purge_removes_old_advisor_sessions_and_their_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from advisor.conversation import SESSION_NAMESPACE
    from advisor.retention import purge
    from core.settings import load_settings
    from core.store import open_store
    from sessions.ids import LOCAL_OWNER, session_key
    from sessions.models import SessionState
    from sessions.store import SessionRepository, utcnow

    monkeypatch.setenv("MAGI_LLM_PROVIDER", "python:advisor.scripted:respond")
    assert main(["advisor", "値上げの試算をお願いします", "--session", "old"]) == 0
    assert main(["advisor", "値上げの試算をお願いします", "--session", "new"]) == 0
    settings = load_settings(None, {})
    repo = SessionRepository(open_store(settings))
    old, new = (session_key(SESSION_NAMESPACE, LOCAL_OWNER, name) for name in ("old", "new"))
    stale = repo.load(old)
    assert stale is not None
    aged = stale.model_copy(update={"updated_at": utcnow() - timedelta(hours=25), "revision": stale.revision + 1})
    assert repo.save(aged, stale)
    other = SessionState.new("router-s", "", utcnow() - timedelta(hours=30))  # another system's session
    assert repo.save(other, None)
    artifacts = Path(os.environ["MAGI_DATA_DIR"]) / "artifacts" / "advisor"
    assert (artifacts / old).is_dir() and (artifacts / new).is_dir()
    report = purge(settings)
    assert report.sessions == [old] and report.files == 1
    assert repo.load(old) is None and repo.load(new) is not None and repo.load("router-s") is not None
    assert not list((artifacts / old).glob("*")) and list((artifacts / new).glob("*"))


def test_magi_tool_session_records_the_result_for_later_tools(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 24: a cost table computed with ``--session`` is there for the letter that embeds it."""
    import io

    from docx import Document

    assert (
        main(
            ["tool", "calculate_cost_impact", "--input", str(write(tmp_path / "c.json", SPEC_INPUT)), "--session", "s1"]
        )
        == 0
    )
    capsys.readouterr()
    letter = {
        "document_type": "request_letter",
        "format": "docx",
        "data": {
            "recipient": "株式会社A 購買部 御中",
            "sender": "山田製作所",
            "fields": {"increase_rate": "0.1275", "effective_date": "2027年1月1日", "reply_by": "2026年12月15日"},
        },
        "include_cost_table": True,
    }
    args = ["tool", "generate_document", "--input", str(write(tmp_path / "d.json", letter)), "--session", "s1"]
    assert main([*args, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["audience"] == "external"
    doc = Document(io.BytesIO(Path(out["files"][0]["url"].removeprefix("file://")).read_bytes()))
    text = "\n".join(p.text for p in doc.paragraphs) + "\n".join(
        c.text for t in doc.tables for r in t.rows for c in r.cells
    )
    assert "12.75%改定" in text and "材料費" in text and "2,818,750円" in text and "material_cost" not in text
    # The same letter without the session has no cost table to embed.
    assert main(["tool", "generate_document", "--input", str(tmp_path / "d.json")]) == 2
    assert "no calculate_cost_impact result" in capsys.readouterr().err


def test_magi_tool_schema_lists_the_input_fields(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tool", "generate_document", "--schema", "--format", "json"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert "document_type" in schema["properties"] and "audience" in schema["properties"]
    assert "effective_date(適用開始日)" in json.dumps(schema, ensure_ascii=False)  # the template's fields
    assert main(["tool", "generate_document"]) == 2
    assert "--schema" in capsys.readouterr().err


def test_the_font_named_by_magi_advisor_font_is_used(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    from core.fonts import find_japanese_font

    found = find_japanese_font(None, truetype_only=True)
    assert found is not None, "the test machine has IPAex Gothic (.ci/run installs it)"
    own = Path(shutil.copy(found, tmp_path / "my-font.ttf"))
    chart = {"data": {"categories": [{"label": "材料費", "value": 1}]}, "chart_type": "bar", "title": "費目"}
    monkeypatch.setenv("MAGI_ADVISOR_FONT", str(own))
    assert main(["tool", "generate_chart", "--input", str(write(tmp_path / "g.json", chart)), "--format", "json"]) == 0
    capsys.readouterr()
    (tmp_path / "not-a-font.ttf").write_text("x", encoding="utf-8")
    monkeypatch.setenv("MAGI_ADVISOR_FONT", str(tmp_path / "not-a-font.ttf"))
    assert main(["tool", "generate_chart", "--input", str(tmp_path / "g.json")]) == 2
    assert "MAGI_ADVISOR_FONT" in capsys.readouterr().err
