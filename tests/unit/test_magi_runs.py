"""Several council runs reported as a distribution (issue 37, 1): one case per shape of the runs, end to
end through `magi ask --runs K` in process with the shipped scripted LLM, whose ``||`` alternatives give
each run its own votes. The JSON, the Markdown and the exit code must tell the same story."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cli.main import main
from core.messages import catalogue, leaks

SCRIPT = "magi-script: "
APPROVE = "melchior=APPROVE balthasar=APPROVE casper=DENY"
DENY = "melchior=DENY balthasar=DENY casper=APPROVE"
CONDITIONAL = "melchior=CONDITIONAL balthasar=CONDITIONAL casper=APPROVE"
SPLIT = "melchior=APPROVE balthasar=CONDITIONAL casper=DENY"  # no two agree: a split, not a conditional
# Japanese enough to outweigh the scripting line: the answer is written in the question's language
QUESTION = (
    "新製品を来月発売すべきか。品質検査はほぼ終わっているが、量産体制と販売店への説明がまだ十分ではない。"
    "競合他社は同じ時期に類似の製品を出すと見られており、発売を遅らせると市場での存在感を失うおそれがある。"
    "一方で初期不良が出れば回収費用と信用の低下は避けられず、経営への影響は小さくない。どう判断すべきか。"
)


@pytest.fixture(autouse=True)
def scripted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAGI_LLM_PROVIDER", "python:magi.scripted:respond")


def runs(capsys: pytest.CaptureFixture[str], alternatives: list[str], *, fmt: str = "json") -> tuple[int, Any]:
    """Three runs (seeds 9, 10, 11): run k takes alternative (8 + k) % n, so the list is rotated by 9 % n."""
    question = QUESTION + "\n" + SCRIPT + " || ".join(alternatives)
    code = main(["ask", "--in-process", "--format", fmt, "--rounds", "0", "--runs", "3", "--seed", "9", question])
    out = capsys.readouterr().out
    return code, json.loads(out) if fmt == "json" else out


def test_all_runs_equal_is_a_unanimous_distribution(capsys: pytest.CaptureFixture[str]) -> None:
    code, data = runs(capsys, [DENY])
    assert (code, data["decision"], data["exitCode"]) == (1, "DENY", 1)
    assert data["distribution"] == {"APPROVE": 0, "DENY": 3, "CONDITIONAL": 0, "SPLIT": 0, "NO_DECISION": 0}
    assert data["majorityCount"] == 3 and data["majorityNeeded"] == 2
    labelled = [(o["run"], o["seed"], o["outcome"]) for o in data["outcomes"]]
    assert labelled == [(1, 9, "DENY"), (2, 10, "DENY"), (3, 11, "DENY")]


def test_two_to_one_reports_the_majority_and_the_minority(capsys: pytest.CaptureFixture[str]) -> None:
    # seeds 9, 10, 11 over three alternatives take 0, 1, 2: APPROVE, APPROVE, DENY
    code, data = runs(capsys, [APPROVE, APPROVE, DENY])
    assert (code, data["decision"], data["majorityCount"]) == (0, "APPROVE", 2)
    assert data["distribution"]["APPROVE"] == 2 and data["distribution"]["DENY"] == 1
    assert [o["outcome"] for o in data["outcomes"]] == ["APPROVE", "APPROVE", "DENY"]
    assert [o["deliberationId"] for o in data["outcomes"]] == [d["id"] for d in data["deliberations"]]
    _, markdown = runs(capsys, [APPROVE, APPROVE, DENY], fmt="markdown")
    assert markdown.startswith("# MAGIの判定（3回の審議）: 承認\n")
    assert "3回中2回が「承認」で、過半数の審議が一致しました" in markdown
    assert "| 審議1 | 9 | 承認 |" in markdown and "| 審議3 | 11 | 否決 |" in markdown


def test_one_one_one_is_no_decision_never_the_largest_minority(capsys: pytest.CaptureFixture[str]) -> None:
    code, data = runs(capsys, [APPROVE, DENY, CONDITIONAL])
    assert (code, data["decision"], data["majorityCount"]) == (4, "NO_MAJORITY", 0)
    assert [o["outcome"] for o in data["outcomes"]] == ["APPROVE", "DENY", "CONDITIONAL"]
    assert sum(data["distribution"].values()) == 3
    _, markdown = runs(capsys, [APPROVE, DENY, CONDITIONAL], fmt="markdown")
    assert markdown.startswith("# MAGIの判定（3回の審議）: 判定なし（過半数の審議が一致しません）\n")
    assert "過半数（2回以上）の審議が一致した結論はありません" in markdown
    assert "一致率" not in markdown  # a 33 % "agreement" is no headline
    assert leaks(markdown, catalogue("magi")) == []


def test_splits_are_counted_as_splits_not_as_conditional_approvals(capsys: pytest.CaptureFixture[str]) -> None:
    # issue 37: one conditional and two splits were headlined 条件付き承認 with 条件付き承認 3
    code, data = runs(capsys, [SPLIT, CONDITIONAL, SPLIT])
    assert [o["outcome"] for o in data["outcomes"]] == ["SPLIT", "CONDITIONAL", "SPLIT"]
    assert [d["decision"] for d in data["deliberations"]] == ["CONDITIONAL"] * 3  # each run's own field as before
    assert data["distribution"]["SPLIT"] == 2 and data["distribution"]["CONDITIONAL"] == 1
    assert (code, data["decision"]) == (3, "SPLIT")
    _, markdown = runs(capsys, [SPLIT, CONDITIONAL, SPLIT], fmt="markdown")
    assert markdown.startswith("# MAGIの判定（3回の審議）: 意見が割れました（多数意見なし）\n")
    assert "意見割れ 2回" in markdown and "条件付き承認 1回" in markdown
    assert "条件付き承認 3" not in markdown
    code, data = runs(capsys, [SPLIT, CONDITIONAL, DENY])
    assert (code, data["decision"]) == (4, "NO_MAJORITY")  # one split, one conditional, one denial


def test_english_runs_read_in_english(capsys: pytest.CaptureFixture[str]) -> None:
    question = f"Ship it?\n{SCRIPT}{APPROVE} || {DENY} || {DENY}"
    code = main(["ask", "--in-process", "--rounds", "0", "--runs", "3", "--seed", "9", question])
    out = capsys.readouterr().out
    assert code == 1 and out.startswith("# MAGI decision over 3 runs: Denied\n")
    assert "- 2 of 3 runs came to denied: a majority" in out and "| run 1 | 9 | approved |" in out


def test_kept_runs_reopen_as_they_were_printed(capsys: pytest.CaptureFixture[str]) -> None:
    _, printed = runs(capsys, [SPLIT, CONDITIONAL, SPLIT], fmt="markdown")
    assert main(["history", "council", "1"]) == 0
    assert capsys.readouterr().out == printed
