"""Pictures of figures over time: one PNG per claim key that has values at several dates.

A claim key is ``subject/attribute@period`` (:func:`nlp.conflicts.claim_key`). When the verified claims
state one subject's attribute for two or more periods (価格転嫁率 in 2024-03, 2024-09, 2025-03), the
report draws the series with matplotlib and links the picture from ``report.md``. Its title and axes
name the series and its unit in the report's language (research/labels.py), never the claim key.
Labels may be Japanese, so the figure needs a Japanese font, found by file (:mod:`core.fonts`);
without one the labels would be boxes, so the engine leaves the charts out and the report says so,
with the command that adds them.
"""

from __future__ import annotations

import hashlib
import io
import re
from collections.abc import Sequence
from datetime import date
from pathlib import Path

from pydantic import BaseModel

from core.files import atomic_write_bytes
from core.fonts import find_japanese_font, missing_font_message
from core.messages import Lang, catalogue
from nlp.values import parse_values
from research.evidence import EvidencedClaim
from research.labels import attribute_label, series_label, unit_label

MIN_POINTS = 2
_KEY = re.compile(r"^(?P<series>[^@]+)@(?P<period>\d{4}(?:-\d{2})?(?:-\d{2})?)")


class ChartRef(BaseModel):
    """A chart of the report: its title, file name (under ``charts/``) and the points it draws."""

    title: str
    file: str
    key: str
    points: list[tuple[str, float, str]]  # (period, value, figure as written)
    x_label: str = ""
    y_label: str = ""


def chart_refs(claims: Sequence[EvidencedClaim], lang: Lang = "ja") -> list[ChartRef]:
    """The series worth drawing: verified claims grouped by subject/attribute, dated, two periods or more;
    titled and labelled in ``lang``."""
    best: dict[str, dict[str, tuple[float, float, str]]] = {}
    units: dict[str, tuple[str, str | None]] = {}
    for claim in claims:
        match = _KEY.match(claim.key or "")
        if not (match and claim.supporting and claim.values):
            continue
        parsed = [v for v in parse_values(claim.values[0]) if v.value is not None and v.kind != "date"]
        if not parsed:
            continue
        points = best.setdefault(match.group("series"), {})
        units.setdefault(match.group("series"), (parsed[0].kind, parsed[0].unit))
        period = match.group("period")
        if period not in points or points[period][0] < claim.confidence:
            points[period] = (claim.confidence, float(parsed[0].value or 0.0), claim.values[0])
    refs = []
    for series, points in sorted(best.items()):
        if len(points) < MIN_POINTS:
            continue
        digest = hashlib.sha256(series.encode()).hexdigest()[:10]
        c, label = catalogue("research"), series_label(series, lang)
        _, attribute = series.split("/", 1)
        unit = unit_label(*units[series], lang)
        y_label = attribute_label(attribute, lang)
        refs.append(
            ChartRef(
                title=_sentence_case(c.text("chart.title", lang, label=label)),
                file=f"series-{digest}.png",
                key=series,
                points=[(p, v, raw) for p, (_, v, raw) in sorted(points.items())],
                x_label=c.text("chart.x", lang),
                y_label=_sentence_case(c.text("chart.y", lang, label=y_label, unit=unit) if unit else y_label),
            )
        )
    return refs


def _sentence_case(text: str) -> str:
    """A title starts with a capital (English labels are lower case inside sentences; Japanese has none)."""
    return text[:1].upper() + text[1:]


def period_start(period: str) -> date:
    """The first day of a period written ``YYYY``, ``YYYY-MM`` or ``YYYY-MM-DD``: where it sits on a time axis."""
    parts = [int(p) for p in period.split("-")]
    return date(parts[0], parts[1] if len(parts) > 1 else 1, parts[2] if len(parts) > 2 else 1)


def render_png(ref: ChartRef, font_file: Path) -> bytes:
    """The chart as PNG bytes (matplotlib, headless Agg backend, ``font_file`` for every label)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import font_manager
    from matplotlib import pyplot as plt

    font = font_manager.FontProperties(fname=str(font_file))
    figure, axes = plt.subplots(figsize=(6.4, 3.6), dpi=100)
    try:
        # A time axis: six months apart look twice as far apart as three months, unlike category labels.
        when = [period_start(p).toordinal() for p, _, _ in ref.points]
        values = [v for _, v, _ in ref.points]
        axes.plot(when, values, marker="o", color="#2b6cb0")
        axes.set_xticks(when, [p for p, _, _ in ref.points])
        for at, (_, value, raw) in zip(when, ref.points, strict=True):
            axes.annotate(raw, (at, value), textcoords="offset points", xytext=(0, 7), ha="center", fontproperties=font)
        axes.set_title(ref.title, fontproperties=font)
        axes.set_xlabel(ref.x_label, fontproperties=font)
        axes.set_ylabel(ref.y_label, fontproperties=font)
        axes.margins(y=0.25)
        axes.grid(alpha=0.3)
        buffer = io.BytesIO()
        figure.tight_layout()
        figure.savefig(buffer, format="png")
        return buffer.getvalue()
    finally:
        plt.close(figure)


def drawable(refs: list[ChartRef], lang: str) -> tuple[list[ChartRef], str | None]:
    """The charts this machine can draw, and a warning for the report when it can draw none of them."""
    if not refs or find_japanese_font() is not None:
        return refs, None
    what = f"グラフ{len(refs)}点" if lang == "ja" else f"{len(refs)} chart(s)"
    return [], missing_font_message(what, lang)


def write_charts(refs: Sequence[ChartRef], out_dir: Path) -> list[Path]:
    """Draw every chart into ``out_dir/charts/`` (none when no Japanese font is installed: the result
    then carries no charts: :func:`drawable`)."""
    font_file = find_japanese_font()
    if not refs or font_file is None:
        return []
    folder = out_dir / "charts"
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for ref in refs:
        written.append(atomic_write_bytes(folder / ref.file, render_png(ref, font_file)))
    return written


__all__ = [
    "MIN_POINTS",
    "ChartRef",
    "chart_refs",
    "drawable",
    "period_start",
    "render_png",
    "write_charts",
]
