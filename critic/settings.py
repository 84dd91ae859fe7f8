"""Settings section ``critic:`` (the spec's weights, timeout, concurrency, budget and temperature)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from core.settings import Section


class CriticSettings(Section):
    name: ClassVar[str] = "critic"

    market_weight: float = Field(50.0, ge=0, le=100, description="Weight of the market score (with synergy: 100).")
    synergy_weight: float = Field(50.0, ge=0, le=100, description="Weight of the synergy score (with market: 100).")
    samples: int = Field(1, ge=1, le=9, description="Independent LLM judgements per idea (median and spread).")
    timeout_s: float = Field(30.0, gt=0, le=3600, description="Overall timeout of one evaluation in seconds.")
    max_workers: int = Field(5, ge=1, le=10, description="Ideas judged at once (one worker actor each).")
    token_budget: int = Field(2000, ge=100, description="Tokens one idea judgement may use before a warning.")
    temperature: float = Field(0.4, ge=0.3, le=0.5, description="Sampling temperature of the judge (spec: 0.3-0.5).")
    max_tokens: int = Field(900, ge=100, le=4000, description="Longest answer of one judgement, in tokens.")
    industry: str | None = Field(
        None, pattern=r"^[a-z0-9_]+$", description="Industry profile data/critic/industries/<name>.yaml (unset: none)."
    )
    cache: bool = Field(True, description="Reuse a stored evaluation of the same idea (content, profile, model).")


__all__ = ["CriticSettings"]
