"""The options of one research run, and the ONE mapping from them onto settings.

The CLI (flags), the Serve app (request body), the batch job (its arguments) and the Python API
(keyword arguments) each fill a :class:`ResearchOptions` and call :func:`apply_options`; bounds and
error messages therefore come from the settings sections, once.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from core.settings import Settings
from scrapers.settings import ProviderName

# dotted setting -> option name, so an error names what the caller typed.
OPTION_NAMES = {
    "research.agents": "agents",
    "research.iterations": "iterations",
    "research.agent_timeout_s": "timeout",
    "research.conflict_threshold": "conflict_threshold",
    "research.results_per_agent": "results_per_agent",
    "search.provider": "provider",
    "search.corpus_dir": "corpus",
}


class ResearchOptions(BaseModel):
    """What a caller may choose per run; None means "as configured"."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    agents: int | None = None
    iterations: int | None = None
    timeout_s: float | None = None
    conflict_threshold: float | None = None
    results_per_agent: int | None = None
    provider: ProviderName | None = None
    corpus: Path | None = None

    def overrides(self) -> dict[str, Any]:
        """The options in ``magi.yaml`` shape; a corpus implies the local provider unless one is named."""
        return {
            "research": {
                "agents": self.agents,
                "iterations": self.iterations,
                "agent_timeout_s": self.timeout_s,
                "conflict_threshold": self.conflict_threshold,
                "results_per_agent": self.results_per_agent,
            },
            "search": {
                "provider": self.provider or ("local" if self.corpus is not None else None),
                "corpus_dir": self.corpus,
            },
        }


def apply_options(
    settings: Settings, options: ResearchOptions, origin: str = "option", names: Mapping[str, str] = OPTION_NAMES
) -> Settings:
    """``settings`` with the run's options on top; a bad option is a ConfigError naming it as the caller did."""
    return settings.updated(options.overrides(), origin=origin, names=names)


__all__ = ["OPTION_NAMES", "ResearchOptions", "apply_options"]
