"""Artifacts on a local folder, on fsspec's memory filesystem and in the store (SQLite, PostgreSQL: what a
cluster with a ``store_url`` and no ``artifacts_url`` uses): the same suite runs on each."""

from __future__ import annotations

import os
import pickle
import uuid
from pathlib import Path

import pytest

from core.errors import ConfigError, InputError
from core.settings import Settings
from core.storage import PARTIAL_PREFIX, Artifacts, StoredArtifacts, open_artifacts


@pytest.fixture(params=["local", "memory", "sqlite-store", "postgresql-store"])
def artifacts(request: pytest.FixtureRequest, tmp_path: Path) -> Artifacts:
    if request.param == "local":
        return open_artifacts(Settings(data_dir=tmp_path / "data"))
    if request.param.endswith("-store"):
        sqlite = f"sqlite:///{tmp_path / 'magi.sqlite3'}"
        store_url = sqlite if request.param == "sqlite-store" else str(request.getfixturevalue("postgres_url"))
        found = open_artifacts(Settings(data_dir=tmp_path / "unused", store_url=store_url))
        assert isinstance(found, StoredArtifacts)
        return found
    return open_artifacts(Settings(data_dir=tmp_path / "unused", artifacts_url=f"memory://t{uuid.uuid4().hex}"))


def test_in_the_store_files_written_before_in_the_folder_stay_readable(tmp_path: Path) -> None:
    """A cluster that set no artifacts_url kept its files in data_dir/artifacts; with the store holding
    them now, those are still read, listed and deleted, and new files go to the store."""
    folder = open_artifacts(Settings(data_dir=tmp_path))
    folder.put_text("advisor/s1/old.md", "earlier")
    store_url = f"sqlite:///{tmp_path / 'magi.sqlite3'}"
    stored = open_artifacts(Settings(data_dir=tmp_path, store_url=store_url))
    stored.put_text("advisor/s1/new.md", "now")
    assert stored.list("advisor/s1/") == ["advisor/s1/new.md", "advisor/s1/old.md"]
    assert stored.get_text("advisor/s1/old.md") == "earlier" and stored.exists("advisor/s1/old.md")
    assert not folder.exists("advisor/s1/new.md")  # not on a node's disk
    assert stored.delete("advisor/s1/old.md") and not folder.exists("advisor/s1/old.md")


def test_put_get_exists_delete(artifacts: Artifacts) -> None:
    url = artifacts.put_text("research/r1/report.md", "# 報告\n")
    assert url == artifacts.url_for("research/r1/report.md") and url.endswith("/research/r1/report.md")
    assert artifacts.exists("research/r1/report.md") and not artifacts.exists("research/r1")
    assert artifacts.get_text("research/r1/report.md") == "# 報告\n"
    artifacts.put_bytes("research/r1/report.md", b"v2")  # replaces
    assert artifacts.get_bytes("research/r1/report.md") == b"v2"
    assert artifacts.delete("research/r1/report.md") and not artifacts.delete("research/r1/report.md")
    assert not artifacts.exists("research/r1/report.md")
    with pytest.raises(InputError, match="does not exist"):
        artifacts.get_bytes("research/r1/report.md")


def test_list_by_prefix(artifacts: Artifacts) -> None:
    for key in ("research/r1/a.json", "research/r1/b.md", "research/r10/a.json", "magi/s1/x.txt", "top.txt"):
        artifacts.put_bytes(key, b"x")
    assert artifacts.list("research/r1/") == ["research/r1/a.json", "research/r1/b.md"]
    assert artifacts.list("research/r1") == ["research/r1/a.json", "research/r1/b.md", "research/r10/a.json"]
    assert artifacts.list("t") == ["top.txt"]
    assert len(artifacts.list()) == 5
    assert artifacts.list("nothing/here/") == []


@pytest.mark.parametrize(
    "key",
    [
        "/etc/passwd",
        "../up.txt",
        "a/../../b",
        "a//b",
        "./a",
        "C:/x",
        "a\\b",
        "",
        "s3://bucket/x",
        f"a/{PARTIAL_PREFIX}x",
    ],
)
def test_keys_stay_inside_the_root(artifacts: Artifacts, key: str) -> None:
    with pytest.raises(InputError, match="artifact key"):
        artifacts.put_bytes(key, b"x")
    with pytest.raises(InputError):
        artifacts.exists(key)


def test_a_bad_prefix_is_refused(artifacts: Artifacts) -> None:
    with pytest.raises(InputError, match="artifact prefix"):
        artifacts.list("../")


def test_a_pickled_store_sees_the_same_files(artifacts: Artifacts) -> None:
    artifacts.put_text("k.txt", "same")
    assert pickle.loads(pickle.dumps(artifacts)).get_text("k.txt") == "same"


def test_local_writes_are_atomic_and_leave_no_temporary_file(tmp_path: Path) -> None:
    store = open_artifacts(Settings(data_dir=tmp_path))
    store.put_bytes("a/b.bin", b"1" * 100_000)
    folder = tmp_path / "artifacts" / "a"
    assert os.listdir(folder) == ["b.bin"] and (folder / "b.bin").read_bytes() == b"1" * 100_000
    (folder / f"{PARTIAL_PREFIX}left-by-a-crash").write_bytes(b"half")
    assert store.list() == ["a/b.bin"]  # a crashed writer's leftover is not an artifact


def test_configuration_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="nosuch"):
        open_artifacts(Settings(artifacts_url="nosuch://bucket"))
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ConfigError, match="MAGI_DATA_DIR"):
        open_artifacts(Settings(data_dir=blocker))
