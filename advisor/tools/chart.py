"""``generate_chart``: a PNG (line, bar, comparison, forecast) with Japanese text in IPAex Gothic.

A forecast is a least-squares line over the given points, drawn dashed and labelled
「予測（線形外挿）」 so nobody takes the projection for data. A character the font has no glyph for
is an InputError (the PNG would show boxes).

The input is bounded before anything is drawn (categories, points, series, annotations, text
lengths, finite values of at most 15 digits before the point), so one chart costs well under a
second. Text is drawn as text: ``$...$`` is never read as a formula. Charts are drawn with
matplotlib's object API (no pyplot, no global style) in a small pool of threads, so two charts draw
side by side and a full pool refuses a chart at once instead of queueing every user behind one lock.
"""

from __future__ import annotations

import asyncio
import io
import math
import threading
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, model_validator

from advisor.audience import internal_amounts, internal_findings
from advisor.fonts import japanese_font
from advisor.labels import Audience
from advisor.tools.base import GeneratedFile, ToolContext, ToolInput
from core.errors import InputError

NAME = "generate_chart"
WIDTH, HEIGHT, DPI = 800, 600, 100
FORECAST_LABEL = "予測（線形外挿）"
MAX_POINTS = 120  # per series
MAX_SERIES = 8
MAX_CATEGORIES = 40
MAX_ANNOTATIONS = 20
MAX_LABEL_CHARS = 60
MAX_VALUE = Decimal("1e15")
RENDER_THREADS = 2  # charts drawn at once per process
RENDER_WAITING = 8  # charts waiting for a thread; more are refused at once
CLOSE_SPREAD = 0.25  # bars whose spread is below this share of the largest start above 0 (axis broken)

Label = Annotated[str, Field(max_length=MAX_LABEL_CHARS)]
Value = Annotated[Decimal, Field(allow_inf_nan=False, ge=-MAX_VALUE, le=MAX_VALUE, max_digits=24)]


class Point(BaseModel):
    date: Label = Field(description="Label of the point on the x axis, e.g. 2023-01.")
    value: Value


class Category(BaseModel):
    label: Label
    value: Value


class ChartData(BaseModel):
    time_series: list[Point] | None = Field(
        None, max_length=MAX_POINTS, description="One series over time (line, bar, forecast)."
    )
    series: dict[Label, Annotated[list[Point], Field(max_length=MAX_POINTS)]] | None = Field(
        None, max_length=MAX_SERIES, description="Several named series (line, comparison)."
    )
    categories: list[Category] | None = Field(None, max_length=MAX_CATEGORIES, description="Labelled values (bar).")


class Annotation(BaseModel):
    x: Label
    text: Label


class ChartInput(ToolInput):
    data: ChartData
    chart_type: Literal["line", "bar", "comparison", "forecast"]
    title: str = Field(min_length=1, max_length=200)
    x_label: Label = ""
    y_label: Label = ""
    annotations: list[Annotation] = Field(default_factory=list, max_length=MAX_ANNOTATIONS)
    forecast_periods: int = Field(3, ge=1, le=24, description="Points projected by a forecast chart.")
    audience: Audience = Field(
        "internal",
        description="external なら取引先向け文書に添付可（社内の数字を含むと internal）。",
    )

    @model_validator(mode="after")
    def _has_data(self) -> ChartInput:
        d = self.data
        if not (d.time_series or d.series or d.categories):
            raise ValueError("data needs time_series, series or categories with at least one point")
        if self.chart_type == "forecast" and (not d.time_series or len(d.time_series) < 2):
            raise ValueError("a forecast chart needs data.time_series with at least 2 points")
        if self.chart_type == "comparison" and not (d.series and len(d.series) >= 2) and not d.categories:
            raise ValueError("a comparison chart needs data.series with at least 2 series (or data.categories)")
        return self


class ImageSize(BaseModel):
    width: int
    height: int


class ChartOutput(BaseModel):
    image_url: str
    key: str
    image_format: Literal["png"] = "png"
    image_size: ImageSize
    summary: str
    audience: Audience
    audience_note: str = ""
    files: list[GeneratedFile]


def _trend(points: list[Point]) -> tuple[float, float]:
    """(slope, intercept) of the least-squares line over positions 0..n-1."""
    n = len(points)
    xs = list(range(n))
    ys = [float(p.value) for p in points]
    mx, my = sum(xs) / n, sum(ys) / n
    var = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var if var else 0.0
    return slope, my - slope * mx


