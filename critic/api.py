"""Standalone use from Python, with the spec's names (``marketWeight``/``synergyWeight`` as keywords).

    from critic.api import critique
    out = critique({"ideas": [...]}, market_weight=60, synergy_weight=40)
    print(out.selected_idea.title)

Uses Ray when it is already initialised (a notebook, a job), else starts a local Ray for the call
and stops it afterwards; ``acritique`` is the same for callers inside an event loop. Options left
out come from ``config`` (or ``magi.yaml``) and ``MAGI_*``, as for the CLI.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from core.runtime import ray_runtime
from core.settings import load_settings
from core.store import open_store
from critic.engine import evaluate_ideas, preflight
from critic.models import CriticInput, CriticOutput
from critic.options import CriticOptions, apply_options

API_NAMES = {
    "critic.market_weight": "market_weight",
    "critic.synergy_weight": "synergy_weight",
    "critic.samples": "samples",
    "critic.timeout_s": "timeout_s",
    "critic.industry": "industry",
}


async def acritique(
    ideas: CriticInput | dict[str, Any],
    *,
    market_weight: float | None = None,
    synergy_weight: float | None = None,
    samples: int | None = None,
    timeout_s: float | None = None,
    industry: str | None = None,
    use_cache: bool = True,
    config: Path | None = None,
    address: str | None = None,
) -> CriticOutput:
    """Evaluate the ideas and select the best; raises MagiError subclasses (CriticError, ConfigError ...)."""
    data = ideas if isinstance(ideas, CriticInput) else CriticInput.model_validate(ideas)
    weights = None
    if market_weight is not None or synergy_weight is not None:
        market = market_weight if market_weight is not None else 100 - (synergy_weight or 0)
        synergy = synergy_weight if synergy_weight is not None else 100 - market
        weights = f"{market:g}:{synergy:g}"
    options = CriticOptions(
        weights=weights, samples=samples, timeout_s=timeout_s, industry=industry, no_cache=not use_cache
    )
    settings = apply_options(load_settings(config), options, origin="argument", names=API_NAMES)
    preflight(settings)
    async with ray_runtime(settings, address=address) as runtime:
        return await evaluate_ideas(data, settings, runtime, store=open_store(settings))


def critique(ideas: CriticInput | dict[str, Any], **options: Any) -> CriticOutput:
    """:func:`acritique` for callers without an event loop."""
    return asyncio.run(acritique(ideas, **options))


__all__ = ["API_NAMES", "acritique", "critique"]
