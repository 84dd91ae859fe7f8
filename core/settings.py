"""Effective settings, one section per system: ``magi.yaml`` < environment < options (CLI flags, HTTP fields).

``magi.yaml`` (or ``--config`` / ``MAGI_CONFIG``) holds top-level keys (``data_dir``, ``store_url`` ...)
and one mapping per section (``llm:``, ``ray:``, ``search:``, ``research:``, ``magi:`` ...). The
environment sets ``MAGI_<KEY>`` for top-level keys and ``MAGI_<SECTION>_<KEY>`` for section keys.

Core owns only its own sections (``ray``, ``llm``); every other layer or system declares a
:class:`Section` subclass in its own package and registers it under the ``magi.settings`` entry-point
group, so core knows no system. A section is read with ``settings.section(ResearchSettings)``
(or ``ResearchSettings.of(settings)``); a section whose entry point is missing (e.g. code run from a
checkout that was never installed) still gets its defaults.

Old configs carry forward: keys and sections renamed or removed since earlier releases are listed in
one table (``data/settings/renames.yaml``, :mod:`core.renames`); an old name in ``magi.yaml`` or the
environment is read as its successor with one warning naming both, and a removed key is ignored with a
warning, never an error at start. Flat keys from before sections (``research_agents``) read as
``research.agents``. A bad value raises :class:`ConfigError` naming the key, where it came from and what
is allowed.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from functools import cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Self, TypeVar, get_args, get_origin

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    ValidationError,
    field_validator,
)

from core.errors import ConfigError
from core.masking import masked
from core.renames import KeyRename, key_renames, section_renames
from core.yamlfile import read_yaml

log = logging.getLogger(__name__)

ENV_PREFIX = "MAGI_"
DEFAULT_CONFIG_NAME = "magi.yaml"
SECTION_GROUP = "magi.settings"
ROOT = ""  # the section name of top-level keys

# Environment variables that are not MAGI_<...>: (variable, section, key); the first one set wins.
FOREIGN_ENV: tuple[tuple[str, str, str], ...] = (
    ("ANTHROPIC_API_KEY", "llm", "anthropic_api_key"),
    ("ANTHROPIC_BASE_URL", "llm", "anthropic_base_url"),
    ("OPENAI_API_KEY", "llm", "openai_api_key"),
    ("OPENAI_BASE_URL", "llm", "base_url"),
    ("RAY_ADDRESS", "ray", "address"),
)
# secrets: never from a file or an option ("" is the section of top-level keys)
ENV_ONLY = frozenset({("llm", "anthropic_api_key"), ("llm", "openai_api_key"), ("", "api_keys")})
ToolCalling = Literal["native", "prompted"]


def _absolute(path: Path | None) -> Path | None:
    """Resolved in the driver, so actors on other nodes or in other folders see the same path."""
    return path.expanduser().absolute() if path is not None else None


AbsolutePath = Annotated[Path, AfterValidator(_absolute)]


class Section(BaseModel):
    """Base of a settings section: a named group of keys with strict validation."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)
    name: ClassVar[str]

    @classmethod
    def of(cls, settings: Settings) -> Self:
        return settings.section(cls)


S = TypeVar("S", bound=Section)


class RaySettings(Section):
    """Settings section ``ray:``: which Ray cluster to attach to, or how large a local one to start."""

    name: ClassVar[str] = "ray"

    address: str | None = Field(None, description="Attach to this Ray cluster (also RAY_ADDRESS); unset: local.")
    num_cpus: int | None = Field(None, ge=1, description="CPUs of a local Ray (default: all).")


