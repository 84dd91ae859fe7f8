"""Settings section ``magi:`` (the council's knobs; per-sage models live in ``llm.models``)."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field

from core.settings import AbsolutePath, Section

Threshold = Literal["majority", "unanimous"]
EarlyStop = Literal["off", "unanimous", "stable", "both"]


class MagiSettings(Section):
    name: ClassVar[str] = "magi"

    rounds: int = Field(1, ge=0, le=10, description="Debate rounds (0: vote right after Thinking).")
    threshold: Threshold = Field("majority", description="majority | unanimous (how final votes are tallied).")
    weighted: bool = Field(False, description="Confidence-weighted majority tally (see README for the formula).")
    timeout_s: float = Field(120.0, gt=0, le=3600, description="Timeout of one sage call in seconds.")
    context_budget_tokens: int = Field(
        16000, ge=200, le=1_000_000, description="Per-sage history budget; older turns are summarised near it."
    )
    anonymous: bool = Field(True, description="Show peers as anonymous labels (Sage A/B) in Debate and Voting.")
    shuffle_peers: bool = Field(True, description="Order peers per sage by a seeded shuffle (else fixed order).")
    early_stop: EarlyStop = Field(
        "both", description="End the Debate early: unanimous blind votes, a round without a stance change, both, off."
    )
    seed: int | None = Field(None, ge=0, description="Seed of a deliberation (peer order; scripted answers).")
    runs: int = Field(1, ge=1, le=50, description="Independent deliberations (different seeds) per question.")
    plugins: list[AbsolutePath] = Field(default_factory=list, description="Extra plugin files to load.")
    plugins_dir: AbsolutePath | None = Field(None, description="A folder whose *.yaml plugins are loaded.")
    disabled_plugins: list[str] = Field(default_factory=list, description="Plugins not to load, by name (e.g. sdd).")
    max_prompt_chars: int = Field(100_000, ge=1, le=2_000_000, description="Longest accepted question.")


def plugin_paths(settings: MagiSettings) -> list[Path]:
    """The plugin files named by the settings (the folder's, then the listed ones)."""
    found: list[Path] = []
    if settings.plugins_dir is not None and settings.plugins_dir.is_dir():
        found.extend(sorted(p for p in settings.plugins_dir.iterdir() if p.suffix in (".yaml", ".yml")))
    found.extend(settings.plugins)
    return found


__all__ = ["EarlyStop", "MagiSettings", "Threshold", "plugin_paths"]
