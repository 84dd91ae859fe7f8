"""The options of one critic run, and the ONE mapping from them onto settings (CLI, HTTP, Python API)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from core.errors import ConfigError
from core.settings import Settings

OPTION_NAMES = {
    "critic.market_weight": "weights",
    "critic.synergy_weight": "weights",
    "critic.samples": "samples",
    "critic.timeout_s": "timeout",
    "critic.industry": "industry",
    "critic.cache": "no_cache",
}
_WEIGHTS = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*:\s*(\d+(?:\.\d+)?)\s*$")


def parse_weights(text: str, name: str = "--weights") -> tuple[float, float]:
    """``"60:40"`` -> (60.0, 40.0); the two must add up to 100."""
    found = _WEIGHTS.match(text)
    if not found:
        raise ConfigError(f"{name} {text!r} is not MARKET:SYNERGY (e.g. 60:40)")
    market, synergy = float(found.group(1)), float(found.group(2))
    if abs(market + synergy - 100.0) > 1e-6:
        raise ConfigError(f"{name} {text!r}: market and synergy weights must add up to 100 (e.g. 60:40)")
    return market, synergy


class CriticOptions(BaseModel):
    """What a caller may choose per run; None means "as configured"."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    weights: str | None = None
    samples: int | None = None
    timeout_s: float | None = None
    industry: str | None = None
    no_cache: bool = False

    def overrides(self, name: str = "--weights") -> dict[str, Any]:
        market, synergy = parse_weights(self.weights, name) if self.weights is not None else (None, None)
        return {
            "critic": {
                "market_weight": market,
                "synergy_weight": synergy,
                "samples": self.samples,
                "timeout_s": self.timeout_s,
                "industry": self.industry,
                "cache": False if self.no_cache else None,
            }
        }


def apply_options(
    settings: Settings, options: CriticOptions, origin: str = "option", names: Mapping[str, str] = OPTION_NAMES
) -> Settings:
    """``settings`` with the run's options on top; a bad option is a ConfigError naming it as the caller did."""
    return settings.updated(options.overrides(names.get("critic.market_weight", "weights")), origin=origin, names=names)


__all__ = ["OPTION_NAMES", "CriticOptions", "apply_options", "parse_weights"]
