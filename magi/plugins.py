"""MAGI plugins: YAML files that add commands, per-sage instructions and bridge commands.

A plugin (``data/magi/plugins/*.yaml`` bundled; more with ``--plugin FILE``, ``council.plugins`` or
``council.plugins_dir``; ``council.disabled_plugins`` turns one off by name)::

    name: sdd                      # lower-case, unique; a later file with the same name replaces it
    version: "1.0.0"
    description: ...
    commands:                      # subcommands it adds to `magi`, each run by a workflow of magi
      - {name: spec, help: ..., action: sdd.spec}
    agent_overrides:               # appended to the sage's persona (its traits stay first)
      melchior: ...
    bridge:                        # external commands, run by magi/executor.py, never through a shell
      install:
        argv: [npx, -y, cc-sdd@latest, --claude, --lang, ja, --yes]
        cwd: .                     # relative to the working folder
        env: [PATH, HOME]          # the only variables passed through
        timeout_s: 300
        input: none                # none | stdin | file ({input_file} in argv)
        max_output_bytes: 65536
    options: {...}                 # the workflow's own settings

Any problem (bad YAML, unknown key, a shell string where an argv list belongs, an unknown action)
is one :class:`~core.errors.ConfigError` naming the file, line, column and key.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from core.errors import ConfigError
from core.policy import validate_yaml
from core.resources import data_path
from core.yamlfile import read_yaml_document
from magi.models import SageName
from magi.settings import CouncilSettings, plugin_paths

NAME_PATTERN = r"^[a-z][a-z0-9_-]{0,40}$"
# Workflows a plugin command may run: action -> "module:function", an async function
# (request, settings, runtime, plugin, *, workdir, feature) returning a result with ``exit_code``,
# ``markdown()`` and ``model_dump()``.
ACTIONS: dict[str, str] = {"sdd.spec": "magi.sdd:spec_workflow"}
CORE_COMMANDS = frozenset({"ask", "research", "doctor", "serve"})


SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH")


def is_secret_variable(name: str) -> bool:
    """True for variables a bridge command must never see: the service's own (``MAGI_*``, which hold
    ``MAGI_API_KEYS``), the LLM's (``ANTHROPIC_*``) and anything named like a key, token or password."""
    upper = name.upper()
    return upper.startswith(("MAGI_", "ANTHROPIC_", "RAY_")) or any(marker in upper for marker in SECRET_MARKERS)


