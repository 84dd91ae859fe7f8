"""What a person reads instead of an identifier: Japanese names from ``data/advisor/labels.yaml`` and
amounts and rates written the way a Japanese business document writes them (1,234,567円, 12.75%)."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from functools import cache
from typing import ClassVar, Literal

from core.policy import PolicyModel, load_policy
from core.resources import data_path

Audience = Literal["internal", "external"]


class LabelFile(PolicyModel):
    policy_name: ClassVar[str] = "advisor labels file"
    cost_items: dict[str, str]
    scenarios: dict[Literal["premium", "standard", "minimum"], str]
    price_basis: dict[Literal["given", "current_profit_margin", "target_profit_margin"], str]
    tools: dict[str, str]
    audiences: dict[Audience, str]
    notices: dict[str, str]
    file_names: dict[str, str]


@cache
def labels() -> LabelFile:
    return load_policy(data_path("advisor", "labels.yaml"), LabelFile)


def item_label(key: str, given: str | None = None) -> str:
    """The Japanese name of cost item ``key``: the caller's label, else the mapping, else the key."""
    return given or labels().cost_items.get(key, key)


def tool_label(name: str) -> str:
    return labels().tools.get(name, name)


def yen(value: object) -> str:
    """``2500000`` -> ``2,500,000円`` (whole yen, half up)."""
    amount = Decimal(str(value)).quantize(Decimal(1), rounding=ROUND_HALF_UP)
    return f"{amount:,}円"


def percent(fraction: object, signed: bool = False) -> str:
    """``0.1275`` -> ``12.75%`` (at most two decimals, trailing zeros dropped); ``signed`` adds +."""
    value = (Decimal(str(fraction)) * 100).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    text = f"{value:f}".rstrip("0").rstrip(".") if "." in f"{value:f}" else f"{value:f}"
    if signed and value > 0:
        text = "+" + text
    return text + "%"


def as_number(text: str) -> Decimal | None:
    """``text`` as a number when it is one (commas, 円 and % allowed around it), else None."""
    cleaned = text.strip().replace(",", "").replace("，", "").removesuffix("円").strip()
    try:
        value = Decimal(cleaned.rstrip("%％").strip())
    except InvalidOperation:
        return None
    return value if value.is_finite() else None


__all__ = ["Audience", "LabelFile", "as_number", "item_label", "labels", "percent", "tool_label", "yen"]
