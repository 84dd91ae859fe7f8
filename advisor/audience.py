"""Who a generated file is for: ``internal`` (the owner's own analysis) or ``external`` (the buyer).

The owner's strategy must never reach the counterparty, whatever a model asks for. So the tools, not
the prompt, decide: a text or chart that holds an internal word (``data/advisor/audience.yaml``) or
an internal figure of the session's cost calculations (the target price, the profits, a scenario
price the owner did not choose to disclose) is internal, and an external document holding one, or
attaching an internal file, is refused with a message that says what to remove.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from decimal import Decimal
from functools import cache
from typing import Any, ClassVar

from pydantic import Field

from advisor.labels import labels, yen
from core.policy import PolicyModel, load_policy
from core.resources import data_path

SCENARIOS = ("premium", "standard", "minimum")
_NUMBER = re.compile(r"\d[\d,，]*(?:\.\d+)?")


class AudienceRules(PolicyModel):
    policy_name: ClassVar[str] = "advisor audience file"
    internal_words: list[str] = Field(min_length=1)


@cache
def rules() -> AudienceRules:
    return load_policy(data_path("advisor", "audience.yaml"), AudienceRules)


def cost_results(earlier: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The outputs of this session's cost calculations, oldest first."""
    return [r["output"] for r in earlier if r.get("tool") == "calculate_cost_impact" and "output" in r]


def internal_amounts(earlier: Iterable[dict[str, Any]], disclosed: Iterable[str] = ()) -> dict[Decimal, str]:
    """Yen amounts of the session that are the owner's alone, each with what it is (in Japanese)."""
    shown = set(disclosed)
    found: dict[Decimal, str] = {}
    for out in cost_results(earlier):
        scenarios = out.get("scenarios", {})
        disclosed_prices = {Decimal(str(scenarios[k]["new_price"])) for k in shown if k in scenarios}
        target = out.get("target_price")
        if target:
            found[Decimal(str(target["price"]))] = "目標利益率での価格"
        for key in SCENARIOS:
            s = scenarios.get(key)
            if not s:
                continue
            found.setdefault(Decimal(str(s["new_profit"])), f"{labels().scenarios[key]}の利益額")  # type: ignore[index]
            if key not in shown:
                found.setdefault(Decimal(str(s["new_price"])), f"{labels().scenarios[key]}の価格")  # type: ignore[index]
        for price in disclosed_prices:  # a price the owner presents is not secret, whatever else it equals
            found.pop(price, None)
    return {amount: what for amount, what in found.items() if amount > 0}


def numbers_in(text: str) -> set[Decimal]:
    out = set()
    for match in _NUMBER.findall(text):
        try:
            out.add(Decimal(match.replace(",", "").replace("，", "")))
        except ArithmeticError:
            continue
    return out


def internal_findings(texts: Iterable[str], amounts: dict[Decimal, str]) -> list[str]:
    """What in ``texts`` is internal: each internal word and each internal amount (as 1,234,567円)."""
    joined = "\n".join(texts)
    found = [f"「{w}」" for w in rules().internal_words if w in joined]
    found += [f"{what}（{yen(amount)}）" for amount, what in amounts.items() if amount in numbers_in(joined)]
    return found


__all__ = ["SCENARIOS", "AudienceRules", "cost_results", "internal_amounts", "internal_findings", "numbers_in", "rules"]
