"""Effective settings: ``magi.yaml`` < environment (``MAGI_*``) < CLI flags.

The YAML path comes from ``--config`` or ``MAGI_CONFIG``; ``./magi.yaml`` is read when present.
A bad value raises :class:`ConfigError` naming the key, where it came from and what is allowed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    InitSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from core.errors import ConfigError
from core.yamlfile import read_yaml

ENV_PREFIX = "MAGI_"
DEFAULT_CONFIG_NAME = "magi.yaml"
BUNDLED_CORPUS = Path(__file__).resolve().parent.parent / "data" / "corpus"


class Settings(BaseSettings):
    """Every knob of the platform, flat so that env names stay obvious (``MAGI_<KEY>``)."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="forbid", validate_default=True)

    data_dir: Path = Field(Path(".magi"), description="Where the SQLite store and caches live.")
    store_url: str | None = Field(
        None, description="Database of runs and caches, e.g. postgresql+psycopg://user@host:5432/magi (unset: "
        "SQLite under data_dir). Every node of a cluster must see the same one."
    )
    artifacts_url: str | None = Field(
        None, description="Where produced files go: an fsspec URL such as s3://bucket/magi (unset: data_dir/artifacts)."
    )
    output_format: Literal["json", "markdown"] = Field("markdown", description="Default CLI output format.")

    llm_provider: str | None = Field(
        None, description="anthropic | replay | record | python:MODULE_OR_FILE:FUNCTION (unset: no LLM)."
    )
    llm_model: str = Field("claude-sonnet-4-6", description="Model name sent to the provider.")
    llm_cassette: Path | None = Field(None, description="Cassette file for the replay/record providers.")
    llm_max_retries: int = Field(2, ge=0, le=10, description="Retries on 408/409/429/5xx/connection errors.")
    llm_backoff_initial_s: float = Field(1.0, gt=0, description="First retry delay in seconds.")
    llm_backoff_max_s: float = Field(10.0, gt=0, description="Cap on one retry delay in seconds.")
    llm_timeout_s: float = Field(60.0, gt=0, description="Timeout of one LLM request in seconds.")
    anthropic_api_key: SecretStr | None = Field(
        None, validation_alias=AliasChoices("ANTHROPIC_API_KEY"), description="Secret: environment only."
    )
    anthropic_base_url: str | None = Field(
        None, validation_alias=AliasChoices("ANTHROPIC_BASE_URL"), description="Anthropic-compatible server."
    )

    ray_address: str | None = Field(
        None,
        validation_alias=AliasChoices("RAY_ADDRESS", "MAGI_RAY_ADDRESS", "ray_address"),
        description="Attach to this Ray cluster; unset starts a local single-node Ray.",
    )
    ray_num_cpus: int | None = Field(None, ge=1, description="CPUs of the local Ray (default: all).")

    search_provider: Literal["local", "ddgs", "searxng"] = Field("local", description="First search provider.")
    search_fallbacks: list[Literal["local", "ddgs", "searxng"]] = Field(
        default_factory=list, description="Providers tried in order when the first fails (e.g. [searxng])."
    )
    search_cache_ttl_s: float = Field(86_400.0, ge=0, description="Reuse cached search results this long (0: off).")
    ddgs_region: str = Field("jp-jp", description="DuckDuckGo region, e.g. jp-jp, us-en, wt-wt.")
    ddgs_backend: str = Field("auto", description="ddgs backend(s), e.g. auto, duckduckgo, bing,brave.")
    searxng_url: str | None = Field(None, description="Base URL of a SearXNG instance with the JSON API enabled.")
    searxng_timeout_s: float = Field(10.0, gt=0, le=300, description="Time for one SearXNG answer (tried twice).")

    fetch_allow_private: bool = Field(
        False, description="Allow fetching private/loopback/link-local addresses (SSRF guard off). Tests only."
    )
    fetch_respect_robots: bool = Field(True, description="Obey robots.txt.")
    fetch_concurrency: int = Field(16, ge=1, le=256, description="Concurrent fetches in one process.")
    fetch_per_host_concurrency: int = Field(2, ge=1, le=32, description="Concurrent fetches per host.")
    fetch_politeness_delay_s: float = Field(0.5, ge=0, description="Pause between requests to one host.")
    fetch_timeout_s: float = Field(20.0, gt=0, description="Total time for one page, redirects included.")
    fetch_max_bytes: int = Field(5_000_000, ge=1024, description="Largest body accepted (after decompression).")
    fetch_retries: int = Field(2, ge=0, le=10, description="Retries on 5xx and timeouts.")
    page_cache_ttl_s: float = Field(7 * 86_400.0, ge=0, description="Reuse fetched pages this long (0: off).")
    nlp_workers: int | None = Field(None, ge=1, description="NLP pool size (default: the cluster's CPUs).")
    corpus_dir: Path = Field(BUNDLED_CORPUS, description="Folder searched by the local provider.")
    research_agents: int = Field(3, ge=1, le=16, description="Parallel research agents.")
    research_results_per_agent: int = Field(12, ge=1, le=100, description="Search results per agent.")
    research_agent_timeout_s: float = Field(300.0, gt=0, le=3600, description="Timeout of one agent in seconds.")
    research_iterations: int = Field(3, ge=1, le=10, description="Refinement iterations (may stop early).")
    research_conflict_threshold: float = Field(
        0.1, ge=0, le=1, description="Share of conflicting claims above which every report flags for review."
    )

    @field_validator("data_dir", "corpus_dir", "llm_cassette")
    @classmethod
    def _absolute(cls, path: Path | None) -> Path | None:
        """Resolved here, in the driver: actors on other nodes or in other folders see the same path."""
        return path.expanduser().absolute() if path is not None else None

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # init = CLI flags, then env, then the YAML mapping handed over by load_settings.
        yaml_values = getattr(cls, "_yaml_values", {})
        return (init_settings, env_settings, InitSettingsSource(settings_cls, yaml_values))


