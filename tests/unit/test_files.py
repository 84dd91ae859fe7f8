"""Atomic writes leave the old or the new file; a killed writer's temp files can be swept up."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from core.files import atomic_write_text, remove_stale_temp_files


def test_atomic_write_replaces_whole_file_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "report.md"
    atomic_write_text(target, "old")
    atomic_write_text(target, "新しい")
    assert target.read_text(encoding="utf-8") == "新しい"
    assert sorted(p.name for p in target.parent.iterdir()) == ["report.md"]


def test_failed_write_keeps_old_content_and_removes_its_temp(tmp_path: Path) -> None:
    target = tmp_path / "report.md"
    atomic_write_text(target, "old")
    with pytest.raises(UnicodeEncodeError):
        atomic_write_text(target, "\ud800")  # a lone surrogate cannot be encoded
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]


def test_stale_temp_files_of_a_killed_writer_are_removed_and_nothing_else(tmp_path: Path) -> None:
    atomic_write_text(tmp_path / "report.md", "kept")
    (tmp_path / ".report.json.ab12cd.tmp").write_text("half")  # what SIGKILL mid-write leaves
    (tmp_path / "notes.tmp").write_text("a user's own file")  # not ours: no leading dot
    os.mkdir(tmp_path / ".cache.tmp")
    removed = remove_stale_temp_files(tmp_path)
    assert [p.name for p in removed] == [".report.json.ab12cd.tmp"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".cache.tmp", "notes.tmp", "report.md"]
    assert remove_stale_temp_files(tmp_path / "missing") == []
