"""Plugins: schema errors with file, line, column and key; overrides reaching the right sages."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import ConfigError
from core.llm.testing import FunctionClient
from core.runtime import InProcessRuntime
from core.settings import load_settings
from magi.models import SAGES, SageName
from magi.plugins import load_plugin, load_plugins, overrides_for
from magi.protocol import deliberate
from magi.scripted import respond
from magi.settings import CouncilSettings

GOOD = """\
name: review
version: 2
description: Code review helper.
agent_overrides:
  balthasar: Always ask about data retention.
  casper: Prefer the smallest change that ships.
"""


def write(tmp_path: Path, text: str, name: str = "plugin.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_bundled_sdd_plugin_loads_with_its_command_and_bridge() -> None:
    (sdd,) = load_plugins(CouncilSettings())
    assert sdd.name == "sdd" and [c.name for c in sdd.commands] == ["spec"]
    assert sdd.bridge["install"].argv[:3] == ["npx", "-y", "cc-sdd@latest"]
    assert set(sdd.agent_overrides) == set(SAGES)
    assert load_plugins(CouncilSettings(disabled_plugins=["sdd"])) == []


async def test_overrides_reach_only_the_named_sages_after_their_persona(tmp_path: Path) -> None:
    plugin = load_plugin(write(tmp_path, GOOD))
    assert plugin.version == "2"
    clients = {s: FunctionClient(respond) for s in SAGES}
    settings = load_settings(None, {"council": {"rounds": 0}})
    await deliberate(
        "Merge it?", settings, InProcessRuntime(), seed=1, overrides=overrides_for([plugin]), clients=clients
    )
    systems = {s: c.requests[0].system for s, c in clients.items()}
    assert "data retention" in systems[SageName.BALTHASAR] and "smallest change" in systems[SageName.CASPER]
    assert "data retention" not in systems[SageName.CASPER] and "smallest change" not in systems[SageName.BALTHASAR]
    assert "plugin" not in systems[SageName.MELCHIOR]
    for sage, system in systems.items():
        assert system.startswith(sage.display)  # the persona and its traits come first
    assert systems[SageName.BALTHASAR].index("guardian") < systems[SageName.BALTHASAR].index("data retention")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "name: x\nversion: 1\ndescription: d\nagent_overrides:\n  melchior: [unclosed\n",
            "line 6, column 1: not valid YAML",
        ),
        ("name: x\nversion: 1\ndescription: d\ncomands: []\n", "line 4, column 1: comands: unknown key"),
        (
            "name: x\nversion: 1\ndescription: d\nbridge:\n  run:\n    argv: npx cc-sdd --yes\n",
            "line 6, column 5: bridge.run.argv: must be a list of arguments",
        ),
        (
            "name: x\nversion: 1\ndescription: d\ncommands:\n  - {name: ask, help: h, action: sdd.spec}\n",
            "line 5, column 6: commands[0] ('ask').name: 'ask' is a built-in magi command",
        ),
        (
            "name: x\nversion: 1\ndescription: d\nagent_overrides:\n  gaspar: hi\n",
            "line 5, column 3: agent_overrides.gaspar",
        ),
    ],
)
def test_invalid_plugin_is_one_error_with_file_line_column_and_key(tmp_path: Path, text: str, expected: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_plugin(path)
    message = str(caught.value)
    assert str(path) in message and expected in message, message
    assert len(message.splitlines()) == 1


def test_plugin_files_from_settings_replace_by_name_and_commands_must_be_unique(tmp_path: Path) -> None:
    folder = tmp_path / "plugins"
    folder.mkdir()
    write(folder, GOOD, "a.yaml")
    found = load_plugins(CouncilSettings(plugins_dir=folder))
    assert [p.name for p in found] == ["sdd", "review"]
    clash = write(
        tmp_path, "name: other\nversion: 1\ndescription: d\ncommands:\n  - {name: spec, help: h, action: sdd.spec}\n"
    )
    with pytest.raises(ConfigError, match="command 'spec' is already added by plugin 'sdd'"):
        load_plugins(CouncilSettings(), [clash])
