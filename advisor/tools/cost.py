"""``calculate_cost_impact``: the cost increase and the 松竹梅 price scenarios, in exact decimals.

Definitions (docs/systems/advisor.md repeats them):

- new cost of an item = amount x (1 + change); the increase and its rate follow from the totals;
- current price P0: ``current_price``, else the price at ``current_profit_margin``, else at
  ``target_profit_margin`` (P0 = C0 / (1 - margin)); the output says which assumption was used;
- 梅 minimum: pass on the cost increase as an amount (profit in yen kept, margin falls);
- 竹 standard: keep the current margin rate (P = C1 / (1 - m0));
- 松 premium: reach max(target, m0 + ``premium_margin_uplift``) (P = C1 / (1 - m));
- break-even: P = C1; target price: C1 / (1 - target).

Money is rounded to whole yen and rates to four decimals only in the output (ROUND_HALF_UP);
every step before that is exact ``Decimal`` arithmetic.
"""

from __future__ import annotations

import io
from decimal import ROUND_HALF_UP, Decimal, DecimalException, localcontext
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from advisor.labels import item_label, labels, percent, yen
from advisor.tools.base import GeneratedFile, ToolContext, ToolInput
from core.errors import InputError

NAME = "calculate_cost_impact"
YEN = Decimal("1")
RATE = Decimal("0.0001")
RATIO_TOLERANCE = Decimal("0.005")
LEGAL_BASIS = (
    "労務費の適切な転嫁のための価格交渉に関する指針（内閣官房・公正取引委員会、2023年11月29日、"
    "2026年1月1日改正）: 最低賃金や春季労使交渉の妥結額など公表資料を根拠に、受注者が自ら希望額を示すことが"
    "求められる行動とされています。取適法（2026年1月1日施行）は、協議に応じない一方的な代金決定を禁止しています。"
)

# Bounds on what a caller may send, checked before any arithmetic: a yen amount beyond a quadrillion or
# a figure of more digits than the arithmetic carries (1E+40, 1E+999999999) is refused, not overflowed.
MAX_YEN = Decimal("1e15")
Yen = Annotated[Decimal, Field(allow_inf_nan=False, ge=-MAX_YEN, le=MAX_YEN, max_digits=24)]
Fraction = Annotated[Decimal, Field(allow_inf_nan=False, ge=-1000, le=1000, max_digits=24)]


class CostItem(ToolInput):
    amount: Yen | None = Field(None, description="Current cost of the item in yen (required).")
    ratio: Fraction | None = Field(None, description="Share of the total cost (optional; checked against amount).")
    label: str | None = Field(None, max_length=40, description="費目の日本語名（省略可）。")


class CostImpactInput(ToolInput):
    current_cost_structure: dict[str, CostItem] = Field(
        description="Cost items (material_cost, labor_cost, energy_cost, overhead, ...) with amount and ratio."
    )
    price_changes: dict[str, Fraction] = Field(
        default_factory=dict, description="Change per item as a fraction: 0.20 = +20 %. Items left out: unchanged."
    )
    target_profit_margin: Fraction | None = Field(None, description="Profit margin to reach, e.g. 0.08.")
    current_price: Yen | None = Field(None, description="Current selling price (same period as the costs).")
    current_profit_margin: Fraction | None = Field(None, description="Current margin, used when no current_price.")
    premium_margin_uplift: Fraction = Field(Decimal("0.02"), description="松: margin points above the current one.")
    export_xlsx: bool = Field(False, description="Also write an xlsx with the formulas.")


class CostLine(BaseModel):
    item: str
    label: str = Field(description="The item's Japanese name, as documents and charts show it.")
    current_amount: Decimal
    current_ratio: Decimal
    change_rate: Decimal
    new_amount: Decimal
    increase: Decimal


class Scenario(BaseModel):
    label: str
    basis: str
    new_price: Decimal
    price_increase: Decimal
    price_increase_rate: Decimal
    new_profit: Decimal
    new_profit_margin: Decimal


class PricePoint(BaseModel):
    price: Decimal
    price_increase_rate: Decimal