SECRET_KEYS = frozenset({"anthropic_api_key"})


def _read_yaml(path: Path) -> dict[str, Any]:
    raw = read_yaml(path, "config file")
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"config file {path} must hold a mapping of settings, not {type(raw).__name__}")
    secrets = SECRET_KEYS.intersection(raw)
    if secrets:
        raise ConfigError(
            f"config file {path} sets {', '.join(sorted(secrets))}: secrets are read from the environment only"
        )
    return raw


def config_path(explicit: str | Path | None = None) -> Path | None:
    """The YAML file in force: ``--config``, else ``MAGI_CONFIG``, else ``./magi.yaml`` if it exists."""
    if explicit:
        return Path(explicit)
    env = os.environ.get("MAGI_CONFIG")
    if env:
        return Path(env)
    default = Path(DEFAULT_CONFIG_NAME)
    return default if default.is_file() else None


def _origin(key: str, flags: dict[str, Any], path: Path | None) -> str:
    if key in flags:
        return f"command-line flag for '{key}'"
    env_name = ENV_PREFIX + key.upper()
    if env_name in os.environ:
        return f"environment variable {env_name}"
    if key in {"anthropic_api_key", "anthropic_base_url", "ray_address"}:
        return f"environment variable {key.upper()}"
    return f"key '{key}' in {path}" if path else f"default of '{key}'"


def load_settings(config: str | Path | None = None, **flags: Any) -> Settings:
    """Build the effective settings; ``flags`` are CLI values (``None`` means not given)."""
    path = config_path(config)
    if config is not None and path is not None and not path.is_file():
        raise ConfigError(f"config file {path} does not exist; pass an existing file to --config")
    values = _read_yaml(path) if path and path.is_file() else {}
    given = {k: v for k, v in flags.items() if v is not None}
    unknown = sorted(set(values) - set(Settings.model_fields))
    if unknown:
        raise ConfigError(
            f"unknown setting(s) {', '.join(unknown)} in {path}; known settings: "
            + ", ".join(sorted(Settings.model_fields))
        )
    Settings._yaml_values = values  # type: ignore[attr-defined]
    try:
        return Settings(**given)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            key = str(err["loc"][0]) if err["loc"] else "?"
            problems.append(f"{_origin(key, given, path)}: {err['msg']} (got {err.get('input')!r})")
        raise ConfigError("invalid setting: " + "; ".join(problems)) from exc
    finally:
        Settings._yaml_values = {}  # type: ignore[attr-defined]


def describe(settings: Settings) -> dict[str, Any]:
    """Settings as a plain dict with secrets masked, for ``magi doctor``."""
    from core.store import masked  # here: SQLAlchemy loads only when settings are shown

    out: dict[str, Any] = {}
    for key, value in settings.model_dump().items():
        if key in SECRET_KEYS:
            out[key] = "****" if value else None
        elif key == "store_url" and value:
            out[key] = masked(value)  # a database URL may carry a password
        else:
            out[key] = str(value) if isinstance(value, Path) else value
    return out
