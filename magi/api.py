"""Ask the council from Python: one deliberation, or ``runs`` of them with different seeds."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Mapping, Sequence

from core.errors import ConfigError, LLMNotConfiguredError
from core.llm import LLMClient, require_llm
from core.runtime import Runtime
from core.settings import Settings
from magi.events import EventCallback
from magi.models import Deliberation, SageName
from magi.output import RunsReport, summarize_runs
from magi.protocol import deliberate
from magi.settings import MagiSettings


def check_llm(settings: Settings, command: str) -> None:
    """No LLM configured is bad settings (exit 2), reported before any work."""
    try:
        for sage in SageName:
            require_llm(settings, command, role=sage.role)
    except LLMNotConfiguredError as exc:
        raise ConfigError(str(exc)) from exc


async def ask(
    question: str,
    settings: Settings,
    runtime: Runtime,
    *,
    overrides: Mapping[SageName, Sequence[tuple[str, str]]] | None = None,
    clients: Mapping[SageName, LLMClient] | None = None,
    on_event: EventCallback | None = None,
) -> Deliberation | RunsReport:
    """One deliberation (``magi.runs`` = 1) or a :class:`RunsReport` over ``magi.runs`` seeds, run concurrently."""
    cfg = MagiSettings.of(settings)
    if clients is None:
        check_llm(settings, "magi ask")
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