class LLMRoleParams(BaseModel):
    """Sampling parameters of one LLM role (unset: the request's own value)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    temperature: float | None = Field(None, ge=0, le=1)
    max_tokens: int | None = Field(None, ge=1)
    require_tool: bool | None = Field(
        None,
        description="The first turn of a tool loop must call a tool (tool_choice 'required'); for models that "
        "tend to answer without using their tools.",
    )


def _env_name(name: str | None) -> str | None:
    if name is not None and not name.replace("_", "").isalnum():
        raise ValueError(f"must be an environment variable name such as MY_LLM_KEY, got {name!r}")
    return name


class LLMRoleConfig(BaseModel):
    """Where one role's calls go: its own provider, model, endpoint and parameters (unset: ``llm``'s).

    ``api_key_env`` names the environment variable holding this endpoint's key: the key itself is
    never written in a settings file.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    provider: str | None = Field(None, description="anthropic | openai | replay | record | python:MODULE:FUNCTION.")
    model: str | None = None
    base_url: str | None = Field(None, description="The endpoint of this role (OpenAI- or Anthropic-compatible).")
    api_key_env: Annotated[str | None, AfterValidator(_env_name)] = Field(
        None, description="Environment variable holding this endpoint's API key."
    )
    tool_calling: ToolCalling | None = Field(
        None, description="native: the server's tool calls; prompted: tools described in the prompt, calls as JSON."
    )
    params: LLMRoleParams | None = None


class LLMSettings(Section):
    """Settings section ``llm:``: the provider, the model per role, retries and the cluster-wide limit."""

    name: ClassVar[str] = "llm"

    provider: str | None = Field(
        None, description="anthropic | openai | replay | record | python:MODULE_OR_FILE:FUNCTION (unset: no LLM)."
    )
    model: str = Field("claude-sonnet-4-6", description="Model name sent to the provider (role 'default').")
    models: dict[str, str] = Field(
        default_factory=dict,
        description="Model per role (default, research.summary, magi.melchior, critic.worker ...); unset: model.",
    )
    params: dict[str, LLMRoleParams] = Field(
        default_factory=dict, description="Temperature and max_tokens per role (or 'default')."
    )
    roles: dict[str, LLMRoleConfig] = Field(
        default_factory=dict,
        description="Per role (magi.melchior, critic.worker, advisor.mode2 ... or 'default'): provider, model, "
        "base_url, api_key_env, tool_calling, params; what a role leaves unset comes from llm.models/params and llm.",
    )
    max_concurrency: int = Field(8, ge=1, le=1024, description="LLM calls in flight at once, cluster-wide.")
    cassette: AbsolutePath | None = Field(None, description="Cassette file for the replay/record providers.")
    max_retries: int = Field(2, ge=0, le=10, description="Retries on 408/409/429/5xx/connection errors.")
    backoff_initial_s: float = Field(1.0, gt=0, description="First retry delay in seconds.")
    backoff_max_s: float = Field(10.0, gt=0, description="Cap on one retry delay in seconds.")
    timeout_s: float = Field(60.0, gt=0, description="Timeout of one LLM request in seconds.")
    anthropic_api_key: SecretStr | None = Field(None, description="Secret: ANTHROPIC_API_KEY, environment only.")
    anthropic_base_url: str | None = Field(None, description="Anthropic-compatible server (ANTHROPIC_BASE_URL).")
    base_url: str | None = Field(
        None,
        description="OpenAI-compatible server of provider openai (OPENAI_BASE_URL), e.g. http://127.0.0.1:11434/v1 "
        "(Ollama); unset: api.openai.com.",
    )
    openai_api_key: SecretStr | None = Field(None, description="Secret: OPENAI_API_KEY, environment only.")
    schema_max_items: int = Field(
        16,
        ge=1,
        le=10_000,
        description="Servers that decode under a JSON schema (openai provider): arrays and maps get at most this "
        "many entries (even where the caller allows more), so a weak model cannot repeat one item until "
        "max_tokens cuts the answer off.",
    )
    schema_max_string_chars: int | None = Field(
        None,
        ge=1,
        le=1_000_000,
        description="Servers that decode under a JSON schema: free strings get at most this many characters "
        "(unset: no cap); for small models that repeat themselves inside a string.",
    )
    tool_calling: ToolCalling = Field(
        "native",
        description="native: tools go to the server as tools; prompted: described in the prompt and called as "
        "JSON under the server's JSON-schema decoding (models whose chat template has no tools).",
    )


CORE_SECTIONS: dict[str, type[Section]] = {"ray": RaySettings, "llm": LLMSettings}


