"""Settings section ``research:`` (the spec's ConsensusResearchConfig, minus the search provider).

The fields marked :class:`~core.options.Option` here and in ``search:`` are the per-run options of
``magi research``, ``POST /research``, the batch job and :func:`research.api.research`, all derived
from :data:`RESEARCH_OPTIONS`. The Python keywords are the spec's names (``agent_count`` ...).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import Field

from core.options import Option, Options
from core.settings import Section
from scrapers.settings import SearchSettings


class ResearchSettings(Section):
    name: ClassVar[str] = "research"

    agents: Annotated[int, Option(keyword="agent_count", metavar="N")] = Field(
        3, ge=1, le=16, description="Parallel research agents."
    )
    iterations: Annotated[int, Option(keyword="iteration_count", metavar="N")] = Field(
        3, ge=1, le=10, description="Refinement iterations (may stop early)."
    )
    agent_timeout_s: Annotated[float, Option("timeout", metavar="SECONDS")] = Field(
        300.0, gt=0, le=3600, description="Timeout of one agent in seconds."
    )
    conflict_threshold: Annotated[float, Option(metavar="X")] = Field(
        0.1, ge=0, le=1, description="Share of conflicting claims above which every report flags for review."
    )
    results_per_agent: Annotated[int, Option(keyword="max_results_per_agent", metavar="N")] = Field(
        12, ge=1, le=100, description="Search results per agent."
    )


def _corpus_means_local(given: dict[str, Any]) -> dict[str, Any]:
    """A corpus named per run implies the local provider (unless the caller names one)."""
    return {"provider": "local"} if "corpus" in given else {}


RESEARCH_OPTIONS = Options(ResearchSettings, SearchSettings, complete=_corpus_means_local)


__all__ = ["RESEARCH_OPTIONS", "ResearchSettings"]
