"""The example input files the docs name are shipped and work as the docs use them (issue 37, 8): each
documented command runs in this process on its file, with the shipped scripted models."""

from __future__ import annotations

import json

import pytest

from cli.main import main
from core.resources import data_path


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> object:
    assert main([*argv, "--format", "json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def test_the_advisor_tools_run_on_their_examples(capsys: pytest.CaptureFixture[str]) -> None:
    examples = data_path("advisor", "examples")
    cost = run_json(capsys, "tool", "calculate_cost_impact", "--input", str(examples / "cost.json"))
    assert isinstance(cost, dict) and cost["new_total_cost"] == "2818750" and cost["files"]  # the docs' example
    chart = run_json(capsys, "tool", "generate_chart", "--input", str(examples / "chart.json"))
    assert isinstance(chart, dict) and chart["files"][0]["name"].startswith("原材料価格指数の推移（例）_")


def test_the_council_asks_the_example_question(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MAGI_LLM_PROVIDER", "python:magi.scripted:respond")
    question = str(data_path("magi", "examples", "question.md"))
    code = main(["ask", "--in-process", "--file", question, "--runs", "2", "--seed", "100", "--rounds", "0"])
    out = capsys.readouterr().out
    assert code in (0, 1, 3, 4) and out.startswith("# MAGIの判定（2回の審議）")


def test_the_router_routes_the_example_batch(capsys: pytest.CaptureFixture[str]) -> None:
    batch = str(data_path("router", "examples", "queries.jsonl"))
    assert main(["route", "--batch", batch]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(lines) == 4 and all("requestType" in line for line in lines)
