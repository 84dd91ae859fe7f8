"""Typed values from Japanese and English figures and dates (nlp.values, nlp.dates); no model needed."""

from __future__ import annotations

from typing import Any

import pytest

from nlp.dates import find_dates, with_year
from nlp.values import Value, comparable, fold, interval, parse_number, parse_values, resolve_year, values_agree

# (text, raw of the value, expected fields); floats are compared approximately.
CASES: list[tuple[str, str, dict[str, Any]]] = [
    # digits, commas, full width, decimals
    ("回答は36,210社だった", "36,210社", {"kind": "count", "value": 36210, "unit": "firm"}),
    ("全国の１２３，４５６社に送付", "１２３，４５６社", {"kind": "count", "value": 123456, "unit": "firm"}),
    ("転嫁率は45.7%", "45.7%", {"kind": "percent", "value": 45.7, "unit": "%", "precision": 0.1}),
    ("転嫁率は４５．７％", "４５．７％", {"kind": "percent", "value": 45.7, "unit": "%"}),
    ("転嫁率は45.7パーセント", "45.7パーセント", {"kind": "percent", "value": 45.7}),
    ("rose 12 percent", "12 percent", {"kind": "percent", "value": 12, "change": True}),
    # kanji numerals and mixed units
    ("投資額は1兆5000億円", "1兆5000億円", {"kind": "money", "value": 1.5e12, "unit": "JPY", "precision": 1e8}),
    ("売上は18億4000万円", "18億4000万円", {"kind": "money", "value": 1.84e9, "unit": "JPY"}),
    ("予算は三千万円", "三千万円", {"kind": "money", "value": 3e7, "unit": "JPY", "precision": 1e7}),
    ("参加は2万3千社", "2万3千社", {"kind": "count", "value": 23000, "unit": "firm"}),
    ("従業員14名", "14名", {"kind": "count", "value": 14, "unit": "person"}),
    ("相談は2,412件", "2,412件", {"kind": "count", "value": 2412, "unit": "case"}),
    # 割/分
    ("3割にとどまる", "3割", {"kind": "percent", "value": 30, "precision": 10, "approx": False}),
    ("およそ3割", "およそ3割", {"kind": "percent", "value": 30, "approx": True}),
    ("3割5分の企業", "3割5分", {"kind": "percent", "value": 35, "precision": 1}),
    ("約4割に達した", "約4割", {"kind": "percent", "value": 40, "approx": True}),
    ("4割強が回答", "4割強", {"kind": "percent", "value": 40, "lower": 40, "upper": 45, "approx": True}),
    ("4割弱が回答", "4割弱", {"kind": "percent", "value": 40, "lower": 35, "upper": 40, "approx": True}),
    ("3〜4割の企業", "3〜4割", {"kind": "percent", "value": 35, "lower": 30, "upper": 40}),
    ("なお1割近くにのぼる", "1割近く", {"kind": "percent", "value": 10, "lower": 5, "upper": 10}),
    ("初めて5割を超える", "5割を超える", {"kind": "percent", "value": 50, "lower": 50, "upper": None}),
    ("3割未満にとどまる", "3割未満", {"kind": "percent", "value": 30, "upper": 30, "lower": None}),
    ("コスト上昇分の3分の2を", "3分の2", {"kind": "percent", "value": 200 / 3}),
    ("30%台で推移", "30%台", {"kind": "percent", "value": 30, "lower": 30, "upper": 40}),
    # points and changes
    ("前年比+3.2ポイント", "+3.2ポイント", {"kind": "points", "value": 3.2, "unit": "pt", "change": True}),
    ("▲1.5ポイント", "▲1.5ポイント", {"kind": "points", "value": -1.5, "change": True}),
    ("△2.0ポイント", "△2.0ポイント", {"kind": "points", "value": -2.0}),
    ("1.7ポイント低下した", "1.7ポイント", {"kind": "points", "value": -1.7}),
    ("up 3.2 percentage points", "3.2 percentage points", {"kind": "points", "value": 3.2, "change": True}),
    ("12 percentage points less", "12 percentage points", {"kind": "points", "value": -12}),
    ("a cut of 25 bps", "25 bps", {"kind": "points", "value": 0.25, "unit": "pt"}),
    ("前年比+15.3%", "+15.3%", {"kind": "percent", "value": 15.3, "change": True}),
    ("前年同月比12.3%増の85件", "12.3%", {"kind": "percent", "value": 12.3, "change": True}),
    ("前年同月比12.3%減", "12.3%", {"kind": "percent", "value": -12.3, "change": True}),
    ("価格転嫁率は49.7%で", "49.7%", {"kind": "percent", "change": False}),
    # ratios
    ("電気代は1.6倍に", "1.6倍", {"kind": "ratio", "value": 1.6, "unit": "x", "change": False}),
    ("were 1.8 times more likely", "1.8 times", {"kind": "ratio", "value": 1.8, "change": False}),
    # English money
    ("will invest $1.2 billion", "$1.2 billion", {"kind": "money", "value": 1.2e9, "unit": "USD"}),
    ("raised ¥300 million", "¥300 million", {"kind": "money", "value": 3e8, "unit": "JPY"}),
    ("raised 300 million yen", "300 million yen", {"kind": "money", "value": 3e8, "unit": "JPY"}),
    ("a loan of USD 5m", "USD 5m", {"kind": "money", "value": 5e6, "unit": "USD"}),
    ("US$1.2bn deal", "US$1.2bn", {"kind": "money", "value": 1.2e9, "unit": "USD"}),
    ("5 billion US dollars", "5 billion US dollars", {"kind": "money", "value": 5e9, "unit": "USD"}),
    ("up to ¥1,055 an hour", "up to ¥1,055", {"kind": "money", "value": 1055, "upper": 1055}),
    # English counts
    ("a survey of 1,120 firms", "1,120 firms", {"kind": "count", "value": 1120, "unit": "firm"}),
    ("drew 36,210 valid responses", "36,210 valid responses", {"kind": "count", "value": 36210, "unit": "response"}),
    ("8,268件の相談", "8,268件", {"kind": "count", "value": 8268, "unit": "case"}),
    # approximations and bounds in English
    ("around 40% of costs", "around 40%", {"kind": "percent", "value": 40, "approx": True}),
    ("about 15%", "about 15%", {"approx": True}),
    ("roughly 3,000 firms", "roughly 3,000 firms", {"kind": "count", "approx": True}),
    ("nearly 50% of firms", "nearly 50%", {"lower": 45, "upper": 50, "approx": True}),
    ("more than 30% of firms", "more than 30%", {"lower": 30, "upper": None}),
    ("passed on 70% or more", "70% or more", {"lower": 70}),
    ("the rate tops 50% for the first time", "tops 50%", {"lower": 50}),
    ("1リットル当たり170円前後", "170円前後", {"kind": "money", "value": 170, "approx": True}),
    ("従業員20人以下の企業", "20人以下", {"kind": "count", "upper": 20}),
    ("年960時間の上限", "960時間", {"kind": "number", "value": 960, "unit": "hour"}),
]

