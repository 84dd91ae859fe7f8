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
from critic.settings import CRITIC_OPTIONS


async def acritique(
    ideas: CriticInput | dict[str, Any],
    *,
    config: Path | None = None,
    address: str | None = None,
    **options: Any,
) -> CriticOutput:
    """Evaluate the ideas and select the best; ``options`` are the keywords of ``CRITIC_OPTIONS``
    (``market_weight``, ``synergy_weight``, ``samples``, ``timeout_s``, ``industry``, ``use_cache`` ...).
    Raises MagiError subclasses (CriticError, ConfigError ...)."""
    data = ideas if isinstance(ideas, CriticInput) else CriticInput.model_validate(ideas)
    settings = CRITIC_OPTIONS.apply(load_settings(config), CRITIC_OPTIONS.from_keywords(options))
    preflight(settings)
    async with ray_runtime(settings, address=address) as runtime:
        return await evaluate_ideas(data, settings, runtime, store=open_store(settings))


def critique(ideas: CriticInput | dict[str, Any], **options: Any) -> CriticOutput:
    """:func:`acritique` for callers without an event loop."""
    return asyncio.run(acritique(ideas, **options))


__all__ = ["acritique", "critique"]
