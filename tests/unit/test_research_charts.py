"""Charts of a claim key's values at several dates (research/charts.py), with Japanese labels."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from core.fonts import find_japanese_font
from research.charts import chart_refs, drawable, period_start, render_png, write_charts
from research.evidence import Citation, EvidencedClaim
from tests.browser import screenshot_path


def claim(cid: str, key: str | None, value: str, confidence: float = 0.5) -> EvidencedClaim:
    url = f"https://example.org/{cid}"
    citation = Citation(url=url, title=cid, reliability=0.5, origin=url, statement=f"率は{value}だった。")
    return EvidencedClaim(
        claim_id=cid, text=f"率は{value}だった。", source=citation.url, key=key, values=[value],
        supporting=[citation], confidence=confidence,
    )  # fmt: skip


CLAIMS = [
    claim("a", "sme/pass_through_rate@2024-09", "49.7%", 0.8),
    claim("b", "sme/pass_through_rate@2024-03", "46.1%"),
    claim("c", "sme/pass_through_rate@2025-03", "52.4%"),
    claim("d", "sme/pass_through_rate@2025-03", "60.0%", 0.1),  # lower confidence: not drawn
    claim("e", "sme/respondents@2024-09", "36,210社"),  # one period only: no chart
    claim("f", "sme/pass_through_rate@undated", "50%"),  # undated: not a point in time
    claim("g", None, "12%"),
]


def test_series_with_several_dates_become_charts() -> None:
    refs = chart_refs(CLAIMS)
    assert [(r.key, r.title) for r in refs] == [("sme/pass_through_rate", "中小企業の価格転嫁率の推移")]
    assert (refs[0].x_label, refs[0].y_label) == ("時点", "価格転嫁率（%）")  # the human label and unit
    assert refs[0].points == [("2024-03", 46.1, "46.1%"), ("2024-09", 49.7, "49.7%"), ("2025-03", 52.4, "52.4%")]
    (english,) = chart_refs(CLAIMS, "en")
    assert (english.title, english.x_label, english.y_label) == (
        "Pass-through rate of SMEs over time",
        "Period",
        "Pass-through rate (%)",
    )


def test_a_qualified_or_unknown_attribute_still_reads_as_words() -> None:
    from research.labels import attribute_label, series_label

    assert attribute_label("labour_cost_pass_through_rate", "ja") == "労務費の価格転嫁率"
    assert attribute_label("rate:離職率", "ja") == "離職率"
    assert series_label("trucking/pass_through_rate", "en") == "pass-through rate of trucking"


def test_png_is_drawn_with_a_japanese_font(tmp_path: Path) -> None:
    font = find_japanese_font()
    assert font is not None, "make test installs fonts-ipaexfont-gothic (data/system-packages.txt)"
    refs = chart_refs(CLAIMS)
    assert drawable(refs, "ja") == (refs, None)
    png = render_png(refs[0], font)
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 5_000
    written = write_charts(refs, tmp_path)
    assert [p.name for p in written] == [refs[0].file] and written[0].read_bytes() == png
    screenshot_path("research_chart").write_bytes(png)  # for a person to look at


def test_periods_sit_on_a_time_axis() -> None:
    assert [period_start(p) for p in ("2024", "2024-09", "2025-03-15")] == [
        date(2024, 1, 1),
        date(2024, 9, 1),
        date(2025, 3, 15),
    ]
