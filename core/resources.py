"""Files shipped inside the installed package (corpus, rules, prompts, research policy, Serve config).

They are located through :mod:`importlib.resources`, so an editable checkout and a wheel installed
into any site-packages find them the same way; nothing walks up from ``__file__`` to a repository.
Callers get a real :class:`pathlib.Path` because the local search provider walks the corpus folder
and rule loaders open files by path (and hash them for cache keys).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from core.errors import ConfigError

DATA_PACKAGE = "data"  # the repository's data/ folder, shipped as a package (data/__init__.py)


def resource_path(package: str, *parts: str) -> Path:
    """The file or folder ``parts`` inside ``package``; a ConfigError when it is not installed."""
    where = "/".join((package, *parts))
    try:
        root = resources.files(package)
    except ModuleNotFoundError as exc:
        raise ConfigError(
            f"package resource {where} is missing: the package {package!r} is not installed; "
            "reinstall magi-cluster (pip install magi-cluster, or `make install` in a checkout)"
        ) from exc
    target = root.joinpath(*parts)
    if not isinstance(target, Path):
        raise ConfigError(
            f"package resource {where} is inside an archive ({target}), not a folder on disk; "
            "install magi-cluster as an unpacked wheel (pip install) rather than running it from a zip"
        )
    if not target.exists():
        raise ConfigError(
            f"package resource {where} is missing (looked for {target}); the installation is incomplete: "
            "reinstall magi-cluster, or restore the file from the repository"
        )
    return target


def data_path(*parts: str) -> Path:
    """A bundled data file or folder, e.g. ``data_path("rules", "query_glossary.yaml")``."""
    return resource_path(DATA_PACKAGE, *parts)


__all__ = [
    "DATA_PACKAGE",
    "data_path",
    "resource_path",
]