DATE_CASES: list[tuple[str, str, str, str, str]] = [
    ("令和6年9月の調査", "令和6年9月", "month", "2024-09-01", "2024-09-30"),
    ("平成31年の春", "平成31年", "year", "2019-01-01", "2019-12-31"),
    ("令和元年に改元", "令和元年", "year", "2019-01-01", "2019-12-31"),
    ("令和元年度の予算", "令和元年度", "fiscal_year", "2019-04-01", "2020-03-31"),
    ("令和６年９月３０日時点", "令和６年９月３０日", "day", "2024-09-30", "2024-09-30"),
    ("2024年9月の調査", "2024年9月", "month", "2024-09-01", "2024-09-30"),
    ("2024年度の最低賃金", "2024年度", "fiscal_year", "2024-04-01", "2025-03-31"),
    ("2025年3月期の決算", "2025年3月期", "fiscal_year", "2024-04-01", "2025-03-31"),
    ("released in March 2025.", "March 2025", "month", "2025-03-01", "2025-03-31"),
    ("filed on 2024-11-29.", "2024-11-29", "day", "2024-11-29", "2024-11-29"),
    ("said on Nov. 29, 2024 that", "Nov. 29, 2024", "day", "2024-11-29", "2024-11-29"),
    ("between 1 and 31 October 2024", "31 October 2024", "day", "2024-10-31", "2024-10-31"),
    ("profit in FY2024 rose", "FY2024", "fiscal_year", "2024-04-01", "2025-03-31"),
    ("profit in fiscal 2023 rose", "fiscal 2023", "fiscal_year", "2023-04-01", "2024-03-31"),
    ("sales in Q3 2024 rose", "Q3 2024", "quarter", "2024-07-01", "2024-09-30"),
    ("the third quarter of 2024", "third quarter of 2024", "quarter", "2024-07-01", "2024-09-30"),
    ("11月末に公表した", "11月末", "month", "--11", "--11"),
    ("down from 11.2% in March", "March", "month", "--03", "--03"),
    ("10月1日から", "10月1日", "day", "--10-01", "--10-01"),
    ("wages rose in 2024.", "2024", "year", "2024-01-01", "2024-12-31"),
]