class CostImpactOutput(BaseModel):
    current_total_cost: Decimal
    new_total_cost: Decimal
    cost_increase: Decimal
    cost_increase_rate: Decimal
    lines: list[CostLine]
    current_price: Decimal
    current_price_basis: Literal["given", "current_profit_margin", "target_profit_margin"]
    current_profit_margin: Decimal
    scenarios: dict[str, Scenario]
    breakeven_analysis: PricePoint
    target_price: PricePoint | None
    calculation_details: str
    legal_basis: str
    files: list[GeneratedFile] = Field(default_factory=list)


def _money(value: Decimal) -> Decimal:
    return value.quantize(YEN, rounding=ROUND_HALF_UP)


def _rate(value: Decimal) -> Decimal:
    return value.quantize(RATE, rounding=ROUND_HALF_UP)


def _margin(name: str, value: Decimal | None) -> None:
    if value is not None and not Decimal(0) <= value < Decimal(1):
        raise InputError(f"{name} is {value}; give a fraction from 0 to below 1 (0.08 = 8 %)")


def check(data: CostImpactInput) -> dict[str, Decimal]:
    """The amounts per item, after every rule a person would check by hand; InputError names the field."""
    if not data.current_cost_structure:
        raise InputError("current_cost_structure is empty; give at least one item with its amount")
    amounts: dict[str, Decimal] = {}
    for item, cost in data.current_cost_structure.items():
        where = f"current_cost_structure.{item}"
        if cost.amount is None:
            raise InputError(f"{where}.amount is missing; give the item's current cost in yen")
        if not cost.amount.is_finite() or cost.amount < 0:
            raise InputError(f"{where}.amount is {cost.amount}; a cost cannot be negative")
        if cost.ratio is not None and (not cost.ratio.is_finite() or cost.ratio < 0 or cost.ratio > 1):
            raise InputError(f"{where}.ratio is {cost.ratio}; give a share from 0 to 1")
        amounts[item] = cost.amount
    total = sum(amounts.values(), Decimal(0))
    if total <= 0:
        raise InputError("current_cost_structure: the amounts add up to 0; give the current costs in yen")
    for item, cost in data.current_cost_structure.items():
        if cost.ratio is None:
            continue
        actual = amounts[item] / total
        if abs(actual - cost.ratio) > RATIO_TOLERANCE:
            raise InputError(
                f"current_cost_structure.{item}.ratio is {cost.ratio} but its amount {amounts[item]} is "
                f"{_rate(actual)} of the total {total}; correct the ratio or the amount (or leave the ratio out)"
            )
    for item, change in data.price_changes.items():
        if item not in amounts:
            known = ", ".join(amounts)
            raise InputError(f"price_changes.{item} names no item of current_cost_structure ({known})")
        if not change.is_finite() or change <= -1:
            raise InputError(f"price_changes.{item} is {change}; a change must be above -1 (-100 %)")
    _margin("target_profit_margin", data.target_profit_margin)
    _margin("current_profit_margin", data.current_profit_margin)
    if data.current_price is not None and (not data.current_price.is_finite() or data.current_price <= 0):
        raise InputError(f"current_price is {data.current_price}; give the current selling price in yen (> 0)")
    if data.premium_margin_uplift < 0 or data.premium_margin_uplift >= 1:
        raise InputError(f"premium_margin_uplift is {data.premium_margin_uplift}; give a fraction from 0 to below 1")
    return amounts


def compute(data: CostImpactInput) -> CostImpactOutput:
    """The whole calculation (no files); figures whose result cannot be carried exactly (a margin a
    hair below 100 % makes the price unbounded) are an InputError, never an arithmetic exception."""
    try:
        return _compute(data)
    except DecimalException:
        raise InputError(
            "these figures give a price too large to compute exactly; check the margins (a margin close to "
            "100 % makes the price unbounded) and the amounts"
        ) from None


