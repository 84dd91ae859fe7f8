"""Where the bundled data lives (placeholder until data ships as package resources)."""

from __future__ import annotations

from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent.parent / "data"
BUNDLED_CORPUS = DATA_DIR / "corpus"
