"""MkDocs hook: the build fails when a generated page no longer matches the code (docs/generate.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

sys.path.insert(0, str(Path(__file__).resolve().parent))

import generate  # docs/generate.py, beside this file


def on_pre_build(config: Any) -> None:
    stale = generate.stale_pages()
    if stale:
        names = ", ".join(f"docs/{name}" for name in stale)
        raise PluginError(f"{names} no longer match the code: run .venv/bin/python docs/generate.py and commit")