def _compute(data: CostImpactInput) -> CostImpactOutput:
    amounts = check(data)
    with localcontext() as ctx:
        ctx.prec = 40
        c0 = sum(amounts.values(), Decimal(0))
        lines, new_amounts = [], {}
        for item, amount in amounts.items():
            change = data.price_changes.get(item, Decimal(0))
            new = amount * (1 + change)
            new_amounts[item] = new
            lines.append(
                CostLine(
                    item=item,
                    label=item_label(item, data.current_cost_structure[item].label),
                    current_amount=_money(amount),
                    current_ratio=_rate(amount / c0),
                    change_rate=change,
                    new_amount=_money(new),
                    increase=_money(new - amount),
                )
            )
        c1 = sum(new_amounts.values(), Decimal(0))
        basis: Literal["given", "current_profit_margin", "target_profit_margin"]
        if data.current_price is not None:
            p0, basis = data.current_price, "given"
        elif data.current_profit_margin is not None:
            p0, basis = c0 / (1 - data.current_profit_margin), "current_profit_margin"
        elif data.target_profit_margin is not None:
            p0, basis = c0 / (1 - data.target_profit_margin), "target_profit_margin"
        else:
            raise InputError(
                "current_price is missing: give current_price, or current_profit_margin (or target_profit_margin) "
                "so the current price can be derived"
            )
        m0 = (p0 - c0) / p0

        def scenario(key: str, price: Decimal, basis_text: str) -> Scenario:
            return Scenario(
                label=labels().scenarios[key],  # type: ignore[index]
                basis=basis_text,
                new_price=_money(price),
                price_increase=_money(price - p0),
                price_increase_rate=_rate(price / p0 - 1),
                new_profit=_money(price - c1),
                new_profit_margin=_rate((price - c1) / price),
            )

        basis_text = labels().price_basis[basis]
        premium_margin = max(data.target_profit_margin or Decimal(0), m0 + data.premium_margin_uplift)
        if premium_margin >= 1:
            raise InputError(f"the premium margin {premium_margin} is not below 1; lower premium_margin_uplift")
        scenarios = {
            "premium": scenario("premium", c1 / (1 - premium_margin), f"利益率{percent(premium_margin)}を確保する価格"),
            "standard": scenario(
                "standard", c1 / (1 - m0) if m0 < 1 else c1, f"現在の利益率{percent(m0)}を維持する価格"
            ),
            "minimum": scenario("minimum", p0 + (c1 - c0), "コスト増加額をそのまま価格に反映（利益額を維持）"),
        }
        target = None
        if data.target_profit_margin is not None:
            tp = c1 / (1 - data.target_profit_margin)
            target = PricePoint(price=_money(tp), price_increase_rate=_rate(tp / p0 - 1))
        details = (
            f"現在の総コスト {yen(_money(c0))} → 変動後 {yen(_money(c1))}（増加 {yen(_money(c1 - c0))}、"
            f"{percent(_rate((c1 - c0) / c0), signed=True)}）。現在価格 {yen(_money(p0))}（{basis_text}）、"
            f"現在利益率 {percent(_rate(m0))}。"
            "各項目の新コスト = 現在額 ×（1 + 変動率）。損益分岐価格 = 新総コスト。"
            "目標利益率 m の価格 = 新総コスト ÷（1 − m）。"
        )
        return CostImpactOutput(
            current_total_cost=_money(c0),
            new_total_cost=_money(c1),
            cost_increase=_money(c1 - c0),
            cost_increase_rate=_rate((c1 - c0) / c0),
            lines=lines,
            current_price=_money(p0),
            current_price_basis=basis,
            current_profit_margin=_rate(m0),
            scenarios=scenarios,
            breakeven_analysis=PricePoint(price=_money(c1), price_increase_rate=_rate(c1 / p0 - 1)),
            target_price=target,
            calculation_details=details,
            legal_basis=LEGAL_BASIS,
        )


YEN_FORMAT = '#,##0"円"'
RATE_FORMAT = "0.00%"
CHANGE_FORMAT = "+0.00%;-0.00%;0.00%"
WIDTHS = {"A": 24, "B": 18, "C": 12, "D": 18, "E": 16}


