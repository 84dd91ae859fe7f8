"""Every public module says what it exports (``__all__``), and every exported name really exists."""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType
from typing import ParamSpec, TypeVar

import pytest

PACKAGES = (
    "core",
    "scrapers",
    "nlp",
    "actors",
    "research",
    "deployments",
    "jobs",
    "cli",
    "magi",
    "critic",
    "router",
    "sessions",
    "advisor",
)


def public_modules() -> list[str]:
    names: list[str] = []
    for package in PACKAGES:
        module = importlib.import_module(package)
        names.append(package)
        for info in pkgutil.walk_packages(module.__path__, prefix=f"{package}."):
            if not any(part.startswith("_") for part in info.name.split(".")):
                names.append(info.name)
    return names


def _defined_here(module: ModuleType) -> list[str]:
    return [
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and getattr(value, "__module__", None) == module.__name__
        and not isinstance(value, TypeVar | ParamSpec)  # typing helpers, not API
    ]


@pytest.mark.parametrize("name", public_modules())
def test_exported_names_import_and_are_listed(name: str) -> None:
    module = importlib.import_module(name)
    exported = getattr(module, "__all__", None)
    if name in PACKAGES and exported is None:
        return  # a plain namespace package (its modules export their own names)
    assert exported is not None, f"{name} has no __all__"
    assert len(exported) == len(set(exported)), f"{name}.__all__ repeats a name"
    missing = [n for n in exported if not hasattr(module, n)]
    assert not missing, f"{name}.__all__ names what it does not define: {missing}"
    unlisted = [n for n in _defined_here(module) if n not in exported]
    assert not unlisted, f"{name} defines public {unlisted} without listing them in __all__"