class BridgeCommand(BaseModel):
    """An external command: an argv list (never a shell string) and its limits."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    argv: list[str] = Field(min_length=1)
    cwd: str = "."
    env: list[str] = Field(default_factory=lambda: ["PATH", "HOME"])
    timeout_s: float = Field(120.0, gt=0, le=3600)
    input: Literal["none", "stdin", "file"] = "none"
    max_output_bytes: int = Field(65536, ge=1024, le=16 * 1024 * 1024)

    @field_validator("argv", mode="before")
    @classmethod
    def _list_only(cls, value: Any) -> Any:
        if isinstance(value, str):
            raise ValueError("must be a list of arguments (e.g. [npx, cc-sdd@latest, --yes]), never a shell string")
        return value

    @field_validator("argv")
    @classmethod
    def _no_empty(cls, argv: list[str]) -> list[str]:
        if not argv[0].strip():
            raise ValueError("the program (first argument) is empty")
        return argv

    @field_validator("cwd")
    @classmethod
    def _inside(cls, cwd: str) -> str:
        parts = PurePosixPath(cwd.replace("\\", "/")).parts
        if cwd.startswith(("/", "\\", "~")) or ".." in parts or "\x00" in cwd:
            raise ValueError(f"{cwd!r} leaves the working folder; give a folder inside it (e.g. '.' or 'tools')")
        return cwd

    @field_validator("env")
    @classmethod
    def _no_secrets(cls, names: list[str]) -> list[str]:
        secret = [n for n in names if is_secret_variable(n)]
        if secret:
            raise ValueError(f"{secret[0]} is a secret of this service; a bridge command never receives it")
        return names


class PluginCommand(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=NAME_PATTERN)
    help: str = Field(min_length=1)
    action: str

    @field_validator("name")
    @classmethod
    def _not_core(cls, name: str) -> str:
        if name in CORE_COMMANDS:
            raise ValueError(f"{name!r} is a built-in magi command; choose another name")
        return name

    @field_validator("action")
    @classmethod
    def _known(cls, action: str) -> str:
        if action not in ACTIONS:
            raise ValueError(f"unknown action {action!r}; known: {', '.join(sorted(ACTIONS))}")
        return action


class Plugin(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=NAME_PATTERN)
    version: str = Field(min_length=1)
    description: str = Field(min_length=1)
    commands: list[PluginCommand] = Field(default_factory=list)
    agent_overrides: dict[SageName, str] = Field(default_factory=dict)
    bridge: dict[str, BridgeCommand] = Field(default_factory=dict)
    options: dict[str, Any] = Field(default_factory=dict)
    source: str = Field("", exclude=True, description="The file it was read from (set by the loader).")

    @field_validator("version", mode="before")
    @classmethod
    def _text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int | float) and not isinstance(value, bool) else value


def load_plugin(path: Path) -> Plugin:
    """Read and validate one plugin file; every problem is a ConfigError with file, line, column, key."""
    document = read_yaml_document(path, "MAGI plugin")
    if not isinstance(document.data, dict):
        raise ConfigError(f"MAGI plugin {path}: expected a mapping with name, version, description; fix the file")
    if "source" in document.data:
        raise ConfigError(f"MAGI plugin {path}: 'source' is set by magi, not by the file; remove it")
    plugin = validate_yaml(document.data, Plugin, "MAGI plugin", path, document)
    return plugin.model_copy(update={"source": str(path)})


def bundled_plugin_paths() -> list[Path]:
    return sorted(data_path("magi", "plugins").glob("*.yaml"))


def load_plugins(settings: CouncilSettings, extra: Iterable[Path] = ()) -> list[Plugin]:
    """Bundled plugins, then the configured ones, then ``extra`` (``--plugin``); disabled ones left out."""
    chosen: dict[str, Plugin] = {}
    for path in [*bundled_plugin_paths(), *plugin_paths(settings), *extra]:
        plugin = load_plugin(Path(path))
        chosen[plugin.name] = plugin  # a later file replaces a plugin of the same name
    plugins = [p for name, p in chosen.items() if name not in settings.disabled_plugins]
    seen: dict[str, str] = {}
    for plugin in plugins:
        for command in plugin.commands:
            if command.name in seen:
                raise ConfigError(
                    f"MAGI plugin {plugin.source}: command {command.name!r} is already added by plugin "
                    f"{seen[command.name]!r}; rename one, or disable a plugin (council.disabled_plugins)"
                )
            seen[command.name] = plugin.name
    return plugins


def overrides_for(plugins: Sequence[Plugin]) -> dict[SageName, list[tuple[str, str]]]:
    """Each sage's extra instructions as (plugin name, text), in plugin order."""
    found: dict[SageName, list[tuple[str, str]]] = {}
    for plugin in plugins:
        for sage, text in plugin.agent_overrides.items():
            found.setdefault(sage, []).append((plugin.name, text))
    return found


def find_plugin(plugins: Sequence[Plugin], name: str) -> Plugin | None:
    return next((p for p in plugins if p.name == name), None)


__all__ = [
    "ACTIONS",
    "CORE_COMMANDS",
    "NAME_PATTERN",
    "SECRET_MARKERS",
    "BridgeCommand",
    "Plugin",
    "PluginCommand",
    "bundled_plugin_paths",
    "find_plugin",
    "is_secret_variable",
    "load_plugin",
    "load_plugins",
    "overrides_for",
]
