"""Settings section ``research:`` (the spec's ConsensusResearchConfig, minus the search provider)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from core.settings import Section


class ResearchSettings(Section):
    name: ClassVar[str] = "research"

    agents: int = Field(3, ge=1, le=16, description="Parallel research agents.")
    iterations: int = Field(3, ge=1, le=10, description="Refinement iterations (may stop early).")
    agent_timeout_s: float = Field(300.0, gt=0, le=3600, description="Timeout of one agent in seconds.")
    conflict_threshold: float = Field(
        0.1, ge=0, le=1, description="Share of conflicting claims above which every report flags for review."
    )
    results_per_agent: int = Field(12, ge=1, le=100, description="Search results per agent.")


__all__ = ["ResearchSettings"]