class Settings(BaseModel):
    """Top-level keys, core's sections, and every registered section (validated at load)."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)

    data_dir: AbsolutePath = Field(Path(".magi"), description="Where the embedded store, caches and artifacts live.")
    output_format: Literal["json", "markdown"] = Field("markdown", description="Default CLI output format.")
    store_url: str | None = Field(
        None,
        description="Database of runs and caches, e.g. postgresql+psycopg://user@host:5432/magi (unset: SQLite "
        "under data_dir). Every node of a cluster must see the same one.",
    )
    artifacts_url: str | None = Field(
        None, description="Where produced files go: an fsspec URL such as s3://bucket/magi (unset: data_dir/artifacts)."
    )
    api_keys: list[SecretStr] = Field(
        default_factory=list,
        description="Secret: MAGI_API_KEYS (comma-separated), environment only. When set, every HTTP route but "
        "/healthz needs 'Authorization: Bearer <key>'.",
    )
    ray: RaySettings = Field(default_factory=RaySettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)

    @field_validator("api_keys")
    @classmethod
    def _usable_keys(cls, keys: list[SecretStr]) -> list[SecretStr]:
        """A blank key would leave the service open while the operator believes it is guarded."""
        for number, key in enumerate(keys, start=1):
            value = key.get_secret_value()
            if not value.strip():
                raise ValueError(f"key {number} is empty; give real keys or unset MAGI_API_KEYS")
            if any(char.isspace() or not char.isprintable() for char in value):
                raise ValueError(f"key {number} holds spaces or control characters; a Bearer token cannot carry them")
        return keys

    _sections: dict[str, Section] = PrivateAttr(default_factory=dict)
    _raw: dict[str, dict[str, Any]] = PrivateAttr(default_factory=dict)
    _origins: dict[tuple[str, str], str] = PrivateAttr(default_factory=dict)
    _carried: tuple[str, ...] = PrivateAttr(default=())  # renamed or removed keys read (see carried_forward)

    @property
    def carried_forward(self) -> tuple[str, ...]:
        """One line per renamed or removed key the config still uses (what to rename), for magi doctor."""
        return self._carried

    def section(self, cls: type[S]) -> S:
        """The validated section ``cls`` (validated now if its entry point was not registered)."""
        found = self._sections.get(cls.name)
        if not isinstance(found, cls):
            found = _validate_section(cls, self._raw.get(cls.name, {}), self._origins)
            self._sections[cls.name] = found
        return found

    def updated(
        self, overrides: Mapping[str, Any], origin: str = "option", names: Mapping[str, str] | None = None
    ) -> Settings:
        """A copy with ``overrides`` (``magi.yaml``-shaped; None = not given) on top; ``names`` maps a
        dotted key to the name the caller used (``research.agents`` -> ``agents``) for error messages."""
        copy = _build([(self._validated_values(), dict(self._origins)), _layer(overrides, _namer(origin, names))])
        copy._carried = self._carried
        return copy

    def _validated_values(self) -> dict[str, dict[str, Any]]:
        """What was set, as validated (paths already absolute: the copy may be made in another folder)."""
        values = {name: dict(raw) for name, raw in self._raw.items()}
        values[ROOT] = self.model_dump(include=set(_root_keys()), exclude_unset=True)
        for name in CORE_SECTIONS:
            values[name] = getattr(self, name).model_dump(exclude_unset=True)
        for name, section in self._sections.items():
            values[name] = section.model_dump(exclude_unset=True)
        return values


def registered_sections() -> dict[str, type[Section]]:
    """Core's sections plus those registered by installed packages (entry-point group ``magi.settings``)."""
    return {**CORE_SECTIONS, **_entry_point_sections()}


def former_names() -> dict[str, str]:
    """An earlier section name -> the section's name now (``magi`` -> ``council``; data/settings/renames.yaml)."""
    return {old: entry.new for old, entry in section_renames().items()}


def renamed_flat_keys() -> dict[str, tuple[str, str]]:
    """Flat keys from before sections whose new name is not ``<section>.<key>`` -> (section, key)."""
    return {
        key: entry.new_key
        for (section, key), entry in key_renames().items()
        if section == ROOT and entry.new_key is not None and entry.new_key[0] != ROOT
    }