def only(text: str, raw: str) -> Value:
    found = [v for v in parse_values(text) if v.raw == raw]
    assert found, f"{raw!r} not found in {[v.raw for v in parse_values(text)]}"
    return found[0]


@pytest.mark.parametrize(("text", "raw", "expected"), CASES, ids=[c[1] for c in CASES])
def test_parse_values(text: str, raw: str, expected: dict[str, Any]) -> None:
    value = only(text, raw)
    assert text[value.start : value.end] == value.raw
    for name, want in expected.items():
        numeric = isinstance(want, float | int) and not isinstance(want, bool)
        assert getattr(value, name) == (pytest.approx(want) if numeric else want), name


@pytest.mark.parametrize(
    ("text", "raw", "granularity", "date_from", "date_to"), DATE_CASES, ids=[c[1] for c in DATE_CASES]
)
def test_parse_dates(text: str, raw: str, granularity: str, date_from: str, date_to: str) -> None:
    value = only(text, raw)
    assert (value.kind, value.value, value.granularity) == ("date", None, granularity)
    assert (value.date_from, value.date_to) == (date_from, date_to)


def test_offsets_hold_on_mixed_text() -> None:
    text = (
        "令和6年9月調査の価格転嫁率は４９．７％（前年比+3.6ポイント）、約6割との報道も。"
        "In FY2024, 36,210 firms replied and $1.2 billion was spent; about 40% of costs were labour.\n"
        "| トラック運送 | 34.2% | 28.9% |"
    )
    values = parse_values(text)
    assert [v.raw for v in values] == [
        "令和6年9月", "４９．７％", "+3.6ポイント", "約6割", "FY2024", "36,210 firms", "$1.2 billion", "about 40%",
        "34.2%", "28.9%",
    ]  # fmt: skip
    assert all(text[v.start : v.end] == v.raw for v in values)
    assert [v.start for v in values] == sorted(v.start for v in values)


@pytest.mark.parametrize(
    "text",
    [
        "COVID-19 の影響",  # part of a name
        "Q3 results",  # quarter code without a year
        "第87号 会報",  # an ordinal
        "v12n2 of the journal",  # an identifier
        "1. はじめに",  # a list marker
        "the 2024 problem",  # a bare year without a preposition
        "一方、三代目の社長は",  # kanji digits without a unit
        "中小企業価格動向調査センターは29日、",  # a day without a month
    ],
)
def test_no_figures_in(text: str) -> None:
    assert [v.raw for v in parse_values(text) if v.kind != "date" or v.raw.isdigit()] == []


