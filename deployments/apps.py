"""The cluster's HTTP apps, as listed in ``deployments/serve.yaml``: the one place an app is declared.

``serve run`` reads that file directly and ``magi serve`` reads it through :func:`load_serve_config`,
so both deploy the same apps under the same route prefixes. A new system's app adds an entry there
(name, route_prefix, import_path of an application builder taking ``args``) and nothing else.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from core.errors import ConfigError
from core.policy import validate_yaml
from core.resources import resource_path
from core.yamlfile import read_yaml_document

if TYPE_CHECKING:  # Ray Serve is imported only where an app is built: reading the list stays light
    from ray.serve import Application

    ApplicationBuilder = Callable[[dict[str, Any]], Application]

SERVE_CONFIG = resource_path("deployments", "serve.yaml")


class ServeApp(BaseModel):
    """One ``applications:`` entry; keys Ray Serve also accepts (deployments, runtime_env) are kept."""

    model_config = ConfigDict(extra="allow", frozen=True)

    name: str = Field(min_length=1)
    route_prefix: str
    import_path: str
    args: dict[str, Any] = Field(default_factory=dict)

    @field_validator("route_prefix")
    @classmethod
    def _absolute(cls, prefix: str) -> str:
        if not prefix.startswith("/"):
            raise ValueError(f"route_prefix must start with '/', got {prefix!r}")
        return prefix

    @field_validator("import_path")
    @classmethod
    def _module_and_name(cls, path: str) -> str:
        module, _, name = path.partition(":")
        if not module or not name:
            raise ValueError(f"import_path must be 'package.module:builder', got {path!r}")
        return path

    def builder(self) -> ApplicationBuilder:
        """The application builder ``import_path`` names (a function of ``args``)."""
        from ray.serve import Application

        module, _, name = self.import_path.partition(":")
        try:
            target = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as exc:
            raise ConfigError(
                f"Serve app {self.name!r}: cannot import {self.import_path} ({exc}); fix import_path in {SERVE_CONFIG}"
            ) from exc
        if not callable(target) or isinstance(target, Application):
            raise ConfigError(
                f"Serve app {self.name!r}: {self.import_path} is not an application builder (a function taking "
                f"the app's args); point import_path in {SERVE_CONFIG} at one"
            )
        builder: ApplicationBuilder = target
        return builder


class ServeConfig(BaseModel):
    """The parts of the Serve config file that ``magi serve`` uses; the rest is Ray's business."""

    model_config = ConfigDict(extra="allow", frozen=True)

    http_options: dict[str, Any] = Field(default_factory=dict)
    applications: tuple[ServeApp, ...] = Field(min_length=1)

    @field_validator("applications")
    @classmethod
    def _distinct(cls, applications: tuple[ServeApp, ...]) -> tuple[ServeApp, ...]:
        for key in ("name", "route_prefix"):
            values = [getattr(app, key) for app in applications]
            twice = sorted({v for v in values if values.count(v) > 1})
            if twice:
                raise ValueError(f"two applications share the {key} {twice[0]!r}; each app needs its own")
        return applications


def load_serve_config(path: Path = SERVE_CONFIG) -> ServeConfig:
    """Read and check the Serve config; a ConfigError names the file, the line and the app."""
    document = read_yaml_document(path, "Serve config")
    return validate_yaml(document.data, ServeConfig, "Serve config", path, document)


__all__ = [
    "SERVE_CONFIG",
    "ServeApp",
    "ServeConfig",
    "load_serve_config",
]
