"""`magi critic` refuses bad input and options with one line and exit 2 before any Ray starts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli.main import main
from core.resources import data_path

IDEAS = str(data_path("critic", "examples", "ideas.json"))


def one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0, err
    assert err.startswith("magi critic: error: ")
    return err


@pytest.fixture(autouse=True)
def scripted_llm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAGI_LLM_PROVIDER", "python:critic.scripted:judge")


def test_a_missing_file_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["critic", str(tmp_path / "nope.json")]) == 2
    assert "cannot read ideas file" in one_line_error(capsys)


def test_not_json_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "ideas.json"
    path.write_text("{ideas: oops", encoding="utf-8")
    assert main(["critic", str(path)]) == 2
    assert "is not valid JSON" in one_line_error(capsys)


def test_too_many_ideas_is_exit_2_naming_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "ideas.json"
    ideas = [{"id": f"i{n}", "title": "t", "description": "d"} for n in range(11)]
    path.write_text(json.dumps({"ideas": ideas}), encoding="utf-8")
    assert main(["critic", str(path)]) == 2
    assert "ideas: List should have at most 10 items" in one_line_error(capsys)


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--weights", "70:40"], "option '--weights': '70:40' has market and synergy weights that do not add up"),
        (["--weights", "heavy"], "option '--weights': 'heavy' is not MARKET:SYNERGY"),
        (["--market-weight", "120"], "critic.market_weight from command-line option '--market-weight'"),
        (["--samples", "0"], "--samples"),
        (["--timeout", "-1"], "--timeout"),
        (["--industry", "space"], "no industry profile 'space'"),
    ],
)
def test_bad_options_are_exit_2(option: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["critic", IDEAS, *option]) == 2
    assert message in one_line_error(capsys)


def test_no_llm_is_exit_5_before_any_work(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("MAGI_LLM_PROVIDER")
    assert main(["critic", IDEAS]) == 5
    assert "needs an LLM" in one_line_error(capsys)
