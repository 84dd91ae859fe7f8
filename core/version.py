"""Which release this code is, and which code exactly: the release number and code fingerprints.

The release is one number, kept in ``pyproject.toml`` (semantic versioning). A checkout reads it from
its own ``pyproject.toml``, so a bump is seen without reinstalling; an installed wheel reads its package
metadata. Every place that shows a version (``magi --version``, ``/healthz``, ``magi doctor``, the
store's record of who migrated it) asks :func:`release`.

A code fingerprint is a hash of the files a long-lived agent runs: part of the name of every resident
(detached) agent, so a new code gets agents of its own and the old ones can be told apart and retired
(core/residents.py).
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

CODE_ROOT = Path(__file__).resolve().parent.parent  # where the project's packages are imported from
DISTRIBUTION = "magi-cluster"
UNKNOWN = "0+unknown"
# The parts of a semantic version: MAJOR.MINOR.PATCH, an optional -pre-release and +build.
SEMVER = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?")


@cache
def release() -> str:
    """This code's release, e.g. ``"0.4.0"`` (``"0+unknown"`` when neither source names it)."""
    checkout = CODE_ROOT / "pyproject.toml"
    if checkout.is_file():
        project = tomllib.loads(checkout.read_text(encoding="utf-8")).get("project", {})
        if project.get("name") == DISTRIBUTION and isinstance(project.get("version"), str):
            return str(project["version"])
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return UNKNOWN


@cache
def code_fingerprint(*folders: str) -> str:
    """A short hash of every file under ``folders`` (relative to the code root, e.g. ``"magi"``,
    ``"data/magi"``): part of a resident agent's name, so that a new version of the code it runs gets
    agents of its own instead of calling a detached actor still running the old one."""
    digest = hashlib.sha256()
    for folder in folders:
        for path in sorted((CODE_ROOT / folder).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(path.relative_to(CODE_ROOT).as_posix().encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()[:8]


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


__all__ = ["CODE_ROOT", "DISTRIBUTION", "SEMVER", "UNKNOWN", "code_fingerprint", "release", "release_key"]
