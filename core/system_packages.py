"""The Debian packages the project uses from the system (``data/system-packages.txt``), and which are here.

The same list drives ``scripts/install-system-packages.sh`` (run by ``make demo`` and ``make test``),
``magi doctor`` and the tests, so what the set-up installs and what the doctor checks cannot drift apart.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass

from core.resources import data_path

LIST_FILE = "system-packages.txt"


@dataclass(frozen=True)
class SystemPackage:
    name: str
    group: str  # demo | test | bench: the command that needs it
    purpose: str


def system_packages() -> list[SystemPackage]:
    """Every package of the list, in its order."""
    packages = []
    for line in data_path(LIST_FILE).read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, group, purpose = line.split(maxsplit=2)
        packages.append(SystemPackage(name, group, purpose))
    return packages


def is_installed(package: str) -> bool | None:
    """Whether dpkg has ``package`` installed; None when this is not a Debian system (no dpkg-query)."""
    dpkg_query = shutil.which("dpkg-query")
    if dpkg_query is None:
        return None
    done = subprocess.run(
        [dpkg_query, "-W", "-f=${db:Status-Status}", package], capture_output=True, text=True, check=False
    )
    return done.returncode == 0 and done.stdout.strip() == "installed"


__all__ = ["LIST_FILE", "SystemPackage", "is_installed", "system_packages"]