def _renamed_section(old: str, where: str) -> str:
    new = former_names()[old]
    _notice(f"{where}: settings section '{old}' is now '{new}'; the old name still works but will go away")
    return new


@cache
def _entry_point_sections() -> dict[str, type[Section]]:
    found: dict[str, type[Section]] = {}
    for point in entry_points(group=SECTION_GROUP):
        cls = point.load()
        if not (isinstance(cls, type) and issubclass(cls, Section)) or cls.name != point.name:
            raise ConfigError(
                f"entry point {point.value} in group {SECTION_GROUP} must be a Section named {point.name!r}"
            )
        found[point.name] = cls
    return found


# --- layers: {section: {key: value}} plus where each value came from ---------------------------------

Values = dict[str, dict[str, Any]]
Origins = dict[tuple[str, str], str]
Layer = tuple[Values, Origins]


def _root_keys() -> list[str]:
    return [k for k in Settings.model_fields if k not in CORE_SECTIONS]


def _namer(origin: str, names: Mapping[str, str] | None) -> Callable[[str], str]:
    return lambda dotted: f"{origin} '{(names or {}).get(dotted, dotted)}'"


def _dotted(section: str, key: str) -> str:
    return f"{section}.{key}" if section else key


def _layer(tree: Mapping[str, Any], origin_of: Callable[[str], str]) -> Layer:
    """Split a ``magi.yaml``-shaped mapping into section values; ``origin_of(dotted key)`` names the source."""
    values: Values = {}
    origins: Origins = {}
    sections = registered_sections()
    former = former_names()
    for key, value in tree.items():
        if value is None:
            continue
        if key in former and isinstance(value, Mapping):
            key = _renamed_section(key, origin_of(key))
        legacy = None if key in sections or key in Settings.model_fields else _legacy(key)
        if key in sections or (isinstance(value, Mapping) and key not in Settings.model_fields and not legacy):
            if not isinstance(value, Mapping):
                raise ConfigError(f"{origin_of(key)}: section '{key}' must be a mapping of keys, not {value!r}")
            for sub, subvalue in value.items():
                if subvalue is not None:
                    values.setdefault(key, {})[sub] = subvalue
                    origins[(key, sub)] = origin_of(_dotted(key, sub))
            continue
        section, name = legacy or (ROOT, key)
        if section != ROOT:
            _notice(f"setting '{key}' is now '{section}.{name}'; the old name still works but will go away")
        values.setdefault(section, {})[name] = value
        origins[(section, name)] = origin_of(key) + (f" (now '{section}.{name}')" if section != ROOT else "")
    return values, origins


def _legacy(flat: str) -> tuple[str, str] | None:
    """The (section, key) of a pre-section flat key such as ``research_agents`` or ``corpus_dir``."""
    renamed = renamed_flat_keys()
    if flat in renamed:
        return renamed[flat]
    names = {**{name: name for name in registered_sections()}, **former_names()}
    for prefix in sorted(names, key=len, reverse=True):
        if flat.startswith(prefix + "_"):
            return names[prefix], flat[len(prefix) + 1 :]
    return None


def _file_layer(path: Path) -> Layer:
    raw = read_yaml(path, "config file")
    if raw is None:
        return {}, {}
    if not isinstance(raw, dict):
        raise ConfigError(f"config file {path} must hold a mapping of settings, not {type(raw).__name__}")
    values, origins = _layer(raw, lambda k: f"key '{k}' in {path}")
    secrets = [_dotted(s, k) for s, keys in values.items() for k in keys if (s, k) in ENV_ONLY]
    if secrets:
        raise ConfigError(f"config file {path} sets {', '.join(secrets)}: secrets are read from the environment only")
    return values, origins


def _field_kind(section: str, key: str) -> type | None:
    model: type[BaseModel] | None = Settings if section == ROOT else registered_sections().get(section)
    field = model.model_fields.get(key) if model is not None else None
    if field is None:
        return None
    for candidate in (field.annotation, *get_args(field.annotation)):
        origin = get_origin(candidate) or candidate
        if origin in (list, dict):
            return origin  # type: ignore[no-any-return]
    return str


