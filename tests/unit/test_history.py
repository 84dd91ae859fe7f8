"""Kept results (core/history.py) on the real store: owned rows, newest first, pages cut by a cursor that
a row added meanwhile does not shift; and ``magi history`` listing and reopening what ``magi ask`` kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli.main import main
from core.errors import InputError
from core.history import History
from core.settings import load_settings
from core.store import open_store
from magi.history import TABLE, decisions


@pytest.fixture
def history(tmp_path: Path) -> History:
    return decisions(open_store(load_settings(overrides={"data_dir": tmp_path})))


def test_pages_are_newest_first_and_owned(history: History) -> None:
    for n in range(5):
        history.add("alice", f"question {n}", "APPROVE", {"n": n}, {"answer": n})
    history.add("bob", "bob's question", "DENY", {}, {"answer": "bob"})
    first = history.page("alice", limit=2)
    assert [r.title for r in first.items] == ["question 4", "question 3"] and first.next_cursor
    history.add("alice", "question 5", "DENY", {}, {})  # added while paging: the next page does not shift
    second = history.page("alice", limit=2, cursor=first.next_cursor)
    assert [r.title for r in second.items] == ["question 2", "question 1"]
    last = history.page("alice", limit=2, cursor=second.next_cursor)
    assert [r.title for r in last.items] == ["question 0"] and last.next_cursor is None
    assert [r.title for r in history.page("bob").items] == ["bob's question"]
    record = first.items[0]
    assert history.get("alice", record.id) == (record, {"answer": 4})
    assert history.get("bob", record.id) is None  # another owner's row: the same as none at all
    assert history.get("alice", "0" * 32) is None


def test_bad_cursors_and_limits_say_what_to_do(history: History) -> None:
    with pytest.raises(InputError, match="omit it to start from the newest"):
        history.page("alice", cursor="bm90IGEgY3Vyc29y")
    with pytest.raises(InputError, match="limit 0: give 1 to 100"):
        history.page("alice", limit=0)
    with pytest.raises(ValueError, match="lower-case"):
        History(history.store, "x; DROP TABLE y")
    assert TABLE == "magi_decisions"


def test_magi_history_lists_and_reopens_what_ask_kept(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MAGI_LLM_PROVIDER", "python:magi.scripted:respond")
    assert main(["history", "council"]) == 0
    assert "まだ保存された判定はありません" in capsys.readouterr().out
    printed = []
    for question, script in (
        ("週休3日制を導入すべきか", "melchior=APPROVE balthasar=APPROVE casper=DENY"),
        ("来期の採用を二倍にすべきか", "melchior=APPROVE balthasar=CONDITIONAL casper=DENY"),
    ):
        main(["ask", "--in-process", "--seed", "5", "--rounds", "0", f"{question}\nmagi-script: {script}"])
        printed.append(capsys.readouterr().out)
    assert main(["history", "council"]) == 0
    listing = capsys.readouterr().out
    assert listing.startswith("# 合議の履歴（新しい順）")
    lines = [line for line in listing.splitlines() if line.startswith("| ") and "番号" not in line]
    assert lines[0].startswith("| 1 |") and "来期の採用を二倍にすべきか | 意見が割れました" in lines[0]
    assert lines[1].startswith("| 2 |") and "週休3日制を導入すべきか | 承認 |" in lines[1]
    assert main(["history", "council", "2"]) == 0
    assert capsys.readouterr().out == printed[0]  # reopened exactly as it was answered
    assert main(["history", "council", "--format", "json", "--limit", "1"]) == 0
    page = json.loads(capsys.readouterr().out)
    assert len(page["items"]) == 1 and page["nextCursor"]
    assert main(["history", "council", "3"]) == 2
    assert "there are only 2 kept" in capsys.readouterr().err
