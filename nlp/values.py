"""Figures in Japanese and English text as typed values, so later stages compare values, not strings.

``parse_values(text)`` finds percentages (49.7%, ４５．７％, 3割5分, 3分の2), percentage points
(3.6ポイント, ▲1.5pt, 2.7 percentage points), money (1兆5000億円, $1.2 billion, USD 5m), counts
(36,210社, 2万3千社, 1,120 firms), ratios (1.8倍, 1.8 times), other quantities (960時間) and dates
(see :mod:`nlp.dates`), each with character offsets into the original text.

Units of ``Value.value``: percent and points in percent (49.7, not 0.497), money in the currency
named by ``unit`` (ISO code), counts as numbers with the counted thing in ``unit`` (firm, case,
person, ...), ratios as multiples (``unit="x"``); dates have no ``value`` but an ISO interval.

Changes: ``change=True`` marks a figure that is a difference from another figure rather than a
level: every percentage-point figure, and percentages or counts next to 前年比/前回比, 増/減/上昇/低下,
"up"/"down"/"year on year". Decreases (▲, △, マイナス, 減, 低下, "down", "less") are negative.
A change keeps its kind (前年比+15.3% is ``kind="percent", change=True``); kind ``ratio`` is
reserved for multiples (倍, times), because "1.8 times" and "+80%" are different statements.

Approximations and bounds: 約/およそ/ほぼ/程度/前後/about/around/roughly set ``approx``;
以上/超/more than set ``lower``; 以下/未満/less than set ``upper``; 強/余り (4割強 = 40..45) and
弱/近く/nearly (4割弱 = 35..40) set both, half a step of the last written digit apart;
30%台 = 30..40; ranges (3〜4割) set both and ``value`` to the midpoint. ``precision`` is the
unit of the last written digit (0.1 for 49.7%, 10 for 6割); :func:`values_agree` uses it.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Iterable
from functools import cache
from typing import Literal

from pydantic import BaseModel, ConfigDict

from nlp.dates import Granularity, find_dates, with_year

Kind = Literal["percent", "money", "count", "ratio", "points", "date", "number"]

# Relative half-width given to approximate values ("about 15%" agrees with 14.3..15.7).
APPROX_REL = 0.05

# Unit words after a number -> (kind, canonical unit). Money units are ISO currency codes; counters
# name what is counted, so that 36,210社 and "36,210 firms" read alike.
# fmt: off
_UNITS_JA: dict[str, tuple[Kind, str | None]] = {
    "%": ("percent", "%"), "パーセント": ("percent", "%"), "ポイント": ("points", "pt"), "pt": ("points", "pt"),
    "倍": ("ratio", "x"),
    "円": ("money", "JPY"), "米ドル": ("money", "USD"), "ドル": ("money", "USD"), "ユーロ": ("money", "EUR"),
    "ポンド": ("money", "GBP"), "人民元": ("money", "CNY"),
    "社": ("count", "firm"), "事業者": ("count", "firm"), "件": ("count", "case"), "人": ("count", "person"),
    "名": ("count", "person"), "業種": ("count", "industry"), "店舗": ("count", "shop"), "店": ("count", "shop"),
    "校": ("count", "school"), "回": ("count", "time"), "か所": ("count", "place"), "カ所": ("count", "place"),
    "ヶ所": ("count", "place"), "箇所": ("count", "place"), "項目": ("count", "item"), "品目": ("count", "item"),
    "団体": ("count", "organisation"), "世帯": ("count", "household"),
    "時間": ("number", "hour"), "リットル": ("number", "litre"), "トン": ("number", "tonne"),
    "km": ("number", "km"), "kg": ("number", "kg"),
}
_UNITS_EN: dict[str, tuple[Kind, str | None]] = {
    "percentage points": ("points", "pt"), "percentage point": ("points", "pt"), "points": ("points", "pt"),
    "point": ("points", "pt"), "pts": ("points", "pt"), "pp": ("points", "pt"),
    "basis points": ("points", "bp"), "basis point": ("points", "bp"), "bps": ("points", "bp"), "bp": ("points", "bp"),
    "percent": ("percent", "%"), "per cent": ("percent", "%"), "pct": ("percent", "%"),
    "times": ("ratio", "x"), "fold": ("ratio", "x"),
    "US dollars": ("money", "USD"), "dollars": ("money", "USD"), "dollar": ("money", "USD"), "yen": ("money", "JPY"),
    "euros": ("money", "EUR"), "euro": ("money", "EUR"), "pounds": ("money", "GBP"), "yuan": ("money", "CNY"),
    "USD": ("money", "USD"), "JPY": ("money", "JPY"), "EUR": ("money", "EUR"),
    "hours": ("number", "hour"), "tonnes": ("number", "tonne"), "tons": ("number", "tonne"),
}
# English counters may follow one or two adjectives: "36,210 valid responses", "880 manufacturing subcontractors".
_COUNTERS_EN: dict[str, str] = {
    **dict.fromkeys(["firms", "firm", "companies", "company", "businesses", "enterprises", "subcontractors",
                     "suppliers", "manufacturers", "hauliers", "operators", "members"], "firm"),
    **dict.fromkeys(["responses", "respondents"], "response"),
    **dict.fromkeys(["cases", "complaints", "consultations"], "case"),
    **dict.fromkeys(["people", "persons", "workers", "employees", "drivers"], "person"),
    **dict.fromkeys(["industries", "sectors"], "industry"),
}
_CURRENCY_PREFIX = {"US$": "USD", "A$": "AUD", "C$": "CAD", "HK$": "HKD", "S$": "SGD", "$": "USD", "¥": "JPY",
                    "€": "EUR", "£": "GBP", "USD": "USD", "JPY": "JPY", "EUR": "EUR", "GBP": "GBP", "CNY": "CNY"}
_SCALES = {"thousand": 1e3, "k": 1e3, "million": 1e6, "m": 1e6, "mn": 1e6, "mln": 1e6, "billion": 1e9, "bn": 1e9,
           "b": 1e9, "trillion": 1e12, "tn": 1e12, "trn": 1e12}
# fmt: on
_BIG = {"万": 1e4, "億": 1e8, "兆": 1e12}
_SMALL = {"十": 10, "百": 100, "千": 1000}
_KANJI_DIGITS = {c: i for i, c in enumerate("〇一二三四五六七八九")}

# Words around a figure that bound or soften it (see _apply_bound). Suffixes carry their leading space
# when English ("70% or more"); 強/弱-style words bound the figure by half a step of its last digit.
# fmt: off
_POST_LOWER = ("以上", "超", "超え", "超える", "超えた", "を超え", "を超える", "を超えた", "を上回る", "を上回った",
               " or more", " or above", " or higher", " or over")
_POST_UPPER = ("以下", "未満", "を下回る", "を下回った", " or less", " or below", " or lower", " or fewer")
_POST_APPROX = ("程度", "前後", "ほど", "くらい", "ぐらい")
_POST_ABOVE = ("強", "余り", "あまり", " plus")  # a little over
_POST_BELOW = ("弱", "近く", "目前")  # a little under
_PRE_LOWER = ("more than", "over", "above", "at least", "no less than", "tops", "topped", "exceeds", "exceeded",
              "surpasses", "surpassed")
_PRE_UPPER = ("less than", "under", "below", "at most", "up to", "fewer than", "no more than")
_PRE_APPROX_JA = ("約", "およそ", "おおよそ", "概ね", "おおむね", "ほぼ", "大体", "ざっと")
_PRE_APPROX_EN = ("about", "around", "approximately", "approx.", "roughly", "some", "~")
_PRE_BELOW_EN = ("nearly", "almost")
# fmt: on
_NEGATIVE_SIGNS = frozenset("-−▲△▼") | {"マイナス"}


def _alt(words: Iterable[str]) -> str:
    """A regex alternation of literal words, longest first so that 以上 is not cut to 以."""
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))


_ARABIC = r"[0-9]{1,3}(?:,[0-9]{3})+(?![0-9])(?:\.[0-9]+)?|[0-9]+(?:\.[0-9]+)?"
_KSMALL = "[〇一二三四五六七八九十百千]+"
_SEG = rf"(?:(?:{_ARABIC})[千百十]?|{_KSMALL})"
_JA_NUM = rf"(?:{_SEG}[兆億万])+(?:{_SEG})?|{_SEG}"
# Not inside a word or another number (COVID-19, Q3, FY2024, 1,2 or the 5 of 1.5).
_START = r"(?<![0-9A-Za-z\-_/〇一二三四五六七八九十百千万億兆第])(?<![0-9][.,])"
_PRE = (
    rf"(?:(?P<pre_bound>{_alt(_PRE_LOWER + _PRE_UPPER)})[ ])?"
    rf"(?:(?P<approx>{_alt(_PRE_APPROX_JA)})|(?P<approx_en>{_alt(_PRE_APPROX_EN + _PRE_BELOW_EN)})[ ]?)?"
    r"(?P<sign>[+\-−▲△▼±]|プラス|マイナス)?"
)
_POST = rf"(?P<post>{_alt(_POST_LOWER + _POST_UPPER + _POST_APPROX + _POST_ABOVE + _POST_BELOW + ('台',))})?"
_RANGE = r"(?:(?P<lo>{num})(?P<lo_unit>{units})?[ ]?(?:〜|~|–|-)[ ]?)?"
_EN_UNITS = rf"[ ]?(?:{_alt(_UNITS_EN)})\b|[ ]?%|-fold\b"
_UNITS = rf"{_alt(k for k in _UNITS_JA if k != '%')}|{_EN_UNITS}"
_MEASURE = re.compile(
    rf"{_START}{_PRE}{_RANGE.format(num=_ARABIC, units='%|パーセント')}(?P<num>{_JA_NUM})"
    rf"(?P<scale>[ ](?:thousand|million|billion|trillion)\b|(?:bn|mn|tn)\b)?(?P<unit>{_UNITS}){_POST}",
    re.IGNORECASE,
)
_WARI = re.compile(
    rf"{_START}{_PRE}{_RANGE.format(num=f'{_ARABIC}|{_KSMALL}', units='割')}(?P<num>{_ARABIC}|{_KSMALL})割"
    rf"(?:(?P<bu>[0-9]|[一二三四五六七八九])分(?!の[0-9一二三四五六七八九]))?(?:(?P<rin>[0-9]|[一二三四五六七八九])厘)?{_POST}"
)
_FRACTION = re.compile(rf"{_START}{_PRE}(?P<den>{_ARABIC}|{_KSMALL})分の(?P<num>{_ARABIC}|{_KSMALL}){_POST}")
_MONEY_PREFIX = re.compile(
    rf"{_START}{_PRE}(?P<cur>{_alt(_CURRENCY_PREFIX)})[ ]?(?P<num>{_ARABIC})"
    rf"(?P<scale>[ ]?(?:thousand|million|billion|trillion|bn|mn|mln|tn|trn)\b|(?:k|m|b)\b)?{_POST}",
)
_STOP = "of|the|and|or|to|in|at|on|for|from|by|with|than|per|percent|percentage|points?|times|a|an"
_EN_COUNT = re.compile(
    rf"{_START}{_PRE}(?P<num>{_ARABIC})(?P<scale>[ ](?:thousand|million|billion)\b)?"
    rf"(?:[ ](?!(?:{_STOP})\b)[a-z][a-z\-]*){{0,2}}?[ ](?P<counter>{_alt(_COUNTERS_EN)})\b",
    re.IGNORECASE,
)
_BARE = re.compile(
    rf"{_START}{_PRE}(?P<num>{_ARABIC})(?P<scale>[ ](?:thousand|million|billion|trillion)\b)?"
    r"(?![0-9A-Za-z号位条章節項番階日月年時分秒歳]|丁目|-[A-Za-z]|\.[ ]*$|\.\s)"
)
_CHANGE_BEFORE = re.compile(
    r"(?:前年同月|前年同期|前年度|前年|前期|前月|前回|前週)比[ ]?$"
    r"|\b(?:up|down|rose|fell|increased|decreased|climbed|dropped|gained|declined|grew|slipped|jumped)(?:[ ]by)?[ ]$",
    re.IGNORECASE,
)
_DOWN_BEFORE = re.compile(r"\b(?:down|fell|decreased|dropped|declined|slipped)(?:[ ]by)?[ ]$", re.IGNORECASE)
_CHANGE_AFTER = re.compile(
    r"^(?:(?P<up>増加|増|上昇|アップ|拡大|引き?上げ|値上げ|高(?:い|く|かった)|[ ](?:higher|more)\b)"
    r"|(?P<down>減少|減|低下|下落|ダウン|縮小|引き?下げ|値下げ|低(?:い|く|かった)|[ ](?:lower|less|fewer)\b)"
    r"|改善|悪化|[ ](?:year[- ]on[- ]year|y/y|yoy|from a year (?:earlier|ago))\b)",
    re.IGNORECASE,
)


class Value(BaseModel):
    """One figure; ``raw == text[start:end]`` on the text it was parsed from (see the module docstring)."""

    model_config = ConfigDict(frozen=True)

    kind: Kind
    value: float | None
    unit: str | None = None
    approx: bool = False
    lower: float | None = None
    upper: float | None = None
    precision: float | None = None
    change: bool = False
    raw: str
    start: int
    end: int
    date_from: str | None = None
    date_to: str | None = None
    granularity: Granularity | None = None


@cache
def _fold_char(char: str) -> str:
    folded = unicodedata.normalize("NFKC", char)
    return folded if len(folded) == 1 else char


def fold(text: str) -> str:
    """Full-width digits, letters and symbols to ASCII (１２３，４５６ -> 123,456), one char per char."""
    return text if text.isascii() else "".join(_fold_char(c) for c in text)


def parse_number(s: str) -> tuple[float, float]:
    """``(value, precision)`` of 36,210 / 49.7 / 1兆5000億 / 18億4000万 / 三千万 / 2万3千 / 二〇二四."""
    total, section = 0.0, 0.0
    cur: float | None = None
    cur_p, last_p = 1.0, 1.0
    for tok in re.findall(rf"{_ARABIC}|[〇一二三四五六七八九]+|[十百千万億兆]", s):
        if tok[0].isdigit():
            cur = float(tok.replace(",", ""))
            cur_p = 10.0 ** -len(tok.partition(".")[2])
        elif tok[0] in _KANJI_DIGITS:
            cur, cur_p = float("".join(str(_KANJI_DIGITS[c]) for c in tok)), 1.0
        elif tok in _SMALL:
            section += (cur if cur is not None else 1.0) * _SMALL[tok]
            last_p = (cur_p if cur is not None else 1.0) * _SMALL[tok]
            cur = None
        else:
            if cur is not None:
                section, last_p = section + cur, cur_p
            total += (section or 1.0) * _BIG[tok]
            last_p *= _BIG[tok]
            section, cur = 0.0, None
    if cur is not None:
        section, last_p = section + cur, cur_p
    return total + section, last_p


def step(value: float, precision: float) -> float:
    """Place of the last non-zero digit, at least ``precision``: 40 -> 10, 45 -> 1, 49.7 -> 0.1."""
    p = precision
    while value and p * 10 <= abs(value):
        ratio = value / (p * 10)
        if abs(ratio - round(ratio)) > 1e-9:
            break
        p *= 10
    return p


def _scale(m: re.Match[str]) -> float:
    word = (m.group("scale") or "").strip().lower()
    return _SCALES.get(word, 1.0)


def _apply_bound(fields: dict[str, object], m: re.Match[str], value: float, precision: float) -> None:
    """Set approx/lower/upper from the prefix and suffix words around the figure."""
    groups = m.groupdict()
    post = groups.get("post") or ""
    pre = (groups.get("pre_bound") or "").lower()
    approx_en = (groups.get("approx_en") or "").lower()
    half_step = step(value, precision) / 2
    if groups.get("approx") or (approx_en and approx_en not in _PRE_BELOW_EN) or post in _POST_APPROX:
        fields["approx"] = True
    if post in _POST_LOWER or pre in _PRE_LOWER:
        fields["lower"] = value
    elif post in _POST_UPPER or pre in _PRE_UPPER:
        fields["upper"] = value
    elif post in _POST_ABOVE:
        fields.update(approx=True, lower=value, upper=value + half_step)
    elif post in _POST_BELOW or approx_en in _PRE_BELOW_EN:
        fields.update(approx=True, lower=value - half_step, upper=value)
    elif post == "台":
        fields.update(lower=value, upper=value + step(value, precision))


def _build(
    text: str,
    folded: str,
    m: re.Match[str],
    kind: Kind,
    unit: str | None,
    value: float,
    precision: float,
    lo: float | None = None,
) -> Value:
    """A Value from a match: bounds, sign and change from the words around it."""
    fields: dict[str, object] = {}
    if lo is not None and lo < value:
        fields.update(lower=lo, upper=value)
        value = (lo + value) / 2
    else:
        _apply_bound(fields, m, value, precision)
    before, after = folded[max(0, m.start() - 12) : m.start()], folded[m.end() : m.end() + 24]
    turn = _CHANGE_AFTER.match(after)
    sign = m.group("sign") or ""
    change = kind == "points" or (kind != "ratio" and bool(_CHANGE_BEFORE.search(before) or turn))
    if sign in _NEGATIVE_SIGNS or (turn and turn.group("down")) or _DOWN_BEFORE.search(before):
        value = -value
        low, up = fields.get("lower"), fields.get("upper")
        fields["lower"] = -up if isinstance(up, float) else None
        fields["upper"] = -low if isinstance(low, float) else None
    return Value(
        kind=kind,
        value=value,
        unit=unit,
        precision=precision,
        change=change,
        raw=text[m.start() : m.end()],
        start=m.start(),
        end=m.end(),
        **fields,
    )


def _measure(text: str, folded: str, m: re.Match[str]) -> Value | None:
    kind, unit = _UNIT_LOOKUP[m.group("unit").strip().lstrip("-").lower()]
    value, precision = parse_number(m.group("num"))
    if not any(c.isdigit() for c in m.group("num")) and kind == "number":
        return None
    scale = _scale(m) * (0.01 if unit == "bp" else 1.0)
    lo = parse_number(m.group("lo"))[0] * scale if m.group("lo") else None
    return _build(text, folded, m, kind, "pt" if unit == "bp" else unit, value * scale, precision * scale, lo)


def _wari(text: str, folded: str, m: re.Match[str]) -> Value:
    value, p = parse_number(m.group("num"))
    value, precision = value * 10, p * 10
    for group, size in (("bu", 1.0), ("rin", 0.1)):
        if m.group(group):
            value += parse_number(m.group(group))[0] * size
            precision = size
    lo = parse_number(m.group("lo"))[0] * 10 if m.group("lo") else None
    return _build(text, folded, m, "percent", "%", value, precision, lo)


def _fraction(text: str, folded: str, m: re.Match[str]) -> Value | None:
    den, numer = parse_number(m.group("den"))[0], parse_number(m.group("num"))[0]
    if not 0 < numer < den:
        return None
    return _build(text, folded, m, "percent", "%", 100 * numer / den, 0.01)


def _money_prefix(text: str, folded: str, m: re.Match[str]) -> Value:
    value, precision = parse_number(m.group("num"))
    scale = _scale(m)
    return _build(text, folded, m, "money", _CURRENCY_PREFIX[m.group("cur").strip()], value * scale, precision * scale)


def _en_count(text: str, folded: str, m: re.Match[str]) -> Value:
    value, precision = parse_number(m.group("num"))
    scale = _scale(m)
    return _build(text, folded, m, "count", _COUNTERS_EN[m.group("counter").lower()], value * scale, precision * scale)


def _bare(text: str, folded: str, m: re.Match[str]) -> Value | None:
    num = m.group("num")
    digits = num.replace(",", "").replace(".", "")
    if len(digits) < 2 or (re.fullmatch(r"(?:19|20)[0-9]{2}", num) and not m.group("scale")):
        return None  # list markers (1., Q3) and years are not figures
    if re.search(r"(?:No\.|#|第)[ ]?$", folded[max(0, m.start() - 4) : m.start()]):
        return None
    value, precision = parse_number(num)
    scale = _scale(m)
    return _build(text, folded, m, "number", None, value * scale, precision * scale)


_UNIT_LOOKUP = {k.lower(): v for k, v in {**_UNITS_JA, **_UNITS_EN}.items()}
_Parser = Callable[[str, str, re.Match[str]], Value | None]
# Parsers by priority: earlier ones win overlaps; within one priority the longer match wins.
_FAMILIES: tuple[tuple[int, re.Pattern[str], _Parser], ...] = (
    (1, _WARI, _wari),
    (1, _FRACTION, _fraction),
    (1, _MONEY_PREFIX, _money_prefix),
    (1, _MEASURE, _measure),
    (2, _EN_COUNT, _en_count),
    (3, _BARE, _bare),
)


def parse_values(text: str) -> list[Value]:
    """Every figure and date in ``text``, sorted by position, with ``text[v.start:v.end] == v.raw``."""
    folded = fold(text)
    candidates: list[tuple[int, Value]] = [
        (
            0,
            Value(
                kind="date",
                value=None,
                raw=text[d.start : d.end],
                start=d.start,
                end=d.end,
                date_from=d.date_from,
                date_to=d.date_to,
                granularity=d.granularity,
            ),
        )
        for d in find_dates(folded)
    ]
    for priority, pattern, parser in _FAMILIES:
        for m in pattern.finditer(folded):
            value = parser(text, folded, m)
            if value is not None and value.value is not None and math.isfinite(value.value):
                candidates.append((priority, value))
    kept: list[Value] = []
    for _, v in sorted(candidates, key=lambda c: (c[0], c[1].start - c[1].end, c[1].start)):
        if all(v.end <= k.start or v.start >= k.end for k in kept):
            kept.append(v)
    return sorted(kept, key=lambda v: v.start)


def resolve_year(value: Value, year: int) -> Value:
    """A year-less date (9月, 11月末, "in March") placed in ``year``; other values are returned as they are."""
    if value.kind != "date" or not value.date_from or not value.date_from.startswith("--"):
        return value
    date_from, date_to = with_year(value.date_from, value.date_to or value.date_from, year)
    return value.model_copy(update={"date_from": date_from, "date_to": date_to})


def comparable(a: Value, b: Value) -> bool:
    """Same kind, unit and change flag; counts compare whatever the counter word (社, firms, responses)."""
    if a.kind != b.kind or a.change != b.change:
        return False
    return a.kind == "count" or a.unit == b.unit


def interval(v: Value, approx_rel: float = APPROX_REL) -> tuple[float, float]:
    """The values ``v`` allows: its bounds, else its rounding interval, widened for approximations.

    約6割 -> 55..65 (half a step of the last non-zero digit), 49.7% -> 49.65..49.75, 4割強 -> 40..45.
    """
    if v.value is None:
        raise ValueError("interval() needs a numeric value, not a date")
    if v.lower is not None or v.upper is not None:
        return (v.lower if v.lower is not None else -math.inf, v.upper if v.upper is not None else math.inf)
    precision = v.precision or 0.0
    half = precision / 2
    if v.approx:
        half = max(half, step(v.value, precision or 1.0) / 2, approx_rel * abs(v.value))
    return v.value - half, v.value + half


def values_agree(a: Value, b: Value, *, rel_tol: float = 0.0, abs_tol: float = 0.0) -> bool:
    """True when two comparable values can denote the same quantity (their intervals overlap).

    Both are read as written: 50% agrees with 49.7% (49.7 rounds to 50), 49.8% does not; 約5割 agrees
    with 49.7% and 約6割 does not. ``rel_tol``/``abs_tol`` widen the comparison further. Values that
    are not :func:`comparable` never agree; dates agree when their intervals overlap.
    """
    if not comparable(a, b):
        return False
    if a.kind == "date":
        return _dates_overlap(a, b)
    assert a.value is not None and b.value is not None
    (lo_a, hi_a), (lo_b, hi_b) = interval(a), interval(b)
    slack = abs_tol + rel_tol * max(abs(a.value), abs(b.value))
    eps = 1e-9 * max(1.0, abs(a.value), abs(b.value))
    return lo_a - slack < hi_b - eps and lo_b - slack < hi_a - eps


def _dates_overlap(a: Value, b: Value) -> bool:
    if not (a.date_from and a.date_to and b.date_from and b.date_to):
        return False
    if a.date_from.startswith("--") or b.date_from.startswith("--"):  # no year: compare month (and day)
        return a.date_from.lstrip("-")[-5:] == b.date_from.lstrip("-")[-5:]
    return a.date_from <= b.date_to and b.date_from <= a.date_to


__all__ = [
    "APPROX_REL",
    "Kind",
    "Value",
    "comparable",
    "fold",
    "interval",
    "parse_number",
    "parse_values",
    "resolve_year",
    "step",
    "values_agree",
]
