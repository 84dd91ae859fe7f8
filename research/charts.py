"""Pictures of figures over time: one PNG per series (subject and attribute) stated at several dates.

A claim key is ``subject/attribute@period`` (:func:`nlp.conflicts.claim_key`). When the report states
one subject's attribute for two or more periods (価格転嫁率 in 2024-03, 2024-09, 2025-03), it draws the
series with matplotlib and links the picture from ``report.md``; the report lists the plotted figures
under it with their sources, so every point is a figure the report states.

Which figure is a point: a chart must agree with the report beside it.

* a disputed figure (a detected conflict on the series at that period, or the newer side of an outdated
  one) is drawn at the figure the report's reading prefers (:attr:`nlp.conflicts.Conflict.preferred`),
  never at the other side's: the trucking rate of 2024-09 is the official 34.2%, not the wire story's
  21.3%, even when only the wire story's sentence is among the claims;
* otherwise, among the verified claims of that period, a precise figure comes before a rounded or bounded
  paraphrase of it (52.4% before 「5割を超えた」), then the higher confidence, then the claim id;
* only levels are points: a change (2.7ポイント上昇) or a figure of another kind than the series' (a gap
  in points under a percentage series) is no value of the series at that date.

Titles and axes name the series and its unit in the report's language (research/labels.py), never the
claim key. Labels may be Japanese, so the figure needs a Japanese font, found by file
(:mod:`core.fonts`); without one the labels would be boxes, so the engine leaves the charts out and the
report says so, with the command that adds them.
"""

from __future__ import annotations

import hashlib
import io
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from pydantic import BaseModel, field_validator

from core.files import atomic_write_bytes
from core.fonts import find_japanese_font, missing_font_message
from core.messages import Lang, catalogue
from nlp.conflicts import Conflict
from nlp.values import Value, fold, parse_values
from research.evidence import EvidencedClaim
from research.labels import attribute_label, series_label, unit_label

MIN_POINTS = 2
_KEY = re.compile(r"^(?P<series>[^@]+)@(?P<period>\d{4}(?:-\d{2})?(?:-\d{2})?)$")


class ChartPoint(BaseModel):
    """One plotted figure: its period, value, the figure as the report writes it, and the page stating it."""

    period: str
    value: float
    figure: str
    source: str = ""


class ChartRef(BaseModel):
    """A chart of the report: its title, file name (under ``charts/``) and the points it draws."""

    title: str
    file: str
    key: str
    points: list[ChartPoint]
    x_label: str = ""
    y_label: str = ""

    @field_validator("points", mode="before")
    @classmethod
    def _from_tuples(cls, points: Any) -> Any:
        """``(period, value, figure)`` triples, as older results wrote them, are points too."""
        if isinstance(points, list):
            return [
                dict(zip(("period", "value", "figure"), p, strict=True)) if isinstance(p, list | tuple) else p
                for p in points
            ]
        return points


@dataclass(frozen=True)
class _Candidate:
    """A figure that could be the point of a series at a period, and how strongly (see the module docstring)."""

    value: Value
    source: str
    preferred: bool  # the reading of a dispute prefers it
    confidence: float
    tie: str

    @property
    def rank(self) -> tuple[bool, bool, float, str]:
        v = self.value
        rounded = v.approx or v.lower is not None or v.upper is not None
        return (not self.preferred, rounded, -self.confidence, self.tie)


def _level(text: str, figures: Sequence[str]) -> Value | None:
    """The first of ``figures`` that ``text`` states as a level (not a change, not a date), read in its
    sentence: 2.7ポイント in 「…から2.7ポイント上昇」 is a change."""
    wanted = {fold(f) for f in figures}
    for v in parse_values(text):
        if fold(v.raw) in wanted and v.value is not None and v.kind != "date" and not v.change:
            return v
    return None


def _split(key: str | None) -> tuple[str, str] | None:
    match = _KEY.match(key or "")
    return (match.group("series"), match.group("period")) if match else None


def _candidates(
    claims: Sequence[EvidencedClaim], disputed: Sequence[Conflict]
) -> dict[str, dict[str, list[_Candidate]]]:
    found: dict[str, dict[str, list[_Candidate]]] = {}

    def add(
        key: str | None, text: str, figures: Sequence[str], source: str, preferred: bool, confidence: float, tie: str
    ) -> None:
        split = _split(key)
        level = _level(text, figures) if split else None
        if split and level is not None:
            series, period = split
            found.setdefault(series, {}).setdefault(period, []).append(
                _Candidate(level, source, preferred, confidence, tie)
            )

    for claim in claims:
        if claim.supporting and claim.values:
            cited = max(claim.supporting, key=lambda c: c.reliability)  # the first of the most reliable
            add(claim.key, claim.text, claim.values, cited.url, False, claim.confidence, claim.claim_id)
    for conflict in disputed:
        side = conflict.preferred
        add(side.key, side.text, [side.value], side.source, True, conflict.confidence, conflict.conflict_id)
    return found


def chart_refs(
    claims: Sequence[EvidencedClaim], lang: Lang = "ja", disputed: Sequence[Conflict] = ()
) -> list[ChartRef]:
    """The series worth drawing: verified claims and the preferred figures of disputes, grouped by
    subject/attribute, dated, two periods or more; titled and labelled in ``lang``."""
    refs = []
    for series, periods in sorted(_candidates(claims, disputed).items()):
        kinds = Counter((c.value.kind, c.value.unit) for found in periods.values() for c in found)
        kind, unit = kinds.most_common(1)[0][0]
        points = []
        for period, found in sorted(periods.items()):
            same = [c for c in found if (c.value.kind, c.value.unit) == (kind, unit)]
            if same:
                best = min(same, key=lambda c: c.rank)
                points.append(
                    ChartPoint(
                        period=period, value=float(best.value.value or 0.0), figure=best.value.raw, source=best.source
                    )
                )
        if len(points) < MIN_POINTS:
            continue
        digest = hashlib.sha256(series.encode()).hexdigest()[:10]
        c, label = catalogue("research"), series_label(series, lang)
        _, attribute = series.split("/", 1)
        unit_text = unit_label(kind, unit, lang)
        y_label = attribute_label(attribute, lang)
        refs.append(
            ChartRef(
                title=_sentence_case(c.text("chart.title", lang, label=label)),
                file=f"series-{digest}.png",
                key=series,
                points=points,
                x_label=c.text("chart.x", lang),
                y_label=_sentence_case(
                    c.text("chart.y", lang, label=y_label, unit=unit_text) if unit_text else y_label
                ),
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
        when = [period_start(p.period).toordinal() for p in ref.points]
        values = [p.value for p in ref.points]
        axes.plot(when, values, marker="o", color="#2b6cb0")
        axes.set_xticks(when, [p.period for p in ref.points])
        for at, point in zip(when, ref.points, strict=True):
            axes.annotate(
                point.figure,
                (at, point.value),
                textcoords="offset points",
                xytext=(0, 7),
                ha="center",
                fontproperties=font,
            )
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
    "ChartPoint",
    "ChartRef",
    "chart_refs",
    "drawable",
    "period_start",
    "render_png",
    "write_charts",
]
