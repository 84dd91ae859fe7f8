"""Calendar expressions in Japanese and English, as spans of days with a granularity.

Later stages compare *when* a figure applies, so every date becomes an ISO interval
(``date_from``..``date_to``): 令和6年9月 -> 2024-09-01..2024-09-30, 2024年度 -> 2024-04-01..2025-03-31.
Dates without a year (9月, 11月末, "in March") keep the year open and use the XML-Schema forms
``--MM`` / ``--MM-DD``; :func:`with_year` fills the year in once a caller knows it.

Conventions: fiscal years follow the Japanese April-March year (``FISCAL_YEAR_START_MONTH``), so
FY2024 and 2024年度 both run from April 2024 to March 2025; "2025年3月期" is the fiscal year that
ends in March 2025. Quarters (Q3 2024) are calendar quarters. Day-only dates (29日) are ignored:
without a month they cannot be placed. Functions here expect width-folded text (ASCII digits);
:data:`ERA_DATE` also accepts full-width digits because entity extraction runs on raw text.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from dataclasses import dataclass
from typing import Literal

Granularity = Literal["year", "fiscal_year", "half", "quarter", "month", "day"]

# First year of each era: 令和元年 = 2019, so 令和6年 = 2019 + 6 - 1.
ERAS: dict[str, int] = {"明治": 1868, "大正": 1912, "昭和": 1926, "平成": 1989, "令和": 2019}
FISCAL_YEAR_START_MONTH = 4

_KANJI_DIGITS = {c: i for i, c in enumerate("〇一二三四五六七八九")}
_KNUM = "[〇一二三四五六七八九十]+"
_N2 = rf"(?:[0-9]{{1,2}}|{_KNUM})"
_ERA_NAMES = "|".join(ERAS)
# 令和6年9月, 令和元年度, 平成31年4月30日; \d also takes full-width digits (used on raw text by nlp.entities).
ERA_DATE = re.compile(
    rf"(?P<era>{_ERA_NAMES})[ 　]?(?P<ey>元|\d{{1,2}}|{_KNUM})年"
    rf"(?:(?P<fy>度)|(?P<m>\d{{1,2}}|{_KNUM})月(?:(?P<d>\d{{1,2}}|{_KNUM})日)?)?"
)
_WESTERN_JA = re.compile(
    rf"(?<![0-9])(?P<y>(?:1[89]|20)[0-9]{{2}})年(?:(?P<fy>度)|(?P<m>{_N2})月(?:(?P<d>{_N2})日)?(?P<ki>期)?)?"
)
_MONTH_JA = re.compile(
    rf"(?<![0-9]年)(?<![0-9〇一二三四五六七八九十第])(?P<m>1[0-2]|0?[1-9]|十[一二]?|[一二三四五六七八九])月(?!間)(?:(?P<d>{_N2})日)?(?P<end>末|上旬|中旬|下旬)?"
)
_ISO = re.compile(
    r"(?<![0-9])(?P<y>(?:19|20)[0-9]{2})(?:-(?P<m>[0-9]{1,2})(?:-(?P<d>[0-9]{1,2}))?|/(?P<m2>[0-9]{1,2})(?:/(?P<d2>[0-9]{1,2}))?)(?![0-9])"
)

_MONTHS = {
    name: i
    for i, names in enumerate(
        [
            ("January", "Jan"),
            ("February", "Feb"),
            ("March", "Mar"),
            ("April", "Apr"),
            ("May",),
            ("June", "Jun"),
            ("July", "Jul"),
            ("August", "Aug"),
            ("September", "Sep", "Sept"),
            ("October", "Oct"),
            ("November", "Nov"),
            ("December", "Dec"),
        ],
        start=1,
    )
    for name in names
}
_MON = "|".join(sorted((f"{n}\\.?" if len(n) <= 4 and n != "May" else n for n in _MONTHS), key=len, reverse=True))
_YEAR = r"(?:19|20)[0-9]{2}"
_EN_MDY = re.compile(rf"\b(?P<mon>{_MON})(?:[ ](?P<d>[0-9]{{1,2}})(?:st|nd|rd|th)?,?)?[ ](?P<y>{_YEAR})\b")
_EN_DMY = re.compile(rf"\b(?P<d>[0-9]{{1,2}})(?:st|nd|rd|th)?[ ](?P<mon>{_MON})[ ,]+(?P<y>{_YEAR})\b")
# A month without a year only after a preposition, and never "May" (the modal verb).
_EN_MONTH = re.compile(
    r"\b(?:in|since|from|until|by|during|last|this|next|early|late|mid|end of)[ -]"
    r"(?P<mon>January|February|March|April|June|July|August|September|October|November|December)\b(?![ ,]*[0-9])"
)
_EN_FY = re.compile(rf"\b(?:FY[ ]?(?P<y>{_YEAR}|[0-9]{{2}})|[Ff]iscal(?:[ ]year)?[ ](?P<y2>{_YEAR}))\b")
_ORDINALS = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4}
_EN_QUARTER = re.compile(
    rf"\b(?:(?:Q(?P<q>[1-4])|(?P<q2>[1-4])Q)[ ]?(?P<y>{_YEAR})|(?P<y3>{_YEAR})[ ]Q(?P<q3>[1-4])"
    rf"|(?P<ord>first|second|third|fourth|1st|2nd|3rd|4th)[ ]quarter[ ]of[ ](?P<y2>{_YEAR}))\b"
)
_EN_HALF = re.compile(rf"\b(?:H(?P<h>[12])[ ](?P<y>{_YEAR})|(?P<ord>first|second)[ ]half[ ]of[ ](?P<y2>{_YEAR}))\b")
_EN_YEAR = re.compile(
    rf"\b(?:in|since|by|until|from|during|of|for|through|before|after|end)[ ](?P<y>{_YEAR})\b(?![-/][0-9]|[ ]?年)"
)


@dataclass(frozen=True)
class DateMatch:
    """One calendar expression: ``text[start:end]`` with its ISO interval (see the module docstring)."""

    start: int
    end: int
    granularity: Granularity
    date_from: str
    date_to: str


def small_int(s: str) -> int | None:
    """1-99 written in ASCII digits or kanji (十二, 三十一), or 元 (the first year of an era)."""
    if s == "元":
        return 1
    if s.isascii() and s.isdigit():
        return int(s)
    if not s.isascii() and all(c in "０１２３４５６７８９" for c in s):
        return int(s.translate(str.maketrans("０１２３４５６７８９", "0123456789")))
    if "十" in s:
        tens, _, ones = s.partition("十")
        t = _KANJI_DIGITS.get(tens, -1) if tens else 1
        o = _KANJI_DIGITS.get(ones, -1) if ones else 0
        return t * 10 + o if t >= 0 and o >= 0 else None
    if s and all(c in _KANJI_DIGITS for c in s):
        return int("".join(str(_KANJI_DIGITS[c]) for c in s))
    return None


def span_of(
    granularity: Granularity, year: int | None, month: int | None = None, day: int | None = None
) -> tuple[str, str]:
    """ISO ``(from, to)`` of a year, fiscal year (``year`` = its start), month or day; year-less -> ``--MM``."""
    if year is None:
        assert month is not None
        text = f"--{month:02d}" if day is None else f"--{month:02d}-{day:02d}"
        return text, text
    if granularity == "day":
        assert month is not None and day is not None
        iso = dt.date(year, month, day).isoformat()
        return iso, iso
    if granularity == "month":
        assert month is not None
        return dt.date(year, month, 1).isoformat(), dt.date(
            year, month, calendar.monthrange(year, month)[1]
        ).isoformat()
    if granularity == "fiscal_year":
        start = dt.date(year, FISCAL_YEAR_START_MONTH, 1)
        end = dt.date(year + 1, start.month, 1) - dt.timedelta(days=1)
        return start.isoformat(), end.isoformat()
    return f"{year}-01-01", f"{year}-12-31"


def _months(year: int, first: int, last: int, granularity: Granularity) -> tuple[Granularity, str, str]:
    """A quarter or half: from the first day of ``first`` to the last day of ``last``."""
    return granularity, span_of("month", year, first)[0], span_of("month", year, last)[1]


def with_year(date_from: str, date_to: str, year: int) -> tuple[str, str]:
    """Fill the year into a year-less ``--MM`` / ``--MM-DD`` interval (others pass through unchanged)."""
    if not date_from.startswith("--"):
        return date_from, date_to
    month = int(date_from[2:4])
    day = int(date_from[5:7]) if len(date_from) > 4 else None
    try:
        return span_of("day" if day else "month", year, month, day)
    except ValueError:  # --02-29 in a common year
        return date_from, date_to


def _make(start: int, end: int, year: int | None, month: int | None, day: int | None) -> DateMatch | None:
    """A match for a calendar date, or None when the month or day is impossible."""
    if month is not None and not 1 <= month <= 12:
        return None
    granularity: Granularity = "day" if day is not None else "month" if month is not None else "year"
    try:
        if day is not None:
            dt.date(year or 2000, month or 1, day)  # 2000 is a leap year: --02-29 stays allowed
        date_from, date_to = span_of(granularity, year, month, day)
    except ValueError:
        return None
    return DateMatch(start, end, granularity, date_from, date_to)


def _ja_match(m: re.Match[str], year: int) -> DateMatch | None:
    if m.group("fy"):
        date_from, date_to = span_of("fiscal_year", year)
        return DateMatch(m.start(), m.end(), "fiscal_year", date_from, date_to)
    month = small_int(m.group("m")) if m.group("m") else None
    if month is not None and "ki" in m.groupdict() and m.group("ki"):  # 2025年3月期: the fiscal year ending then
        first = dt.date(year - 1 if month < 12 else year, month % 12 + 1, 1)
        return DateMatch(m.start(), m.end(), "fiscal_year", first.isoformat(), span_of("month", year, month)[1])
    day = small_int(m.group("d")) if m.group("d") else None
    return _make(m.start(), m.end(), year, month, day)


def find_dates(text: str) -> list[DateMatch]:
    """Every calendar expression in width-folded ``text``, longest first where they overlap, by position."""
    found: list[DateMatch | None] = []
    for m in ERA_DATE.finditer(text):
        n = small_int(m.group("ey"))
        if n is not None:
            found.append(_ja_match(m, ERAS[m.group("era")] + n - 1))
    for m in _WESTERN_JA.finditer(text):
        found.append(_ja_match(m, int(m.group("y"))))
    for m in _MONTH_JA.finditer(text):
        found.append(
            _make(m.start(), m.end(), None, small_int(m.group("m")), small_int(m.group("d")) if m.group("d") else None)
        )
    for m in _ISO.finditer(text):
        month, day = m.group("m") or m.group("m2"), m.group("d") or m.group("d2")
        if month:
            found.append(_make(m.start(), m.end(), int(m.group("y")), int(month), int(day) if day else None))
    for pattern in (_EN_MDY, _EN_DMY):
        for m in pattern.finditer(text):
            month = _MONTHS[m.group("mon").rstrip(".")]
            found.append(
                _make(m.start(), m.end(), int(m.group("y")), month, int(m.group("d")) if m.group("d") else None)
            )
    for m in _EN_MONTH.finditer(text):
        found.append(_make(m.start("mon"), m.end("mon"), None, _MONTHS[m.group("mon")], None))
    for m in _EN_FY.finditer(text):
        y = m.group("y") or m.group("y2")
        year = int(y) + (2000 if len(y) == 2 else 0)
        date_from, date_to = span_of("fiscal_year", year)
        found.append(DateMatch(m.start(), m.end(), "fiscal_year", date_from, date_to))
    for m in _EN_QUARTER.finditer(text):
        q = int(m.group("q") or m.group("q2") or m.group("q3") or _ORDINALS[m.group("ord")])
        year = int(m.group("y") or m.group("y2") or m.group("y3"))
        found.append(DateMatch(m.start(), m.end(), *_months(year, 3 * q - 2, 3 * q, "quarter")))
    for m in _EN_HALF.finditer(text):
        h = int(m.group("h") or (1 if m.group("ord") == "first" else 2))
        year = int(m.group("y") or m.group("y2"))
        found.append(DateMatch(m.start(), m.end(), *_months(year, 6 * h - 5, 6 * h, "half")))
    for m in _EN_YEAR.finditer(text):
        found.append(_make(m.start("y"), m.end("y"), int(m.group("y")), None, None))
    return _longest_first([d for d in found if d is not None])


def _longest_first(dates: list[DateMatch]) -> list[DateMatch]:
    """Keep the longest of overlapping matches (令和6年9月 over 6年9月 and 9月), sorted by position."""
    kept: list[DateMatch] = []
    for d in sorted(dates, key=lambda d: (d.start - d.end, d.start)):
        if all(d.end <= k.start or d.start >= k.end for k in kept):
            kept.append(d)
    return sorted(kept, key=lambda d: d.start)


__all__ = [
    "ERAS",
    "ERA_DATE",
    "FISCAL_YEAR_START_MONTH",
    "DateMatch",
    "Granularity",
    "find_dates",
    "small_int",
    "span_of",
    "with_year",
]
