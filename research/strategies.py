"""Agent search strategies, loaded from ``data/research/strategies.yaml``."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from pydantic import ValidationError

from core.errors import ConfigError
from core.models import AgentStrategy
from core.resources import data_path
from core.yamlfile import read_yaml

STRATEGIES_FILE = data_path("research", "strategies.yaml")


@cache
def _load(path: Path) -> tuple[AgentStrategy, ...]:
    raw = read_yaml(path, "strategy file") or {}
    try:
        strategies = tuple(AgentStrategy.model_validate(s) for s in raw["strategies"])
    except (KeyError, TypeError, ValidationError) as exc:
        raise ConfigError(f"strategy file {path} is unusable: {exc}; restore it from the repository") from exc
    if not strategies:
        raise ConfigError(f"strategy file {path} lists no strategies")
    return strategies


def strategy_for(agent_id: int, path: Path = STRATEGIES_FILE) -> AgentStrategy:
    """Strategy of agent ``agent_id`` (1-based); agents beyond the list reuse it cyclically."""
    strategies = _load(path)
    base = strategies[(agent_id - 1) % len(strategies)]
    return base.model_copy(update={"agent_id": agent_id})
