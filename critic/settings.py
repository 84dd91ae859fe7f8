"""Settings section ``critic:`` (the spec's weights, timeout, concurrency, budget and temperature).

The fields marked :class:`~core.options.Option` (and the ``weights`` shorthand) are the per-run
options of ``magi critic``, ``POST /critic/evaluate`` and :func:`critic.api.critique`, all derived
from :data:`CRITIC_OPTIONS`.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar

from pydantic import Field

from core.options import Option, Options, Shorthand
from core.settings import Section

_WEIGHTS = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*:\s*(\d+(?:\.\d+)?)\s*$")


def split_weights(text: str) -> dict[str, Any]:
    """``"60:40"`` -> market 60, synergy 40; the two must add up to 100."""
    found = _WEIGHTS.match(text)
    if not found:
        raise ValueError("is not MARKET:SYNERGY (e.g. 60:40)")
    market, synergy = float(found.group(1)), float(found.group(2))
    if abs(market + synergy - 100.0) > 1e-6:
        raise ValueError("has market and synergy weights that do not add up to 100 (e.g. 60:40)")
    return {"market_weight": market, "synergy_weight": synergy}


class CriticSettings(Section):
    name: ClassVar[str] = "critic"
    shorthands: ClassVar[tuple[Shorthand, ...]] = (
        Shorthand(
            "weights",
            split_weights,
            "market:synergy weights adding up to 100 (default 50:50)",
            metavar="M:S",
        ),
    )

    market_weight: Annotated[float, Option(metavar="X")] = Field(
        50.0, ge=0, le=100, description="Weight of the market score (with synergy: 100)."
    )
    synergy_weight: Annotated[float, Option(metavar="X")] = Field(
        50.0, ge=0, le=100, description="Weight of the synergy score (with market: 100)."
    )
    min_total: Annotated[float, Option(metavar="POINTS")] = Field(
        40.0,
        ge=0,
        le=100,
        description="Lowest total (of 100) an idea needs to be selected; below it for every idea, none is "
        "(selectedIdea null, with the reason). 40: the prompt's 'weak' band starts there.",
    )
    samples: Annotated[int, Option(metavar="K")] = Field(
        1, ge=1, le=9, description="Independent LLM judgements per idea (median and spread)."
    )
    timeout_s: Annotated[float, Option("timeout", keyword="timeout_s", metavar="SECONDS")] = Field(
        30.0, gt=0, le=3600, description="Overall timeout of one evaluation in seconds."
    )
    max_workers: int = Field(
        5, ge=1, le=10, description="Ideas judged at once per replica (one long-lived worker actor each)."
    )
    replicas: int = Field(1, ge=1, le=64, description="Serve replicas of the critic app (zero CPUs each).")
    token_budget: int = Field(
        8400,
        ge=100,
        description="Tokens one idea judgement may use before a warning (prompt + answer; sized by "
        "benchmarks/critic_tokens.py: longest prompt + max_tokens, counted by a real tokenizer).",
    )
    temperature: float = Field(0.4, ge=0.3, le=0.5, description="Sampling temperature of the judge (spec: 0.3-0.5).")
    max_tokens: int = Field(
        4200,
        ge=100,
        le=16000,
        description="Longest answer of one judgement, in tokens: a full-length answer (every text at the "
        "prompt's 200-character limit) plus a quarter, counted by benchmarks/critic_tokens.py.",
    )
    industry: Annotated[str | None, Option(metavar="NAME")] = Field(
        None, pattern=r"^[a-z0-9_]+$", description="Industry profile data/critic/industries/<name>.yaml (unset: none)."
    )
    cache: Annotated[bool, Option(off="no-cache", keyword="use_cache")] = Field(
        True, description="Reuse a stored evaluation of the same idea (content, profile, model)."
    )


def _other_weight(given: dict[str, Any]) -> dict[str, Any]:
    """One weight given alone (a number): the other is what is left of 100."""
    market, synergy = given.get("market_weight"), given.get("synergy_weight")
    if isinstance(market, int | float) and synergy is None:
        return {"synergy_weight": 100 - market}
    if isinstance(synergy, int | float) and market is None:
        return {"market_weight": 100 - synergy}
    return {}


CRITIC_OPTIONS = Options(CriticSettings, complete=_other_weight)


__all__ = ["CRITIC_OPTIONS", "CriticSettings", "split_weights"]
