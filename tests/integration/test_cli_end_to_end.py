"""`magi` as a user runs it: real subprocesses that start their own local Ray."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from research.result import ConsensusResearchResult

REPO = Path(__file__).resolve().parents[2]


def magi(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cli.main", *args],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
    )


def test_research_writes_reports_and_prints_where(tmp_path: Path) -> None:
    out = tmp_path / "report"
    result = magi("research", "中小企業の価格転嫁の現状", "--out", str(out), "--format", "json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["report"] == str(out / "report.md") and summary["sources"] >= 10
    assert (summary["llmCalls"], summary["llmCostUsd"]) == (0, 0.0)  # no LLM configured: extractive summary
    parsed = ConsensusResearchResult.model_validate_json((out / "report.json").read_text(encoding="utf-8"))
    assert len({s.url for s in parsed.sources}) >= 10
    assert (out / "report.md").read_text(encoding="utf-8").startswith("# 中小企業の価格転嫁の現状")
    runs = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]);"
            "print(c.execute('select status from research_runs').fetchall())",
            str(Path(os.environ["MAGI_DATA_DIR"]) / "magi.sqlite3"),
        ],
        capture_output=True,
        text=True,
    )
    assert "completed" in runs.stdout


def test_research_without_network_is_one_line_error(tmp_path: Path) -> None:
    out = tmp_path / "failed"
    result = magi(
        "research",
        "価格転嫁",
        "--provider",
        "ddgs",
        "--agents",
        "1",
        "--out",
        str(out),
        cwd=tmp_path,
        env={"DDGS_PROXY": "http://127.0.0.1:9"},
    )  # fails at once, on a machine with a network too
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert "ddgs search" in lines[0] and "--corpus" in lines[0] and str(out / "partial.json") in lines[0]
    partial = json.loads((out / "partial.json").read_text(encoding="utf-8"))
    assert len(partial["failedAttempts"]) == 2 and partial["failedAttempts"][0]["failures"][0]["lastStage"]


def test_doctor_llm_with_python_provider(tmp_path: Path) -> None:
    (tmp_path / "tiny_model.py").write_text(
        "def reply(request):\n    return 'ok from ' + request.messages[-1].content\n", encoding="utf-8"
    )
    result = magi(
        "doctor",
        "--llm",
        "--format",
        "json",
        cwd=tmp_path,
        env={
            "MAGI_LLM_PROVIDER": f"python:{tmp_path / 'tiny_model.py'}:reply",
            "MAGI_LLM_ROLES": json.dumps({"magi.casper": {"provider": "python:core.llm.testing:echo", "model": "e"}}),
        },
    )
    assert result.returncode == 0, result.stdout + result.stderr
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    assert checks["llm:default"]["status"] == "ok" and "ok from" in checks["llm:default"]["detail"]
    casper = checks["llm:magi.casper"]  # each configured role is asked once, on its own provider
    assert (
        casper["status"] == "ok"
        and "python:core.llm.testing:echo, model e answered 'Reply with: ok'" in casper["detail"]
    )
    assert checks["ray"]["status"] == "ok" and checks["ginza"]["status"] == "ok"
    assert checks["search:local"]["status"] == "ok"
