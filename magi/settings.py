"""Settings section ``council:`` (the council's knobs; per-sage models live in ``llm.models``).

The fields marked :class:`~core.options.Option` are the per-request options of ``magi ask``,
``POST /magi/ask`` and :func:`magi.api.ask`: :data:`COUNCIL_OPTIONS` derives every surface from them.
The section was called ``magi:`` (``MAGI_MAGI_ROUNDS``); those names are still read, with a warning.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, ClassVar, Literal

from pydantic import Field

from core.options import Option, Options
from core.settings import AbsolutePath, Section

Threshold = Literal["majority", "unanimous"]
EarlyStop = Literal["off", "unanimous", "stable", "both"]


class CouncilSettings(Section):
    name: ClassVar[str] = "council"

    rounds: Annotated[int, Option(metavar="N")] = Field(
        1, ge=0, le=10, description="Debate rounds (0: vote right after Thinking)."
    )
    threshold: Annotated[Threshold, Option()] = Field(
        "majority", description="majority | unanimous (how final votes are tallied)."
    )
    quorum: Annotated[int, Option(metavar="N")] = Field(
        2, ge=2, le=3, description="Valid final votes a decision needs (3: no decision when any sage abstains)."
    )
    weighted: Annotated[bool, Option()] = Field(
        False, description="Confidence-weighted majority: a side needs over half the votes' summed confidence."
    )
    timeout_s: Annotated[float, Option("timeout", metavar="SECONDS")] = Field(
        120.0, gt=0, le=3600, description="Timeout of one sage call in seconds."
    )
    context_budget_tokens: Annotated[int, Option("token_budget", metavar="TOKENS")] = Field(
        16000, ge=200, le=1_000_000, description="Per-sage history budget; older turns are summarised near it."
    )
    anonymous: Annotated[bool, Option(off="no-anonymity")] = Field(
        True, description="Show peers as anonymous labels (Sage A/B) in Debate and Voting."
    )
    shuffle_peers: Annotated[bool, Option(off="fixed-order")] = Field(
        True, description="Order peers per sage by a seeded shuffle (else fixed order)."
    )
    early_stop: Annotated[EarlyStop, Option()] = Field(
        "both", description="End the Debate early: unanimous blind votes, a round without a stance change, both, off."
    )
    seed: Annotated[int | None, Option(metavar="N")] = Field(
        None, ge=0, description="Seed of a deliberation (peer order; scripted answers); unset: random."
    )
    runs: Annotated[int, Option(metavar="K")] = Field(
        1, ge=1, le=50, description="Independent deliberations (different seeds) per question."
    )
    plugins: Annotated[
        list[AbsolutePath], Option("plugin", keyword="plugins", metavar="FILE", extend=True, on=("cli", "python"))
    ] = Field(default_factory=list, description="Extra plugin files to load.")
    plugins_dir: AbsolutePath | None = Field(None, description="A folder whose *.yaml plugins are loaded.")
    disabled_plugins: list[str] = Field(default_factory=list, description="Plugins not to load, by name (e.g. sdd).")
    max_prompt_chars: int = Field(100_000, ge=1, le=2_000_000, description="Longest accepted question.")
    sage_replicas: int = Field(
        1,
        ge=1,
        le=16,
        description="Resident actors per sage, created once per cluster and shared by every deliberation "
        "(each deliberation talks to one of each); more share a busy cluster's deliberations.",
    )
    replicas: int = Field(1, ge=1, le=64, description="Serve replicas of the MAGI app (zero CPUs each).")


COUNCIL_OPTIONS = Options(CouncilSettings)


def plugin_paths(settings: CouncilSettings) -> list[Path]:
    """The plugin files named by the settings (the folder's, then the listed ones)."""
    found: list[Path] = []
    if settings.plugins_dir is not None and settings.plugins_dir.is_dir():
        found.extend(sorted(p for p in settings.plugins_dir.iterdir() if p.suffix in (".yaml", ".yml")))
    found.extend(settings.plugins)
    return found


__all__ = ["COUNCIL_OPTIONS", "CouncilSettings", "EarlyStop", "Threshold", "plugin_paths"]
