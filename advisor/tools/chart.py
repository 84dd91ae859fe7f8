"""``generate_chart``: a PNG (line, bar, comparison, forecast) with Japanese text in IPAex Gothic.

A forecast is a least-squares line over the given points, drawn dashed and labelled
「予測（線形外挿）」 so nobody takes the projection for data. Matplotlib warns about each glyph its
font lacks; such a warning is an error here (the PNG would show boxes).
"""

from __future__ import annotations

import io
import threading
import warnings
from decimal import Decimal
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, model_validator

from advisor.fonts import japanese_font
from advisor.tools.base import GeneratedFile, ToolContext, ToolInput
from core.errors import InputError

NAME = "generate_chart"
WIDTH, HEIGHT, DPI = 800, 600, 100
FORECAST_LABEL = "予測（線形外挿）"
_LOCK = threading.Lock()  # pyplot's state is global


class Point(BaseModel):
    date: str = Field(description="Label of the point on the x axis, e.g. 2023-01.")
    value: Decimal


class Category(BaseModel):
    label: str
    value: Decimal


class ChartData(BaseModel):
    time_series: list[Point] | None = Field(None, description="One series over time (line, bar, forecast).")
    series: dict[str, list[Point]] | None = Field(None, description="Several named series (line, comparison).")
    categories: list[Category] | None = Field(None, description="Labelled values (bar).")


class Annotation(BaseModel):
    x: str
    text: str


class ChartInput(ToolInput):
    data: ChartData
    chart_type: Literal["line", "bar", "comparison", "forecast"]
    title: str = Field(min_length=1, max_length=200)
    x_label: str = ""
    y_label: str = ""
    annotations: list[Annotation] = Field(default_factory=list)
    forecast_periods: int = Field(3, ge=1, le=24, description="Points projected by a forecast chart.")

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
        return f"{len(data.data.categories)}項目のうち最大は「{top.label}」（{top.value}）"
    return data.title


def render(data: ChartInput, font: Path) -> bytes:
    """The PNG bytes drawn with ``font``; InputError when a character has no glyph in it."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import font_manager
    from matplotlib import pyplot as plt

    with _LOCK, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        font_manager.fontManager.addfont(str(font))
        family = font_manager.FontProperties(fname=str(font)).get_name()
        with matplotlib.rc_context({"font.family": family, "axes.unicode_minus": False}):
            fig, ax = plt.subplots(figsize=(WIDTH / DPI, HEIGHT / DPI), dpi=DPI)
            try:
                _draw(ax, data)
                from matplotlib.ticker import FuncFormatter

                ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:,.0f}" if abs(v) >= 100 else f"{v:g}"))
                ax.set_title(data.title)
                ax.set_xlabel(data.x_label)
                ax.set_ylabel(data.y_label)
                ax.grid(True, alpha=0.3)
                if ax.get_legend_handles_labels()[0]:
                    ax.legend()
                fig.tight_layout()
                out = io.BytesIO()
                fig.savefig(out, format="png", dpi=DPI)
            finally:
                plt.close(fig)
    missing = [str(w.message) for w in caught if "missing from font" in str(w.message) or "Glyph" in str(w.message)]
    if missing:
        raise InputError(f"generate_chart: characters without a glyph in {font.name}: {missing[0]}; rephrase the text")
    return out.getvalue()


def _draw(ax: object, data: ChartInput) -> None:
    from matplotlib.axes import Axes

    assert isinstance(ax, Axes)
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
        ax.set_xticks(range(len(ticks)), ticks, rotation=30 if len(ticks) > 6 else 0)
    else:
        items = (
            [(c.label, c.value) for c in d.categories]
            if d.categories
            else [(p.date, p.value) for p in d.time_series or []]
        )
        positions = {label: i for i, (label, _) in enumerate(items)}
        bars = ax.bar(range(len(items)), [float(v) for _, v in items], color="#3b6ea8")
        ax.bar_label(bars, labels=[f"{v:,}" for _, v in items])
        ax.set_xticks(range(len(items)), [label for label, _ in items])
    for note in data.annotations:
        if note.x in positions:
            x = positions[note.x]
            ax.annotate(
                note.text, xy=(x, 0), xycoords=("data", "axes fraction"), xytext=(0, 12), textcoords="offset points"
            )


async def run(data: ChartInput, ctx: ToolContext) -> ChartOutput:
    import asyncio

    png = await asyncio.to_thread(render, data, japanese_font(ctx.settings))
    saved = ctx.save(NAME, "chart", "png", png, "graph")
    return ChartOutput(
        image_url=saved.url,
        key=saved.key,
        image_size=ImageSize(width=WIDTH, height=HEIGHT),
        summary=summarise(data),
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
    "NAME",
    "Annotation",
    "Category",
    "ChartData",
    "ChartInput",
    "ChartOutput",
    "ImageSize",
    "Point",
    "render",
    "run",
    "summarise",
]