def _env_value(section: str, key: str, text: str) -> Any:
    """Environment text as the field wants it: JSON for lists and mappings (or ``a,b`` for lists)."""
    kind = _field_kind(section, key)
    if kind in (list, dict):
        try:
            return json.loads(text)
        except ValueError:
            if kind is list:
                items = [item.strip() for item in text.split(",") if item.strip()]
                if text and not items:  # "   " or "," names nothing: a mistake, not "no values" (that is "")
                    raise ConfigError(
                        f"{ENV_PREFIX}{_env_suffix(section, key)} is set but names nothing; give values or unset it"
                    ) from None
                return items
            raise ConfigError(f"{ENV_PREFIX}{_env_suffix(section, key)} must be a JSON object, got {text!r}") from None
    return text


def _env_suffix(section: str, key: str) -> str:
    return (f"{section}_{key}" if section else key).upper()


def _env_layer() -> Layer:
    values: Values = {}
    origins: Origins = {}
    sections = registered_sections()

    def put(section: str, key: str, text: str, origin: str) -> None:
        if (section, key) in origins:
            return
        values.setdefault(section, {})[key] = _env_value(section, key, text)
        origins[(section, key)] = origin

    earlier: list[tuple[str, str]] = []  # (variable, former section name)
    for variable, section, key in FOREIGN_ENV:
        if variable in os.environ:
            put(section, key, os.environ[variable], f"environment variable {variable}")
    for variable in sorted(os.environ):
        if not variable.startswith(ENV_PREFIX) or variable == "MAGI_CONFIG":
            continue
        name = variable[len(ENV_PREFIX) :].lower()
        where = f"environment variable {variable}"
        if name in Settings.model_fields and name not in sections:
            put(ROOT, name, os.environ[variable], where)
            continue
        prefix = next((s for s in sorted(sections, key=len, reverse=True) if name.startswith(s + "_")), None)
        key = name[len(prefix) + 1 :] if prefix else ""
        if prefix and key in sections[prefix].model_fields:
            if (prefix, key) in ENV_ONLY:
                continue  # secrets come from their own variable only
            put(prefix, key, os.environ[variable], where)
        elif name in (renamed := renamed_flat_keys()):
            new_section, new_key = renamed[name]
            _notice(
                f"{variable} is now {ENV_PREFIX}{_env_suffix(new_section, new_key)}; "
                "the old name still works but will go away"
            )
            put(new_section, new_key, os.environ[variable], where)
        elif prefix and (prefix, key) in key_renames():
            put(prefix, key, os.environ[variable], where)  # carried to its successor by _carry_forward
        elif prefix:
            known = ", ".join(ENV_PREFIX + _env_suffix(prefix, k) for k in sections[prefix].model_fields)
            raise ConfigError(f"{where} names no '{prefix}' setting; known: {known}")
        elif (former := _former_prefix(name)) is not None:
            earlier.append((variable, former))
    for variable, former in earlier:  # after the new names, which win when both are set
        name = variable[len(ENV_PREFIX) :].lower()
        section, key = former_names()[former], name[len(former) + 1 :]
        where = f"environment variable {variable}"
        if key not in sections[section].model_fields:
            known = ", ".join(ENV_PREFIX + _env_suffix(section, k) for k in sections[section].model_fields)
            raise ConfigError(f"{where} names no '{section}' setting; known: {known}")
        _notice(f"{variable} is now {ENV_PREFIX}{_env_suffix(section, key)}; the old name still works but will go away")
        put(section, key, os.environ[variable], f"{where} (now {ENV_PREFIX}{_env_suffix(section, key)})")
    return values, origins


def _former_prefix(name: str) -> str | None:
    return next((old for old in sorted(former_names(), key=len, reverse=True) if name.startswith(old + "_")), None)


