"""calculate_cost_impact against values worked out by hand (the spec's example input among them)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from openpyxl import load_workbook

from advisor.tools.base import ToolContext
from advisor.tools.cost import CostImpactInput, compute, run
from core.errors import InputError
from core.settings import load_settings

SPEC_INPUT = {
    "current_cost_structure": {
        "material_cost": {"ratio": 0.40, "amount": 1000000},
        "labor_cost": {"ratio": 0.35, "amount": 875000},
        "energy_cost": {"ratio": 0.10, "amount": 250000},
        "overhead": {"ratio": 0.15, "amount": 375000},
    },
    "price_changes": {"material_cost": 0.20, "labor_cost": 0.05, "energy_cost": 0.30},
    "target_profit_margin": 0.08,
}


def test_the_specs_example_input_by_hand() -> None:
    # By hand. C0 = 1,000,000 + 875,000 + 250,000 + 375,000 = 2,500,000 (ratios 0.40/0.35/0.10/0.15 match).
    # Increases: material 1,000,000 x 0.20 = 200,000; labour 875,000 x 0.05 = 43,750; energy 250,000 x 0.30
    # = 75,000; overhead 0. Sum 318,750, so C1 = 2,818,750 and the rate is 318,750 / 2,500,000 = 0.1275.
    # (The spec prints 2,725,000 / 225,000 / 0.09: that leaves out the labour and energy increases.)
    # No price is given, so P0 = C0 / (1 - 0.08) = 2,717,391.30...; current margin m0 = 0.08.
    # 梅 minimum = P0 + 318,750 = 3,036,141.30 -> rate 318,750 / P0 = 0.1275 x 0.92 = 0.1173,
    #   margin (3,036,141.30 - 2,818,750) / 3,036,141.30 = 217,391.30 / 3,036,141.30 = 0.0716.
    # 竹 standard = C1 / 0.92 = 3,063,858.70 -> rate C1/C0 - 1 = 0.1275, margin 0.0800.
    # 松 premium: margin max(0.08, 0.08 + 0.02) = 0.10 -> C1 / 0.90 = 3,131,944.44,
    #   rate 1.1275 x 0.92 / 0.90 - 1 = 0.152555... -> 0.1526, margin 0.1000.
    # Break-even = C1 = 2,818,750 -> rate 1.1275 x 0.92 - 1 = 0.0373. Target price = 竹's price.
    out = compute(CostImpactInput.model_validate(SPEC_INPUT))
    assert out.current_total_cost == Decimal("2500000")
    assert out.new_total_cost == Decimal("2818750")
    assert out.cost_increase == Decimal("318750")
    assert out.cost_increase_rate == Decimal("0.1275")
    assert out.current_price == Decimal("2717391")
    assert out.current_price_basis == "target_profit_margin"
    s = out.scenarios
    assert (s["minimum"].new_price, s["minimum"].price_increase_rate, s["minimum"].new_profit_margin) == (
        Decimal("3036141"),
        Decimal("0.1173"),
        Decimal("0.0716"),
    )
    assert (s["standard"].new_price, s["standard"].price_increase_rate, s["standard"].new_profit_margin) == (
        Decimal("3063859"),
        Decimal("0.1275"),
        Decimal("0.0800"),
    )
    assert (s["premium"].new_price, s["premium"].price_increase_rate, s["premium"].new_profit_margin) == (
        Decimal("3131944"),
        Decimal("0.1526"),
        Decimal("0.1000"),
    )
    assert out.breakeven_analysis.price == Decimal("2818750")
    assert out.breakeven_analysis.price_increase_rate == Decimal("0.0373")
    assert out.target_price is not None and out.target_price.price == Decimal("3063859")
    assert [line.increase for line in out.lines] == [Decimal(200000), Decimal(43750), Decimal(75000), Decimal(0)]


def test_a_given_price_and_a_higher_target_by_hand() -> None:
    # C0 = 600 + 300 + 100 = 1,000; +10 % material (60), +5 % labour (15): C1 = 1,075 (+7.5 %).
    # P0 = 1,250 given: m0 = 250 / 1,250 = 0.20. Target 0.25 is above m0 + 0.02 = 0.22, so 松 uses 0.25.
    # 梅 = 1,250 + 75 = 1,325: rate 0.06, margin 250 / 1,325 = 0.188679 -> 0.1887.
    # 竹 = 1,075 / 0.80 = 1,343.75 -> 1,344 (half up), rate 1,343.75 / 1,250 - 1 = 0.075, margin 0.2000.
    # 松 = 1,075 / 0.75 = 1,433.33 -> 1,433, rate 0.146667 -> 0.1467, margin 0.2500.
    # Break-even 1,075: rate 1,075 / 1,250 - 1 = -0.14.
    out = compute(
        CostImpactInput.model_validate(
            {
                "current_cost_structure": {
                    "material": {"amount": 600},
                    "labor": {"amount": 300, "ratio": 0.3},
                    "other": {"amount": 100},
                },
                "price_changes": {"material": "0.10", "labor": "0.05"},
                "current_price": 1250,
                "target_profit_margin": "0.25",
            }
        )
    )
    assert (out.new_total_cost, out.cost_increase_rate, out.current_profit_margin) == (
        Decimal(1075),
        Decimal("0.0750"),
        Decimal("0.2000"),
    )
    assert out.scenarios["minimum"].new_price == Decimal(1325)
    assert out.scenarios["minimum"].new_profit_margin == Decimal("0.1887")
    assert out.scenarios["standard"].new_price == Decimal(1344)
    assert out.scenarios["standard"].price_increase_rate == Decimal("0.0750")
    assert out.scenarios["premium"].new_price == Decimal(1433)
    assert out.scenarios["premium"].price_increase_rate == Decimal("0.1467")
    assert out.breakeven_analysis.price_increase_rate == Decimal("-0.1400")


def test_decimal_arithmetic_has_no_float_drift() -> None:
    # 0.1 + 0.2 in floats is 0.30000000000000004; three items of 0.1 yen each, +10 %: exactly 0.33.
    out = compute(
        CostImpactInput.model_validate(
            {
                "current_cost_structure": {"a": {"amount": "0.1"}, "b": {"amount": "0.1"}, "c": {"amount": "0.1"}},
                "price_changes": {"a": "0.1", "b": "0.1", "c": "0.1"},
                "current_price": "1",
            }
        )
    )
    assert out.cost_increase_rate == Decimal("0.1000")


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (
            {"current_cost_structure": {"labor_cost": {"ratio": 0.30, "amount": 875000}}},
            "current_cost_structure.labor_cost.ratio",
        ),
        (
            {"current_cost_structure": {"overhead": {"ratio": 0.15, "amount": -1}}},
            "current_cost_structure.overhead.amount",
        ),
        (
            {"current_cost_structure": {"overhead": {"ratio": 0.15}}},
            "current_cost_structure.overhead.amount is missing",
        ),
        ({"price_changes": {"fuel": 0.1}}, "price_changes.fuel"),
        ({"price_changes": {"labor_cost": -1.5}}, "price_changes.labor_cost"),
        ({"target_profit_margin": 1.2}, "target_profit_margin"),
    ],
)
def test_bad_values_are_rejected_naming_the_field(change: dict[str, object], field: str) -> None:
    data = {k: (dict(v) if isinstance(v, dict) else v) for k, v in SPEC_INPUT.items()}
    for key, value in change.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}  # type: ignore[dict-item]
        else:
            data[key] = value
    with pytest.raises(InputError, match=field.replace(".", r"\.")):
        compute(CostImpactInput.model_validate(data))


def test_no_price_and_no_margin_is_rejected() -> None:
    data = {**SPEC_INPUT}
    del data["target_profit_margin"]
    with pytest.raises(InputError, match="current_price is missing"):
        compute(CostImpactInput.model_validate(data))


async def test_the_xlsx_holds_formulas_over_the_inputs_formatted_to_read_and_print(tmp_path: Path) -> None:
    """Issue 37 (2): the formulas were live but every cell General (3131944.444, 0.1275): now 円 with
    separators, rates in %, widths, an A4 print area and the chart's 松竹梅 names."""
    from datetime import date

    from advisor.labels import labels

    ctx = ToolContext(load_settings(None, {"data_dir": str(tmp_path)}), session_id="s1")
    out = await run(CostImpactInput.model_validate({**SPEC_INPUT, "export_xlsx": True}), ctx)
    (saved,) = out.files
    assert saved.key == f"advisor/s1/コスト試算_{date.today().isoformat()}.xlsx" and saved.type == "excel"
    path = tmp_path / "artifacts" / saved.key
    sheet = load_workbook(path).active
    assert sheet is not None
    cells = {c.coordinate: c.value for row in sheet.iter_rows() for c in row if c.value is not None}
    assert cells["A1"] == "コスト試算" and cells["A3"] == "項目" and cells["A8"] == "合計"
    assert cells["D4"] == "=B4*(1+C4)" and cells["B8"] == "=SUM(B4:B7)"
    assert any(isinstance(v, str) and v.startswith("=D8/(1-") for v in cells.values())
    assert cells["B4"] == 1000000 and cells["C4"] == 0.2
    assert sheet["B4"].number_format == sheet["D8"].number_format == sheet["E8"].number_format == '#,##0"円"'
    assert sheet["C4"].number_format == "+0.00%;-0.00%;0.00%" and sheet["B11"].number_format == "0.00%"
    names = [sheet.cell(r, 1).value for r in range(15, 19)]
    assert names == [*(labels().scenarios[k] for k in ("premium", "standard", "minimum")), "損益分岐"]
    assert all(sheet.cell(r, 2).number_format == '#,##0"円"' for r in range(15, 19))
    assert all(sheet.cell(r, 3).number_format.startswith("+0.00%") for r in range(15, 19))
    assert [sheet.column_dimensions[c].width for c in "ABCDE"] == [24, 18, 12, 18, 16]
    assert sheet.print_area == "'コスト試算'!$A$1:$E$18"
    assert str(sheet.page_setup.paperSize) == sheet.PAPERSIZE_A4 and sheet.sheet_properties.pageSetUpPr.fitToPage