def summarise(data: ChartInput) -> str:
    pts = data.data.time_series or (next(iter(data.data.series.values())) if data.data.series else None)
    if pts and len(pts) >= 2 and pts[0].value != 0:
        change = (pts[-1].value - pts[0].value) / pts[0].value * 100
        text = f"{pts[0].date}から{pts[-1].date}にかけて{change:+.1f}%の変化"
        if data.chart_type == "forecast":
            slope, _ = _trend(pts)
            text += (
                f"。直線的な傾向（1期あたり{slope:+.2f}）が続くと仮定した"
                f"{data.forecast_periods}期先までの予測を点線で示します"
            )
        return text
    if data.data.categories:
        top = max(data.data.categories, key=lambda c: c.value)
        unit = "円" if "円" in f"{data.y_label}{data.title}" else ""
        return f"{len(data.data.categories)}項目のうち最大は「{top.label}」（{_plain(top.value)}{unit}）"
    return data.title


@cache
def _glyphs(font: Path) -> frozenset[int]:
    from matplotlib.ft2font import FT2Font

    return frozenset(FT2Font(str(font)).get_charmap())


def _texts(data: ChartInput) -> list[str]:
    d = data.data
    texts = [data.title, data.x_label, data.y_label, FORECAST_LABEL, *(n.text for n in data.annotations)]
    texts += [p.date for p in d.time_series or []] + [c.label for c in d.categories or []]
    texts += [name for name in d.series or {}] + [p.date for pts in (d.series or {}).values() for p in pts]
    return texts


def _check_glyphs(data: ChartInput, font: Path) -> None:
    known = _glyphs(font)
    for text in _texts(data):
        for char in text:
            if not char.isspace() and ord(char) not in known:
                raise InputError(f"generate_chart: {char!r} has no glyph in {font.name}; rephrase the text without it")


