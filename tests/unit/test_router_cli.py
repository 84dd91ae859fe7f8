"""``magi route`` in a subprocess, without Ray: single queries, sessions in the store, batches, errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

MAGI = [sys.executable, "-m", "cli.main"]


def magi(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MAGI, *args], capture_output=True, text=True, timeout=120, env=dict(os.environ), cwd=cwd)


def test_single_query_prints_the_route_result(tmp_path: Path) -> None:
    done = magi("route", "Wi-Fiは何時まで使えますか", "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert (body["agent"], body["requestType"], body["language"]) == ("BusinessInfoAgent", "hours", "ja")
    assert "debugInfo" in body and "languageDetection" in body["debugInfo"]


def test_session_context_survives_between_processes(tmp_path: Path) -> None:
    first = magi("route", "--session", "visitor-1", "--format", "json", "料金はいくらですか？", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    second = magi("route", "--session", "visitor-1", "--format", "json", "土日は？", cwd=tmp_path)
    assert json.loads(second.stdout)["requestType"] == "price"
    fresh = magi("route", "--session", "visitor-2", "--format", "json", "土日は？", cwd=tmp_path)
    assert json.loads(fresh.stdout)["requestType"] is None


def test_batch_routes_in_order_one_json_line_each(tmp_path: Path) -> None:
    lines = [
        {"query": "エンジニアカフェの営業時間は？", "sessionId": "a"},
        {"query": "Is there Wi-Fi?", "sessionId": "b"},
        {"query": "日曜日は？", "sessionId": "a"},
        {"query": "and on Sundays?", "sessionId": "b"},
    ]
    batch = tmp_path / "queries.jsonl"
    batch.write_text("\n".join(json.dumps(line, ensure_ascii=False) for line in lines) + "\n", encoding="utf-8")
    done = magi("route", "--batch", str(batch), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    results = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["requestType"] for r in results] == ["hours", "wifi", "hours", "wifi"]
    assert [r["agent"] for r in results] == ["BusinessInfoAgent", "FacilityAgent", "BusinessInfoAgent", "FacilityAgent"]


def test_bad_input_exits_2_with_where(tmp_path: Path) -> None:
    batch = tmp_path / "bad.jsonl"
    batch.write_text('{"query": "営業時間", "sessionId": "ok"}\n{"query": "x", "sessionId": "no spaces"}\n')
    done = magi("route", "--batch", str(batch), cwd=tmp_path)
    assert done.returncode == 2 and f"{batch}:2" in done.stderr and done.stdout == ""
    too_long = magi("route", "あ" * 600, cwd=tmp_path)
    assert too_long.returncode == 2 and "keep it under 500" in too_long.stderr
    neither = magi("route", cwd=tmp_path)
    assert neither.returncode == 2 and "QUERY or --batch" in neither.stderr
    bad_threshold = magi("route", "hi", "--threshold", "3", cwd=tmp_path)
    assert bad_threshold.returncode == 2 and "threshold" in bad_threshold.stderr
