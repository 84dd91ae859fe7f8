"""Agent search strategies, loaded from the bundled ``data/research/strategies.yaml``."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import ClassVar

from pydantic import Field

from core.policy import PolicyModel, load_policy
from core.resources import data_path
from research.models import AgentStrategy

STRATEGIES_FILE = data_path("research", "strategies.yaml")


class StrategyFile(PolicyModel):
    """The file's shape: the strategies agents take in turn (the file's header explains the keys)."""

    policy_name: ClassVar[str] = "strategy file"

    strategies: list[AgentStrategy] = Field(min_length=1)


@cache
def _load(path: Path) -> tuple[AgentStrategy, ...]:
    return tuple(load_policy(path, StrategyFile).strategies)


def strategy_for(agent_id: int, path: Path = STRATEGIES_FILE) -> AgentStrategy:
    """Strategy of agent ``agent_id`` (1-based); agents beyond the list reuse it cyclically."""
    strategies = _load(path)
    base = strategies[(agent_id - 1) % len(strategies)]
    return base.model_copy(update={"agent_id": agent_id})


__all__ = [
    "STRATEGIES_FILE",
    "StrategyFile",
    "strategy_for",
]