def test_parse_number_and_fold() -> None:
    assert parse_number("1兆5000億") == (1.5e12, 1e8)
    assert parse_number("二〇二四") == (2024, 1)
    assert parse_number("十二") == (12, 1)
    assert parse_number("49.70") == (pytest.approx(49.7), pytest.approx(0.01))
    folded = fold("４５．７％、１２３，４５６")
    assert folded == "45.7%、123,456" and len(folded) == len("４５．７％、１２３，４５６")


@pytest.mark.parametrize(
    ("a", "b", "agree"),
    [
        ("49.7%", "49.7%", True),
        ("49.7%", "49.8%", False),
        ("50%", "49.7%", True),  # 49.7 rounds to 50
        ("約5割", "49.7%", True),
        ("約6割", "49.7%", False),  # the planted blog figure
        ("約2割", "9.5%", False),  # the planted newspaper figure
        ("1割近く", "9.5%", True),
        ("3割強", "31.2%", True),
        ("3割強", "44.7%", False),
        ("5割目前", "49.7%", True),
        ("5割を超える", "52.4%", True),
        ("5割を超える", "49.7%", False),
        ("around 40%", "約4割", True),
        ("36,210社", "36,210 firms", True),  # counts compare whatever the counter word
        ("36,210社", "26,310社", False),
        ("1,055円", "¥1,055", True),
        ("$1.2 billion", "1200 million dollars", True),
        ("1.2兆円", "1.2 trillion yen", True),
    ],
)
def test_values_agree(a: str, b: str, agree: bool) -> None:
    va, vb = parse_values(a)[0], parse_values(b)[0]
    assert comparable(va, vb)
    assert values_agree(va, vb) is agree
    assert values_agree(vb, va) is agree


def test_values_agree_needs_same_kind_unit_and_change() -> None:
    percent, points = parse_values("49.7%")[0], parse_values("49.7ポイント")[0]
    yen, dollars = parse_values("100円")[0], parse_values("$100")[0]
    level, change = parse_values("15.3%")[0], parse_values("前年比+15.3%")[0]
    for a, b in ((percent, points), (yen, dollars), (level, change)):
        assert not comparable(a, b) and not values_agree(a, b)


def test_values_agree_tolerances() -> None:
    a, b = parse_values("49.7%")[0], parse_values("50.4%")[0]
    assert not values_agree(a, b)
    assert values_agree(a, b, abs_tol=1.0)
    assert values_agree(a, b, rel_tol=0.02)
    assert interval(parse_values("約6割")[0]) == (55.0, 65.0)
    assert interval(parse_values("4割強")[0]) == (40.0, 45.0)
    with pytest.raises(ValueError, match="numeric"):
        interval(parse_values("2024年9月")[0])


def test_dates_agree_and_resolve_year() -> None:
    era, western, fiscal = (parse_values(t)[0] for t in ("令和6年9月", "2024年9月", "2024年度"))
    assert values_agree(era, western) and values_agree(western, fiscal)
    month_only = parse_values("9月の調査")[0]
    assert (month_only.date_from, month_only.date_to) == ("--09", "--09")
    resolved = resolve_year(month_only, 2024)
    assert values_agree(resolved, era) and (resolved.date_from, resolved.date_to) == ("2024-09-01", "2024-09-30")
    assert resolve_year(era, 1999) == era
    assert with_year("--02-29", "--02-29", 2023) == ("--02-29", "--02-29")  # no such day: left open
    assert with_year("--02-29", "--02-29", 2024) == ("2024-02-29", "2024-02-29")


def test_find_dates_prefers_the_longest() -> None:
    text = "令和6年9月30日、2024年度、9月"
    assert [text[d.start : d.end] for d in find_dates(fold(text))] == ["令和6年9月30日", "2024年度", "9月"]
    assert find_dates("2024年13月") == []  # an impossible month is not a date
