"""Documentation that Debian packages ship, as real-world test material: find it, install it when missing.

Research is judged on manuals no one here wrote (the evaluation benchmark, the claim-noise test).
Their pages are never copied into the repository: they are read from the installed package, which
is installed with apt-get when missing and allowed (CI runs as root).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from core.errors import InputError


def installed(package: str) -> bool:
    """Whether dpkg knows ``package`` as installed."""
    if shutil.which("dpkg-query") is None:
        return False
    done = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True, check=False)
    return done.returncode == 0 and done.stdout.endswith("installed")


def can_install() -> bool:
    """apt-get is there and we are root: missing documentation packages can be installed."""
    return shutil.which("apt-get") is not None and os.geteuid() == 0


def ensure_packages(packages: list[str]) -> None:
    """Install the packages that are missing (apt-get); InputError naming them when that is impossible."""
    missing = [p for p in packages if not installed(p)]
    if not missing:
        return
    if not can_install():
        raise InputError(
            f"Debian packages {', '.join(missing)} are not installed and apt-get cannot run here "
            "(not root, or not Debian); install them with: sudo apt-get install " + " ".join(missing)
        )
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    command = ["apt-get", "install", "-y", "--no-install-recommends", *missing]
    if subprocess.run(command, env=env, capture_output=True, check=False).returncode != 0:
        subprocess.run(["apt-get", "update"], env=env, capture_output=True, check=False)
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise InputError(f"apt-get could not install {', '.join(missing)}: {done.stderr.strip()[-400:]}")


def doc_files(root: Path, pattern: str) -> list[Path]:
    """The HTML pages of an installed manual, sorted; InputError when the folder holds none."""
    files = sorted(root.glob(pattern))
    if not files:
        raise InputError(f"no files match {pattern!r} under {root}: is the documentation package installed?")
    return files


__all__ = ["can_install", "doc_files", "ensure_packages", "installed"]
