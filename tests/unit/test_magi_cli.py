"""`magi ask` end to end in process (the sages in this process, the shipped scripted LLM): exit codes,
prompt sources, JSON fields, --runs, and `magi --help` with and without the sdd plugin."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from cli.main import main

SCRIPT = "magi-script: "


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAGI_LLM_PROVIDER", "python:magi.scripted:respond")


def ask_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["ask", "--in-process", "--format", "json", *args])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else {}


@pytest.mark.parametrize(
    ("votes", "decision", "code"),
    [
        ("melchior=APPROVE balthasar=APPROVE casper=DENY", "APPROVE", 0),
        ("melchior=DENY balthasar=DENY casper=APPROVE", "DENY", 1),
        ("melchior=APPROVE balthasar=CONDITIONAL casper=DENY", "CONDITIONAL", 3),
        ("melchior=APPROVE,fail@voting balthasar=DENY,invalid@voting casper=APPROVE", "NO_DECISION", 4),
    ],
)
def test_exit_code_per_decision(
    scripted: None, capsys: pytest.CaptureFixture[str], votes: str, decision: str, code: int
) -> None:
    exit_code, data = ask_json(capsys, f"Launch the beta?\n{SCRIPT}{votes}")
    assert exit_code == code
    assert data["decision"] == decision and data["exitCode"] == code
    for key in ("votes", "conditions", "thinking", "debate", "conformity", "failures", "usage", "timings", "dissent"):
        assert key in data
    assert {v["sage"] for v in data["votes"]} == {"melchior", "balthasar", "casper"}
    assert "blind" in data["votes"][0] and "final" in data["votes"][0]


def test_bad_input_and_settings_exit_2(
    scripted: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert main(["ask", "--in-process", "   "]) == 2
    assert "empty" in capsys.readouterr().err
    assert main(["ask", "--in-process", "--rounds", "-1", "x"]) == 2
    assert "rounds" in capsys.readouterr().err
    assert main(["ask", "--in-process", "x", "--file", str(tmp_path / "q.txt")]) == 2
    assert "give the request once" in capsys.readouterr().err
    assert main(["ask", "--in-process", "--file", str(tmp_path / "missing.txt")]) == 2
    monkeypatch.delenv("MAGI_LLM_PROVIDER")
    assert main(["ask", "--in-process", "x"]) == 5  # no LLM: one exit code for every command, apart from 0-4
    assert "needs an LLM" in capsys.readouterr().err


def test_prompt_from_stdin_and_file(
    scripted: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(f"From stdin?\n{SCRIPT}melchior=DENY balthasar=DENY casper=DENY"))
    code, data = ask_json(capsys, "-")
    assert code == 1 and data["question"].startswith("From stdin?")
    path = tmp_path / "q.md"
    path.write_text(f"From a file?\n{SCRIPT}melchior=APPROVE balthasar=APPROVE casper=APPROVE", encoding="utf-8")
    code, data = ask_json(capsys, "--file", str(path))
    assert code == 0 and data["question"].startswith("From a file?")
    assert data["stoppedEarly"] == "the blind votes were unanimous"


def test_markdown_is_the_default(scripted: None, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["ask", "--in-process", f"Go?\n{SCRIPT}melchior=APPROVE balthasar=CONDITIONAL casper=DENY"])
    out = capsys.readouterr().out
    assert code == 3
    assert out.startswith("# MAGI decision: Split: no majority")  # 1-1-1 is no conditional approval
    for heading in ("## Why", "## Votes", "## Conditions", "## Thinking (independently)", "## Debate round 1"):
        assert heading in out
    flipped = f"Go?\n{SCRIPT}melchior=APPROVE balthasar=DENY casper=APPROVE,DENY,silent"
    assert main(["ask", "--in-process", flipped]) == 1
    out = capsys.readouterr().out
    assert "| CASPER-3 | approve (" in out and "⚠ changed without a new argument" in out


def test_runs_report_distribution_and_flip_rate(scripted: None, capsys: pytest.CaptureFixture[str]) -> None:
    code, data = ask_json(capsys, "--runs", "6", "--seed", "100", "Hire two more engineers?")
    assert data["runs"] == 6 and sum(data["distribution"].values()) == 6
    assert data["seeds"] == list(range(100, 106))
    assert 0 <= data["flipRate"] <= 1
    top = max(data["distribution"].values())
    if data["decision"] == "NO_MAJORITY":  # no outcome of more than half of the runs
        assert top <= 3 and data["majorityCount"] == 0
    else:
        assert data["distribution"][data["decision"]] == top == data["majorityCount"] >= 4
    codes = {"APPROVE": 0, "DENY": 1, "CONDITIONAL": 3, "SPLIT": 3, "NO_DECISION": 4, "NO_MAJORITY": 4}
    assert code == codes[data["decision"]]
    assert len({d["id"] for d in data["deliberations"]}) == 6


def test_help_lists_ask_and_spec_unless_sdd_is_disabled(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert all(name in out for name in ("ask", "spec", "research", "doctor", "serve"))
    monkeypatch.setenv("MAGI_COUNCIL_DISABLED_PLUGINS", "sdd")
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert " ask " in out and " spec " not in out


def test_flags_map_onto_the_council_section_and_per_sage_models(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cli.council import council_settings
    from cli.main import build_parser
    from core.errors import ConfigError
    from core.llm import resolve_role
    from magi.settings import CouncilSettings

    config = tmp_path / "m.yaml"
    config.write_text("llm:\n  models:\n    default: m-default\n    magi.casper: m-casper\n", encoding="utf-8")
    argv = ["ask", "q", "--config", str(config), "--rounds", "0", "--threshold", "unanimous", "--timeout", "5"]
    args = build_parser().parse_args([*argv, "--quorum", "3", "--fixed-order", "--model-melchior", "m-melchior"])
    settings = council_settings(args)
    cfg = CouncilSettings.of(settings)
    assert (cfg.rounds, cfg.threshold, cfg.timeout_s, cfg.quorum, cfg.shuffle_peers) == (0, "unanimous", 5, 3, False)
    assert cfg.anonymous is True  # a switch not given keeps the configured value
    assert resolve_role(settings.llm, "magi.melchior").model == "m-melchior"
    assert resolve_role(settings.llm, "magi.casper").model == "m-casper"  # configured models are kept
    assert resolve_role(settings.llm, "magi.balthasar").model == "m-default"
    with pytest.raises(ConfigError, match=r"council\.rounds from command-line option '--rounds'"):
        council_settings(build_parser().parse_args(["ask", "q", "--rounds", "11"]))


def test_progress_lines_follow_the_phases(capsys: pytest.CaptureFixture[str]) -> None:
    from cli.council import CouncilProgress
    from magi.events import CouncilDecided, CouncilEvent, PhaseStarted, SageAnswered

    progress = CouncilProgress(enabled=True)
    events: tuple[CouncilEvent, ...] = (
        PhaseStarted(phase="thinking"),
        SageAnswered(sage="melchior", phase="thinking", ok=True),
        SageAnswered(sage="casper", phase="thinking", ok=False),
        PhaseStarted(phase="debate", round=2),
        CouncilDecided(decision="DENY"),
    )
    for event in events:
        progress(event)
    err = capsys.readouterr().err
    assert "▶ thinking" in err and "MELCHIOR ✓" in err and "CASPER ✗ failed" in err
    assert "▶ debate round 2" in err and "decision: DENY" in err
    CouncilProgress(enabled=False)(PhaseStarted(phase="voting"))
    assert capsys.readouterr().err == ""


def test_plugin_option_loads_the_file_and_a_bad_one_is_exit_2_with_its_line(
    scripted: None, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    good = tmp_path / "strict.yaml"
    good.write_text("name: strict\nversion: 1\ndescription: d\nagent_overrides: {melchior: Cite numbers.}\n")
    assert main(["--plugin", str(good), "ask", "--in-process", f"Go?\n{SCRIPT}melchior=APPROVE balthasar=APPROVE"]) == 0
    capsys.readouterr()
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: strict\nversion: 1\ndescription: d\nbridge:\n  run: {argv: 'rm -rf /'}\n")
    assert main(["--plugin", str(bad), "ask", "--in-process", "Go?"]) == 2
    err = capsys.readouterr().err
    assert f"{bad}: line 5, column" in err and "bridge.run.argv" in err and "never a shell string" in err