def render(data: ChartInput, font: Path) -> bytes:
    """The PNG bytes drawn with ``font``; InputError when a character has no glyph in it. Safe to call
    from several threads at once: each call draws its own Figure and touches no global style."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.font_manager import FontProperties
    from matplotlib.ticker import FuncFormatter

    _check_glyphs(data, font)
    prop = FontProperties(fname=str(font))
    fig = Figure(figsize=(WIDTH / DPI, HEIGHT / DPI), dpi=DPI)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    try:
        _draw(ax, data, prop)
        ax.yaxis.set_major_formatter(FuncFormatter(_tick))
        title = prop.copy()
        title.set_size("large")
        ax.set_title(data.title, fontproperties=title, parse_math=False)
        ax.set_xlabel(data.x_label, fontproperties=prop, parse_math=False)
        ax.set_ylabel(data.y_label, fontproperties=prop, parse_math=False)
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            legend = ax.legend(prop=prop)
            for text in legend.get_texts():
                text.set_parse_math(False)
        for label in [*ax.get_xticklabels(), *ax.get_yticklabels()]:
            label.set_fontproperties(prop)
            label.set_parse_math(False)
        fig.tight_layout()
        out = io.BytesIO()
        fig.savefig(out, format="png", dpi=DPI)
    except (ValueError, OverflowError) as exc:  # values the axes cannot lay out: the caller's to change
        raise InputError(f"generate_chart: these values cannot be drawn ({type(exc).__name__}); check them") from None
    return out.getvalue()


def _plain(value: Decimal) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,}"


def _close_up(ax: Any, values: list[float], prop: Any) -> None:
    """Bars of close positive values: the axis starts near them, not at 0, so their differences show;
    a zigzag on the axis and a note mark the omitted part (a bar chart from 0 would hide them)."""
    low, high = min(values), max(values)
    if low <= 0 or high <= 0 or (high - low) / high >= CLOSE_SPREAD:
        return
    spread = max(high - low, high * 0.01)
    step = 10 ** math.floor(math.log10(spread))
    bottom = max(0.0, math.floor((low - spread * 1.2) / step) * step)  # a round number to read off
    ax.set_ylim(bottom, high + spread * 0.5)
    for y in (0.0, 0.025):
        ax.plot(
            [-0.02, 0.0, 0.02, 0.0],
            [0.03 + y, 0.045 + y, 0.06 + y, 0.075 + y],
            transform=ax.transAxes,
            color="black",
            linewidth=1.2,
            clip_on=False,
        )
    ax.text(
        0.01,
        0.985,
        f"縦軸は{bottom:,.0f}から（途中を省略）",
        transform=ax.transAxes,
        fontproperties=prop,
        fontsize=8,
        color="#57606a",
        va="top",
        ha="left",
        parse_math=False,
    )


def _tick(value: float, _pos: int) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:g}"


class _Pool:
    """The threads charts are drawn in: :data:`RENDER_THREADS` at once, :data:`RENDER_WAITING` waiting."""

    def __init__(self) -> None:
        self._executor = ThreadPoolExecutor(max_workers=RENDER_THREADS, thread_name_prefix="chart")
        self._admitted = threading.BoundedSemaphore(RENDER_THREADS + RENDER_WAITING)

    async def render(self, data: ChartInput, font: Path) -> bytes:
        if not self._admitted.acquire(blocking=False):
            raise InputError("generate_chart: too many charts are being drawn right now; try again in a moment")
        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, render, data, font)
        finally:
            self._admitted.release()


POOL = _Pool()


def _draw(ax: Any, data: ChartInput, prop: Any) -> None:
    d = data.data
    positions: dict[str, int] = {}
    if data.chart_type in ("line", "forecast") or (data.chart_type == "comparison" and d.series and not d.categories):
        named = d.series if d.series else {"実績": d.time_series or []}
        labels = list(dict.fromkeys(p.date for pts in named.values() for p in pts))
        positions = {label: i for i, label in enumerate(labels)}
        if data.chart_type == "comparison":
            width = 0.8 / len(named)
            for k, (name, pts) in enumerate(named.items()):
                xs = [positions[p.date] + (k - (len(named) - 1) / 2) * width for p in pts]
                ax.bar(xs, [float(p.value) for p in pts], width=width, label=name)
        else:
            for name, pts in named.items():
                ax.plot([positions[p.date] for p in pts], [float(p.value) for p in pts], marker="o", label=name)
        ticks = labels
        if data.chart_type == "forecast" and d.time_series:
            pts = d.time_series
            slope, _ = _trend(pts)
            n, last = len(pts), float(pts[-1].value)
            xs = list(range(n - 1, n + data.forecast_periods))  # from the last actual point, at the fitted slope
            ax.plot(xs, [last + slope * (x - n + 1) for x in xs], linestyle="--", marker="x", label=FORECAST_LABEL)
            ax.axvspan(n - 1, xs[-1], alpha=0.08, color="gray")
            ticks = labels + [f"+{i}期" for i in range(1, data.forecast_periods + 1)]
        ax.set_xticks(range(len(ticks)), ticks, rotation=30 if len(ticks) > 6 else 0, fontproperties=prop)
    else:
        items = (
            [(c.label, c.value) for c in d.categories]
            if d.categories
            else [(p.date, p.value) for p in d.time_series or []]
        )
        positions = {label: i for i, (label, _) in enumerate(items)}
        values = [float(v) for _, v in items]
        bars = ax.bar(range(len(items)), values, color="#3b6ea8")
        unit = "円" if "円" in f"{data.y_label}{data.title}" else ""
        for text in ax.bar_label(bars, labels=[f"{_plain(v)}{unit}" for _, v in items], padding=3, fontproperties=prop):
            text.set_parse_math(False)
        ax.set_xticks(range(len(items)), [label for label, _ in items], fontproperties=prop)
        _close_up(ax, values, prop)
    for note in data.annotations:
        if note.x in positions:
            x = positions[note.x]
            ax.annotate(
                note.text,
                xy=(x, 0),
                xycoords=("data", "axes fraction"),
                xytext=(0, 12),
                textcoords="offset points",
                fontproperties=prop,
                parse_math=False,
            )


def audience_of(data: ChartInput, ctx: ToolContext) -> tuple[Audience, str]:
    """(audience, why it differs from the one asked for): a chart of internal words or figures is internal."""
    if data.audience == "internal":
        return "internal", ""
    values = [str(v) for v in _values(data)]
    found = internal_findings([*_texts(data), *values], internal_amounts(ctx.earlier))
    if found:
        return "internal", f"社内の数字・語（{'、'.join(found[:4])}）を含むため社内用としました"
    return "external", ""


def _values(data: ChartInput) -> list[Decimal]:
    d = data.data
    out = [p.value for p in d.time_series or []] + [c.value for c in d.categories or []]
    return out + [p.value for pts in (d.series or {}).values() for p in pts]


async def run(data: ChartInput, ctx: ToolContext) -> ChartOutput:
    audience, note = audience_of(data, ctx)
    png = await POOL.render(data, japanese_font(ctx.section))
    saved = ctx.save(NAME, data.title, "png", png, "graph", audience)
    return ChartOutput(
        image_url=saved.url,
        key=saved.key,
        image_size=ImageSize(width=WIDTH, height=HEIGHT),
        summary=summarise(data),
        audience=audience,
        audience_note=note,
        files=[saved],
    )


DESCRIPTION = (
    "グラフ生成: 折れ線(line)・棒(bar)・比較(comparison)・予測(forecast)のPNGを作ります。"
    "data.time_series=[{date, value}]、data.series={名前: [...]}、data.categories=[{label, value}]。"
    "予測は線形外挿で、図中に「予測」と明記されます。"
)

__all__ = [
    "DESCRIPTION",
    "FORECAST_LABEL",
    "MAX_CATEGORIES",
    "MAX_POINTS",
    "MAX_SERIES",
    "NAME",
    "POOL",
    "Annotation",
    "Category",
    "ChartData",
    "ChartInput",
    "ChartOutput",
    "ImageSize",
    "Point",
    "audience_of",
    "render",
    "run",
    "summarise",
]