def _carry_forward(layer: Layer, table: Mapping[tuple[str, str], KeyRename] | None = None) -> Layer:
    """A layer with its renamed keys moved to their successors and its removed keys dropped, one warning
    each (``table``: data/settings/renames.yaml); a successor set in the same layer wins over the old name."""
    values = {section: dict(keys) for section, keys in layer[0].items()}
    origins = dict(layer[1])
    sections = registered_sections()
    for (section, key), entry in (key_renames() if table is None else table).items():
        if section == ROOT or key not in values.get(section, {}):
            continue  # flat keys were read by _legacy, through the same table
        if section in sections and key in sections[section].model_fields:
            continue  # a key of that name exists again: it is read as itself
        value = values[section].pop(key)
        where = origins.pop((section, key), f"'{entry.old}'")
        if not values[section]:
            del values[section]
        if entry.new_key is None:
            _notice(f"{where}: '{entry.old}' was removed in {entry.since} ({entry.why}); it is ignored: remove it")
            continue
        new_section, new_key = entry.new_key
        successor = f"'{entry.new}' ({ENV_PREFIX}{_env_suffix(new_section, new_key)})"
        if new_key in values.get(new_section, {}):
            _notice(
                f"{where}: '{entry.old}' is now {successor}, which is also set "
                f"({origins.get(entry.new_key, 'here')}); the old name is ignored: remove it"
            )
            continue
        _notice(
            f"{where}: '{entry.old}' is now {successor} since {entry.since}; read as that: rename it, "
            "the old name will go away"
        )
        values.setdefault(new_section, {})[new_key] = value
        origins[(new_section, new_key)] = f"{where} (now '{entry.new}')"
    return values, origins


# What the settings being loaded carried forward (renamed or removed keys): logged, and kept on the
# Settings for magi doctor.
_NOTICES: ContextVar[list[str] | None] = ContextVar("settings_notices", default=None)


def _notice(message: str) -> None:
    log.warning("%s", message)
    collected = _NOTICES.get()
    if collected is not None:
        collected.append(message)


def _merge(layers: list[Layer]) -> Layer:
    values: Values = {}
    origins: Origins = {}
    for layer_values, layer_origins in (_carry_forward(layer) for layer in layers):
        for section, keys in layer_values.items():
            values.setdefault(section, {}).update(keys)
        origins.update(layer_origins)
    return values, origins


# --- validation ------------------------------------------------------------------------------------


def _problems(exc: ValidationError, section: str, origins: Origins) -> list[str]:
    problems = []
    for err in exc.errors():
        loc = [str(p) for p in err["loc"]]
        if section == ROOT and loc and loc[0] in CORE_SECTIONS and len(loc) > 1:
            sec, key = loc[0], loc[1]
        else:
            sec, key = section, loc[0] if loc else "?"
        where = origins.get((sec, key), f"default of '{_dotted(sec, key)}'")
        label = _dotted(sec, key)
        secret = (sec, key) in ENV_ONLY  # a secret's value never reaches a message
        shown = "" if err["type"] == "extra_forbidden" or secret else f" (got {err.get('input')!r})"
        message = "unknown setting" if err["type"] == "extra_forbidden" else err["msg"]
        problems.append(f"{label} from {where}: {message}{shown}")
    return problems


def _validate_section(cls: type[S], raw: Mapping[str, Any], origins: Origins) -> S:
    try:
        return cls.model_validate(dict(raw))
    except ValidationError as exc:
        raise ConfigError("invalid setting: " + "; ".join(_problems(exc, cls.name, origins))) from exc


def _build(layers: list[Layer]) -> Settings:
    values, origins = _merge(layers)
    sections = registered_sections()
    unknown = sorted(s for s in values if s != ROOT and s not in sections)
    if unknown:
        where = "; ".join(origins[next(k for k in origins if k[0] == s)] for s in unknown)
        raise ConfigError(
            f"unknown settings section(s) {', '.join(unknown)} ({where}); known sections: {', '.join(sorted(sections))}"
        )
    problems: list[str] = []
    root: dict[str, Any] = dict(values.get(ROOT, {}))
    for name in CORE_SECTIONS:
        root[name] = values.get(name, {})
    try:
        settings = Settings.model_validate(root)
    except ValidationError as exc:
        problems += _problems(exc, ROOT, origins)
        settings = None
    validated: dict[str, Section] = {}
    for name, cls in sections.items():
        if name in CORE_SECTIONS:
            continue
        try:
            validated[name] = _validate_section(cls, values.get(name, {}), origins)
        except ConfigError as exc:
            problems.append(str(exc).removeprefix("invalid setting: "))
    if problems or settings is None:
        raise ConfigError("invalid setting: " + "; ".join(problems))
    settings._sections = validated
    settings._raw = values
    settings._origins = origins
    return settings


