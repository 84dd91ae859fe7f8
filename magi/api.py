"""Ask the council from Python: one deliberation, or ``runs`` of them with different seeds."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Mapping, Sequence
from typing import Any

from core.llm import LLMClient, require_llm
from core.runtime import Runtime
from core.settings import LLMSettings, Settings
from magi.events import EventCallback
from magi.models import Deliberation, SageName
from magi.output import RunsReport, summarize_runs
from magi.protocol import deliberate
from magi.settings import COUNCIL_OPTIONS, CouncilSettings


def check_llm(llm: LLMSettings, command: str) -> None:
    """Every sage has a model that can answer it (LLMNotConfiguredError, exit 5, before any work)."""
    for sage in SageName:
        require_llm(llm, command, role=sage.role)


async def ask(
    question: str,
    settings: Settings,
    runtime: Runtime,
    *,
    overrides: Mapping[SageName, Sequence[tuple[str, str]]] | None = None,
    clients: Mapping[SageName, LLMClient] | None = None,
    on_event: EventCallback | None = None,
    **options: Any,
) -> Deliberation | RunsReport:
    """One deliberation (``council.runs`` = 1) or a :class:`RunsReport` over ``council.runs`` seeds, run
    concurrently; ``options`` are the keywords of ``COUNCIL_OPTIONS`` (``rounds``, ``quorum``, ``seed`` ...)
    on top of ``settings``."""
    if options:
        settings = COUNCIL_OPTIONS.apply(settings, COUNCIL_OPTIONS.from_keywords(options))
    cfg = CouncilSettings.of(settings)
    if clients is None:
        check_llm(settings.llm, "magi ask")
    if cfg.runs == 1:
        return await deliberate(
            question, settings, runtime, seed=cfg.seed, overrides=overrides, clients=clients, on_event=on_event
        )
    base = cfg.seed if cfg.seed is not None else random.SystemRandom().randrange(2**31 - cfg.runs)
    seeds = [base + i for i in range(cfg.runs)]
    results = await asyncio.gather(
        *(
            deliberate(question, settings, runtime, seed=s, overrides=overrides, clients=clients, on_event=on_event)
            for s in seeds
        )
    )
    return summarize_runs(list(results))


__all__ = ["ask", "check_llm"]
