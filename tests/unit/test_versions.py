"""One release number, shown everywhere an operator looks, and a changelog entry for it."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

from core.version import SEMVER, release, release_key

REPO = Path(__file__).resolve().parents[2]


def test_the_release_is_the_semantic_version_in_pyproject() -> None:
    declared = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    assert release() == declared and SEMVER.fullmatch(declared)


def test_magi_version_answers_with_it() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "cli.main", "--version"], capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert done.returncode == 0 and done.stdout.strip() == f"magi {release()}"


def test_the_changelog_names_every_release_newest_first_with_what_to_do() -> None:
    text = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$", text, flags=re.MULTILINE)
    releases = [r for r, _ in headings]
    assert releases and releases[0] == release(), "CHANGELOG.md has no entry for this release at the top"
    assert releases == sorted(releases, key=release_key, reverse=True)
    current = text.split(f"## [{release()}]", 1)[1].split("\n## [", 1)[0]
    upgrading = current.split(f"### Upgrading to {release()}", 1)
    assert len(upgrading) == 2, f"the {release()} entry has no 'Upgrading to {release()}' part"
    assert "An operator must" in upgrading[1] and "Migrates by itself" in upgrading[1]


def test_release_order_follows_semantic_versioning() -> None:
    ordered = ["0.1.0", "0.3.0-rc.1", "0.3.0", "0.3.1", "0.10.0", "1.0.0"]
    assert sorted(reversed(ordered), key=release_key) == ordered
    assert release_key("not a release") < release_key("0.0.1")