def config_path(explicit: str | Path | None = None) -> Path | None:
    """The YAML file in force: ``--config``, else ``MAGI_CONFIG``, else ``./magi.yaml`` if it exists."""
    if explicit:
        return Path(explicit)
    env = os.environ.get("MAGI_CONFIG")
    if env:
        return Path(env)
    default = Path(DEFAULT_CONFIG_NAME)
    return default if default.is_file() else None


def _check_config_file(path: Path, named_by: str | None) -> None:
    """A config file must be a regular file: a folder, a device or a FIFO (which would block the read)
    is refused in one line that says who named it; so is a file ``--config``/``MAGI_CONFIG`` names
    that does not exist (only the implicit ``./magi.yaml`` may be absent)."""
    fix = f"point {named_by} at a YAML file" if named_by else f"replace {path} with a YAML file"
    if path.is_dir():
        raise ConfigError(f"config file {path} is a directory, not a file; {fix}")
    if path.exists() and not path.is_file():
        raise ConfigError(f"config file {path} is not a regular file (a device, FIFO or socket); {fix}")
    if not path.exists():
        raise ConfigError(f"config file {path} does not exist; {fix}" + (" that exists" if named_by else ""))


def load_settings(
    config: str | Path | None = None, overrides: Mapping[str, Any] | None = None, *, origin: str = "option"
) -> Settings:
    """The effective settings: file < environment < ``overrides`` (``magi.yaml``-shaped; None = not given)."""
    path = config_path(config)
    if path is not None:
        _check_config_file(path, "--config" if config else "MAGI_CONFIG" if os.environ.get("MAGI_CONFIG") else None)
    notices: list[str] = []
    token = _NOTICES.set(notices)
    try:
        file_layer = _file_layer(path) if path is not None else ({}, {})
        option_layer = _layer(overrides or {}, _namer(origin, None))
        settings = _build([file_layer, _env_layer(), option_layer])
    finally:
        _NOTICES.reset(token)
    settings._carried = tuple(notices)
    return settings


def describe(settings: Settings) -> dict[str, Any]:
    """Settings as plain nested data with secrets masked, for ``magi doctor``."""
    out: dict[str, Any] = settings.model_dump(mode="json", exclude={"ray", "llm"})
    if settings.store_url:
        out["store_url"] = masked(settings.store_url)  # a database URL may carry a password
    for name in registered_sections():
        section = getattr(settings, name) if name in CORE_SECTIONS else settings.section(registered_sections()[name])
        shown = section.model_dump(mode="json")
        for secret_section, key in ENV_ONLY:
            if secret_section == name and key in shown:
                shown[key] = "****" if shown[key] else None
        out[name] = shown
    return out


def env_table() -> list[tuple[str, str]]:
    """(dotted key, environment variable) of every known setting, for documentation and doctor."""
    rows = [(k, ENV_PREFIX + k.upper()) for k in _root_keys()]
    for name, cls in registered_sections().items():
        rows += [(_dotted(name, k), ENV_PREFIX + _env_suffix(name, k)) for k in cls.model_fields]
    return rows


__all__ = [
    "CORE_SECTIONS",
    "DEFAULT_CONFIG_NAME",
    "ENV_ONLY",
    "ENV_PREFIX",
    "FOREIGN_ENV",
    "ROOT",
    "SECTION_GROUP",
    "AbsolutePath",
    "LLMRoleConfig",
    "LLMRoleParams",
    "LLMSettings",
    "Layer",
    "Origins",
    "RaySettings",
    "Section",
    "Settings",
    "ToolCalling",
    "Values",
    "config_path",
    "describe",
    "env_table",
    "former_names",
    "load_settings",
    "registered_sections",
    "renamed_flat_keys",
]
