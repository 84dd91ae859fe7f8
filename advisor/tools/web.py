"""``web_search``: the project's search providers (``search:`` settings: local corpus, ddgs, SearXNG)
with the spec's search type and date range.

``date_range`` is either relative (``d``, ``w``, ``m``, ``y``, ``all``: passed to the provider) or
absolute (``2021-2024``, ``2024``, ``2024-01..2024-06``, ``2024-01-01..2024-12-31``): then results
dated outside it are dropped and counted; undated results are kept with ``published_date: null``,
since a provider that gives no date cannot be said to be outside the range.
"""

from __future__ import annotations

import calendar
import re
from datetime import date
from functools import cache
from typing import ClassVar, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, Field

from advisor.sources import require_web
from advisor.tools.base import ToolContext, ToolInput
from core.errors import InputError
from core.policy import PolicyModel, load_policy
from core.resources import data_path
from scrapers.search.factory import open_search

NAME = "web_search"
SearchType = Literal["news", "statistics", "company_info", "market_data"]
RELATIVE = {"d", "w", "m", "y", "day", "week", "month", "year", "all"}


class SearchHints(PolicyModel):
    policy_name: ClassVar[str] = "advisor search types file"
    hints: dict[SearchType, str]


@cache
def hints() -> dict[str, str]:
    loaded = load_policy(data_path("advisor", "search_types.yaml"), SearchHints).hints
    return {str(k): v for k, v in loaded.items()}


class WebSearchInput(ToolInput):
    query: str = Field(min_length=1, max_length=300)
    search_type: SearchType | None = None
    date_range: str | None = Field(
        None, description="d/w/m/y, or 2021-2024, 2024, 2024-01..2024-06, 2024-01-01..2024-12-31."
    )
    max_results: int = Field(10, ge=1, le=20)


class WebResult(BaseModel):
    title: str
    url: str
    snippet: str
    published_date: date | None
    source: str


class WebMetadata(BaseModel):
    query: str
    sent_query: str
    search_type: str | None
    date_range: str | None
    result_count: int
    outside_range: int
    providers: list[str]


class WebSearchOutput(BaseModel):
    results: list[WebResult]
    metadata: WebMetadata


def _bound(text: str, end: bool) -> date:
    parts = [int(p) for p in text.split("-")]
    year = parts[0]
    month = parts[1] if len(parts) > 1 else (12 if end else 1)
    if len(parts) > 2:
        return date(year, month, parts[2])
    return date(year, month, calendar.monthrange(year, month)[1] if end else 1)


def parse_range(value: str | None) -> tuple[str | None, tuple[date, date] | None]:
    """(relative time_range for the provider, absolute (start, end)); InputError naming date_range."""
    if value is None or not value.strip():
        return None, None
    text = value.strip().lower()
    if text in RELATIVE:
        return text, None
    parts = re.split(r"\.\.|~|〜", text)
    if len(parts) == 1 and re.fullmatch(r"\d{4}-\d{4}", text):
        parts = text.split("-")
    first, last = parts[0].strip(), parts[-1].strip()
    if len(parts) > 2 or not all(re.fullmatch(r"\d{4}(?:-\d{1,2}(?:-\d{1,2})?)?", p) for p in (first, last)):
        raise InputError(
            f"date_range {value!r} is not understood; use d, w, m, y, all, or a range such as 2021-2024, "
            "2024-01..2024-06 or 2024-01-01..2024-12-31"
        )
    try:
        start, end = _bound(first, end=False), _bound(last, end=True)
    except ValueError as exc:
        raise InputError(f"date_range {value!r}: {exc}") from None
    if start > end:
        raise InputError(f"date_range {value!r} starts after it ends; give the earlier date first")
    return None, (start, end)


async def run(data: WebSearchInput, ctx: ToolContext) -> WebSearchOutput:
    require_web(ctx.settings)  # the bundled sample corpus is never presented as the web
    relative, window = parse_range(data.date_range)
    sent = f"{data.query} {hints()[data.search_type]}" if data.search_type else data.query
    setup = open_search(ctx.settings)
    found = await setup.provider.search(sent, max_results=data.max_results, time_range=relative)
    if not found and data.search_type:  # the hint words may narrow too much: the plain query once more
        sent = data.query
        found = await setup.provider.search(sent, max_results=data.max_results, time_range=relative)
    results, outside = [], 0
    for hit in found:
        if window is not None and hit.published is not None and not window[0] <= hit.published <= window[1]:
            outside += 1
            continue
        host = urlsplit(hit.url).hostname or hit.provider
        results.append(
            WebResult(title=hit.title, url=hit.url, snippet=hit.snippet, published_date=hit.published, source=host)
        )
    meta = WebMetadata(
        query=data.query,
        sent_query=sent,
        search_type=data.search_type,
        date_range=data.date_range,
        result_count=len(results),
        outside_range=outside,
        providers=list(setup.chain),
    )
    return WebSearchOutput(results=results, metadata=meta)


DESCRIPTION = (
    "Web検索: 市場データ（企業物価指数、最低賃金など）、企業情報（決算短信、IR、パートナーシップ構築宣言）、"
    "業界ニュースを検索します。search_type: news/statistics/company_info/market_data、"
    "date_range: 例 '2021-2024' や 'y'（直近1年）。結果は title, url, snippet, published_date, source。"
    "未設定ならエラー（search_knowledge_base を使う）。"
)

__all__ = [
    "DESCRIPTION",
    "NAME",
    "SearchHints",
    "WebMetadata",
    "WebResult",
    "WebSearchInput",
    "WebSearchOutput",
    "hints",
    "parse_range",
    "run",
]
