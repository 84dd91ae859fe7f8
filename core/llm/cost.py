"""What LLM calls cost: the editable price list (``data/llm/prices.yaml``) and a running meter.

A model without a price is priced ``None`` ("unknown"), never 0: a total that silently leaves out
calls would look cheaper than it was. The meter therefore counts unpriced calls separately.
"""

from __future__ import annotations

import threading
from datetime import date
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from core.errors import ConfigError
from core.llm.base import LLMResponse, Usage
from core.yamlfile import read_yaml

# The one place that knows where the price list lives (data/ may move to package resources).
PRICES_PATH = Path(__file__).resolve().parent.parent.parent / "data" / "llm" / "prices.yaml"
PER_MILLION = 1_000_000


class ModelPrice(BaseModel):
    """USD per million tokens of one model, with where the figures come from."""

    model_config = ConfigDict(extra="forbid")

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cache_write: float = Field(ge=0)
    cache_read: float = Field(ge=0)
    source: str
    as_of: date


class PriceList(BaseModel):
    """The parsed price file (``version: 1``)."""

    model_config = ConfigDict(extra="forbid")

    version: Literal[1]
    models: dict[str, ModelPrice]

    def price(self, model: str) -> ModelPrice | None:
        return self.models.get(model)


def load_prices(path: Path = PRICES_PATH) -> PriceList:
    """Read and validate a price file; a bad one is a ``ConfigError`` naming the file and field."""
    raw = read_yaml(path, "LLM price list")
    try:
        return PriceList.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"LLM price list {path} is invalid ({problems}); fix the file (see its header)") from exc


@cache
def default_prices() -> PriceList:
    """The bundled price list, read once per process."""
    return load_prices()


def call_cost(model: str, usage: Usage, prices: PriceList | None = None) -> float | None:
    """USD cost of one call, or None when ``model`` has no price."""
    price = (prices or default_prices()).price(model)
    if price is None:
        return None
    return (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_creation_input_tokens * price.cache_write
        + usage.cache_read_input_tokens * price.cache_read
    ) / PER_MILLION


class UsageSummary(BaseModel):
    """Totals of a run for reports: calls, tokens, and cost ("unknown" when any call was unpriced)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    cost_usd: float | Literal["unknown"] = 0.0
    priced_cost_usd: float = 0.0  # the part of the cost that has a price
    unpriced_models: list[str] = Field(default_factory=list)

    def cost_text(self) -> str:
        return "unknown" if self.cost_usd == "unknown" else f"${self.cost_usd:.4f}"


class UsageMeter:
    """Thread-safe running total of calls, tokens and cost (add responses as they arrive)."""

    def __init__(self, prices: PriceList | None = None) -> None:
        self._lock = threading.Lock()
        self._prices = prices
        self._total = Usage()
        self._calls = 0
        self._cost = 0.0
        self._unpriced: set[str] = set()

    def add(self, usage: Usage | LLMResponse, model: str | None = None) -> None:
        """Count one call; a response brings its own model, plain usage is priced by ``model``."""
        item = usage.usage if isinstance(usage, LLMResponse) else usage
        name = usage.model if isinstance(usage, LLMResponse) else (model or "")
        cost = call_cost(name, item, self._prices) if name else None
        with self._lock:
            self._total = self._total + item
            self._calls += 1
            if cost is None:
                self._unpriced.add(name or "(unnamed model)")
            else:
                self._cost += cost

    @property
    def total(self) -> Usage:
        with self._lock:
            return self._total

    @property
    def calls(self) -> int:
        with self._lock:
            return self._calls

    @property
    def cost_usd(self) -> float | None:
        """Total USD, or None when some call's model has no price."""
        with self._lock:
            return None if self._unpriced else self._cost

    def summary(self) -> UsageSummary:
        with self._lock:
            total = self._total
            return UsageSummary(
                calls=self._calls,
                input_tokens=total.input_tokens,
                output_tokens=total.output_tokens,
                cache_creation_input_tokens=total.cache_creation_input_tokens,
                cache_read_input_tokens=total.cache_read_input_tokens,
                cost_usd="unknown" if self._unpriced else round(self._cost, 6),
                priced_cost_usd=round(self._cost, 6),
                unpriced_models=sorted(self._unpriced),
            )

    def __getstate__(self) -> dict[str, Any]:
        # Locks do not pickle; a copy (e.g. sent to a Ray worker) gets its own.
        with self._lock:
            return {
                "prices": self._prices,
                "total": self._total,
                "calls": self._calls,
                "cost": self._cost,
                "unpriced": set(self._unpriced),
            }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._lock = threading.Lock()
        self._prices = state["prices"]
        self._total = state["total"]
        self._calls = state["calls"]
        self._cost = state["cost"]
        self._unpriced = state["unpriced"]


__all__ = [
    "PER_MILLION",
    "PRICES_PATH",
    "ModelPrice",
    "PriceList",
    "UsageMeter",
    "UsageSummary",
    "call_cost",
    "default_prices",
    "load_prices",
]
