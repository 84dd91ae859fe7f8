"""Old configs carry forward: renamed keys read as their successors, removed ones ignored, one warning
each, never an error at start (data/settings/renames.yaml)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.renames import KeyRename, key_renames, rename_table, section_renames
from core.settings import ROOT, Settings, _carry_forward, load_settings, registered_sections
from core.version import release, release_key
from sessions.settings import SessionsSettings

REPO = Path(__file__).resolve().parents[2]
# The keys the 0.3.0 round removed: the per-client session bound and the per-system idle times.
LAST_ROUNDS_CONFIG = """\
serve:
  client_sessions: 50
router:
  session_idle_s: 120
advisor:
  session_idle_s: 600
"""


def test_a_config_with_the_last_rounds_removed_keys_loads_with_warnings(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = tmp_path / "magi.yaml"
    config.write_text(LAST_ROUNDS_CONFIG)
    with caplog.at_level(logging.WARNING, logger="core.settings"):
        settings = load_settings(config)
    sessions = SessionsSettings.of(settings)
    assert sessions.max_per_client == 50 and sessions.idle_s == 120  # the first of two old names wins
    warned = [r.getMessage() for r in caplog.records]
    assert any("'serve.client_sessions' is now 'sessions.max_per_client'" in w for w in warned)
    assert any("'router.session_idle_s' is now 'sessions.idle_s'" in w for w in warned)
    assert any("'advisor.session_idle_s'" in w and "also set" in w for w in warned)
    assert all(str(config) in w for w in warned)  # each names where the old key was written
    assert len(settings.carried_forward) == 3


def test_the_environment_names_carry_forward_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAGI_SERVE_CLIENT_SESSIONS", "7")
    monkeypatch.setenv("MAGI_ADVISOR_SESSION_IDLE_S", "42")
    sessions = SessionsSettings.of(load_settings())
    assert (sessions.max_per_client, sessions.idle_s) == (7, 42)


def test_the_successor_wins_when_both_are_written(tmp_path: Path) -> None:
    config = tmp_path / "magi.yaml"
    config.write_text(LAST_ROUNDS_CONFIG + "sessions:\n  max_per_client: 9\n")
    settings = load_settings(config)
    assert SessionsSettings.of(settings).max_per_client == 9
    assert any("which is also set" in n and "max_per_client" in n for n in settings.carried_forward)


def test_an_old_value_is_still_validated_under_its_new_name(tmp_path: Path) -> None:
    config = tmp_path / "magi.yaml"
    config.write_text("serve:\n  client_sessions: 0\n")
    with pytest.raises(Exception, match=r"sessions\.max_per_client from key 'serve\.client_sessions'"):
        load_settings(config)


def test_a_removed_key_without_successor_is_ignored_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    table = {("router", "dropped_knob"): KeyRename(old="router.dropped_knob", new=None, since="0.4.0", why="unused")}
    layer = ({"router": {"dropped_knob": 3, "replicas": 2}}, {("router", "dropped_knob"): "key in magi.yaml"})
    with caplog.at_level(logging.WARNING, logger="core.settings"):
        values, origins = _carry_forward(layer, table)
    assert values == {"router": {"replicas": 2}} and ("router", "dropped_knob") not in origins
    assert "'router.dropped_knob' was removed in 0.4.0 (unused); it is ignored" in caplog.text


def test_the_magi_command_starts_with_an_old_config(tmp_path: Path) -> None:
    """The whole program, as an operator runs it after upgrading: warnings on stderr, exit 0."""
    (tmp_path / "magi.yaml").write_text(LAST_ROUNDS_CONFIG + "magi:\n  rounds: 2\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAGI_")}
    env["MAGI_DATA_DIR"] = str(tmp_path / "data")
    done = subprocess.run(
        [sys.executable, "-m", "cli.main", "--config", str(tmp_path / "magi.yaml"), "route", "料金はいくらですか"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    assert "serve.client_sessions" in done.stderr and "sessions.max_per_client" in done.stderr
    assert "session_idle_s" in done.stderr and "'magi' is now 'council'" in done.stderr
    assert "error" not in done.stderr.lower()


def _exists(dotted: str) -> bool:
    section, _, key = dotted.rpartition(".")
    if section == ROOT:
        return key in Settings.model_fields
    return section in registered_sections() and key in registered_sections()[section].model_fields


def test_every_successor_in_the_table_is_a_key_of_this_release() -> None:
    for entry in rename_table().keys:
        assert entry.new is None or _exists(entry.new), f"{entry.old} -> {entry.new}: no such key now"
        assert not _exists(entry.old) or entry.old_key[0] == ROOT, f"{entry.old} is a key of this release"
        assert release_key(entry.since) <= release_key(release()), f"{entry.old}: since {entry.since} is ahead"
    for old, entry in section_renames().items():
        assert entry.new in registered_sections() and old not in registered_sections()


def test_the_table_is_listed_in_the_settings_reference() -> None:
    page = (REPO / "docs" / "reference" / "settings.md").read_text(encoding="utf-8")
    for (section, key), entry in key_renames().items():
        assert f"`{entry.old}`" in page, f"{section}.{key} is not on the settings reference"
    for old in section_renames():
        assert f"`{old}:`" in page
