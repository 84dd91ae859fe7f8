"""Which release this code is: one number, kept in ``pyproject.toml`` (semantic versioning).

A checkout reads the number from its own ``pyproject.toml``, so a bump is seen without reinstalling; an
installed wheel reads its package metadata. Every place that shows a version (``magi --version``,
``/healthz``, ``magi doctor``, the store's record of who migrated it) asks :func:`release`.
"""

from __future__ import annotations

import re
import tomllib
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

DISTRIBUTION = "magi-cluster"
UNKNOWN = "0+unknown"
# The parts of a semantic version: MAJOR.MINOR.PATCH, an optional -pre-release and +build.
SEMVER = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?")


@cache
def release() -> str:
    """This code's release, e.g. ``"0.4.0"`` (``"0+unknown"`` when neither source names it)."""
    checkout = Path(__file__).resolve().parent.parent / "pyproject.toml"
    if checkout.is_file():
        project = tomllib.loads(checkout.read_text(encoding="utf-8")).get("project", {})
        if project.get("name") == DISTRIBUTION and isinstance(project.get("version"), str):
            return str(project["version"])
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return UNKNOWN


def release_key(text: str) -> tuple[int, int, int, int, str]:
    """A sort key by semantic-version precedence (a pre-release sorts before its release); an
    unparsable text sorts first, so it never counts as newer than a real release."""
    found = SEMVER.fullmatch(text.strip())
    if found is None:
        return (-1, -1, -1, 0, text)
    major, minor, patch = (int(found.group(i)) for i in (1, 2, 3))
    core = f"{major}.{minor}.{patch}"
    rest = text.strip()[len(core) :].split("+", 1)[0]
    return (major, minor, patch, 0 if rest.startswith("-") else 1, rest)


__all__ = ["DISTRIBUTION", "SEMVER", "UNKNOWN", "release", "release_key"]
