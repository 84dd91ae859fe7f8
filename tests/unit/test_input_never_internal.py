"""Issue 40 (5) at the command line: each input that ended in "internal error" (or a hang) is now a
refusal that names the field and what to do, exit 2. The same inputs over HTTP are 4xx
(tests/integration/test_serve_fuzz.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cli.main import main

LETTER_FIELDS = {"effective_date": "2027年1月1日", "increase_rate": "10%", "reply_by": "2026年12月15日"}
QUOTE_FIELDS = {"valid_until": "2026年12月31日", "delivery": "ご注文後2週間"}
MATERIALS_FIELDS = {"cost_increase_rate": "9%", "proposal": "2027年1月納品分より製品単価を10%改定"}


def document(kind: str, fmt: str, fields: dict[str, str], **data: Any) -> dict[str, Any]:
    return {
        "document_type": kind,
        "format": fmt,
        "data": {"recipient": "丸の内精機株式会社 御中", "sender": "有限会社大手町工業", "fields": fields, **data},
    }


RAGGED = {"columns": ["a", "b"], "rows": [[1, 2, 3]]}
HOSTILE_DOCUMENTS = {
    "huge unit price": (
        document("quotation", "pdf", QUOTE_FIELDS, items=[{"name": "部品", "unit_price": 1e28}]),
        "単価",
    ),
    "control character in docx": (document("request_letter", "docx", LETTER_FIELDS, body=["前文\u0001後文"]), "U+0001"),
    "control character in xlsx": (document("cost_breakdown", "xlsx", {}, body=["費目\u0007"]), "U+0007"),
    "control character in a cell": (
        document("negotiation_materials", "pdf", MATERIALS_FIELDS, tables=[{"columns": ["a"], "rows": [["\u001b"]]}]),
        "U+001B",
    ),
    "ragged table row": (
        document(
            "negotiation_materials", "pdf", MATERIALS_FIELDS, tables=[{"columns": ["a", "b"], "rows": [[1, 2, 3]]}]
        ),
        "列は2つ",
    ),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_DOCUMENTS))
def test_generate_document_refuses_what_no_document_can_hold(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``magi tool generate_document`` ended these with "internal error: InvalidOperation / ValueError /
    IllegalCharacterError / IndexError"."""
    body, named = HOSTILE_DOCUMENTS[case]
    given = tmp_path / "input.json"
    given.write_text(json.dumps(body, ensure_ascii=False), encoding="utf-8")
    assert main(["tool", "generate_document", "--input", str(given)]) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "internal error" not in err and named in err, err


def test_a_document_within_the_bounds_is_still_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    body = document(
        "negotiation_materials",
        "pdf",
        MATERIALS_FIELDS,
        body=["改行\nとタブ\tは書けます"],
        tables=[{"columns": ["費目", "金額"], "rows": [["材料費", 1200000], ["労務費"]]}],
    )
    given = tmp_path / "input.json"
    given.write_text(json.dumps(body, ensure_ascii=False), encoding="utf-8")
    assert main(["tool", "generate_document", "--input", str(given), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["files"]


def test_magi_critic_on_a_pipe_nobody_writes_to_stops_at_once(tmp_path: Path) -> None:
    """``magi critic FIFO`` waited for a writer forever."""
    pipe = tmp_path / "ideas.json"
    os.mkfifo(pipe)
    done = subprocess.run(
        [sys.executable, "-m", "cli.main", "critic", str(pipe)],
        capture_output=True,
        text=True,
        timeout=120,  # a guard against the old hang, not a speed figure
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert done.returncode == 2 and "named pipe nobody writes to" in done.stderr, done.stderr


def test_web_search_without_a_provider_is_an_error_not_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    given = tmp_path / "input.json"
    given.write_text(json.dumps({"query": "価格転嫁"}, ensure_ascii=False), encoding="utf-8")
    assert main(["tool", "web_search", "--input", str(given)]) == 2
    err = capsys.readouterr().err
    assert "search.provider" in err and "internal error" not in err