def workbook(data: CostImpactInput, result: CostImpactOutput) -> bytes:
    """An xlsx whose figures are formulas over the inputs, so the user can change a rate and see the
    effect; formatted to be read and printed as it is (円 with separators, %, widths, an A4 print area),
    the price scenarios under the same 松竹梅 names as the chart and the chat."""
    from openpyxl import Workbook
    from openpyxl.styles import Font

    book = Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.title = "コスト試算"
    bold = Font(bold=True)
    sheet.append(["コスト試算"])
    sheet["A1"].font = Font(bold=True, size=14)
    sheet.append([])
    header = 3
    sheet.append(["項目", "現在コスト", "変動率", "変動後コスト", "増加額"])
    for cell in sheet[header]:
        cell.font = bold
    first = header + 1
    for row, line in enumerate(result.lines, start=first):
        sheet.append(
            [line.label, float(line.current_amount), float(line.change_rate), f"=B{row}*(1+C{row})", f"=D{row}-B{row}"]
        )
    last = first + len(result.lines) - 1
    total = last + 1
    sheet.append(
        [
            "合計",
            f"=SUM(B{first}:B{last})",
            f"=D{total}/B{total}-1",
            f"=SUM(D{first}:D{last})",
            f"=SUM(E{first}:E{last})",
        ]
    )
    sheet.cell(total, 1).font = bold
    for row in range(first, total + 1):
        for column, fmt in (("B", YEN_FORMAT), ("C", CHANGE_FORMAT), ("D", YEN_FORMAT), ("E", YEN_FORMAT)):
            sheet[f"{column}{row}"].number_format = fmt
    sheet.append([])
    price_row = total + 2
    sheet.append(["現在価格", float(result.current_price)])
    sheet.append(["現在利益率", f"=(B{price_row}-B{total})/B{price_row}"])
    margin_row = price_row + 1
    sheet.append(["目標利益率", float(data.target_profit_margin) if data.target_profit_margin is not None else None])
    sheet[f"B{price_row}"].number_format = YEN_FORMAT
    sheet[f"B{margin_row}"].number_format = RATE_FORMAT
    sheet[f"B{margin_row + 1}"].number_format = RATE_FORMAT
    sheet.append([])
    head = margin_row + 3
    sheet.append(["価格案", "新価格", "値上げ率", "新利益率"])
    for cell in sheet[head]:
        cell.font = bold
    uplift = float(data.premium_margin_uplift)
    target_cell = f"B{margin_row + 1}"
    names = labels().scenarios
    formulas = {
        names["premium"]: f"=D{total}/(1-MAX(N({target_cell}),B{margin_row}+{uplift}))",
        names["standard"]: f"=D{total}/(1-B{margin_row})",
        names["minimum"]: f"=B{price_row}+E{total}",
        "損益分岐": f"=D{total}",
    }
    for offset, (label, formula) in enumerate(formulas.items(), start=1):
        r = head + offset
        sheet.append([label, formula, f"=B{r}/B{price_row}-1", f"=(B{r}-D{total})/B{r}"])
        sheet[f"B{r}"].number_format = YEN_FORMAT
        sheet[f"C{r}"].number_format = CHANGE_FORMAT
        sheet[f"D{r}"].number_format = RATE_FORMAT
    for column, width in WIDTHS.items():
        sheet.column_dimensions[column].width = width
    sheet.print_area = f"A1:E{head + len(formulas)}"
    sheet.page_setup.paperSize = sheet.PAPERSIZE_A4
    sheet.page_setup.orientation = "portrait"
    sheet.page_setup.fitToWidth = 1
    sheet.page_setup.fitToHeight = 0
    sheet.sheet_properties.pageSetUpPr.fitToPage = True
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


async def run(data: CostImpactInput, ctx: ToolContext) -> CostImpactOutput:
    result = compute(data)
    if data.export_xlsx:
        saved = ctx.save(NAME, labels().file_names["cost_workbook"], "xlsx", workbook(data, result), "excel")
        result = result.model_copy(update={"files": [saved]})
    return result


DESCRIPTION = (
    "コスト影響試算: 原価構成（項目ごとの金額と構成比）と各項目の変動率から、新コスト・増加額・増加率、"
    "松竹梅の価格シナリオと利益率、損益分岐価格、目標利益率に必要な価格を正確な10進演算で計算します。"
    "export_xlsx=true で数式入りのExcelを作成します。"
)

__all__ = [
    "CHANGE_FORMAT",
    "DESCRIPTION",
    "LEGAL_BASIS",
    "NAME",
    "RATE_FORMAT",
    "WIDTHS",
    "YEN_FORMAT",
    "CostImpactInput",
    "CostImpactOutput",
    "CostItem",
    "CostLine",
    "PricePoint",
    "Scenario",
    "check",
    "compute",
    "run",
    "workbook",
]
