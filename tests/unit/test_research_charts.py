"""Charts of a claim key's values at several dates (research/charts.py), with Japanese labels."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from core.fonts import find_japanese_font
from nlp.conflicts import Conflict, Reading, Statement
from research.charts import ChartRef, chart_refs, drawable, period_start, render_png, write_charts
from research.evidence import Citation, EvidencedClaim
from tests.browser import screenshot_path


def claim(cid: str, key: str | None, value: str, confidence: float = 0.5, text: str | None = None) -> EvidencedClaim:
    url = f"https://example.org/{cid}"
    text = text or f"率は{value}だった。"
    citation = Citation(url=url, title=cid, reliability=0.5, origin=url, statement=text)
    return EvidencedClaim(
        claim_id=cid, text=text, source=citation.url, key=key, values=[value],
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
    assert [(p.period, p.value, p.figure) for p in refs[0].points] == [
        ("2024-03", 46.1, "46.1%"),
        ("2024-09", 49.7, "49.7%"),
        ("2025-03", 52.4, "52.4%"),
    ]
    assert refs[0].points[0].source == "https://example.org/b"  # the page the report cites for it
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


def _points(ref: ChartRef) -> list[tuple[str, str]]:
    return [(p.period, p.figure) for p in ref.points]


def test_a_precise_figure_is_drawn_before_a_rounded_paraphrase_of_it() -> None:
    """「5割を超えた」 and 52.4% state the same round; the point is 52.4, not 50, whatever the confidence."""
    claims = [
        claim("a", "sme/pass_through_rate@2024-09", "49.7%"),
        claim("b", "sme/pass_through_rate@2025-03", "5割を超えた", 0.9, "価格転嫁率が5割を超えたのは今回が初めて。"),
        claim("c", "sme/pass_through_rate@2025-03", "52.4%", 0.7),
        claim("d", "sme/pass_through_rate@2024-03", "約5割", 0.9, "価格転嫁率は約5割だった。"),  # nothing more precise
    ]
    (ref,) = chart_refs(claims)
    assert _points(ref) == [("2024-03", "約5割"), ("2024-09", "49.7%"), ("2025-03", "52.4%")]


def test_only_levels_of_the_series_kind_are_points() -> None:
    """A change (2.7ポイント上昇) or a gap in points under a percentage series is no value of the series."""
    claims = [
        claim("a", "sme/pass_through_rate@2024-09", "49.7%"),
        claim("b", "sme/pass_through_rate@2025-03", "2.7ポイント", 0.9, "率は2.7ポイント上昇し52.4%となった。"),
        claim("c", "sme/pass_through_rate@2025-03", "52.4%", 0.5),
        claim("d", "sme/pass_through_rate@2022-09", "11ポイント", 0.9, "依存度の高い企業は率が11ポイント低かった。"),
    ]
    (ref,) = chart_refs(claims)
    assert _points(ref) == [("2024-09", "49.7%"), ("2025-03", "52.4%")]


def _dispute(preferred: int, kind: str = "prefer") -> Conflict:
    key = "trucking/pass_through_rate@2024-09"
    official = Statement(text="トラック運送の価格転嫁率は34.2%。", source="https://o.example", value="34.2%", key=key)
    wire = Statement(text="Trucking passed on 21.3%.", source="https://w.example", value="21.3%", key=key)
    first, second = (official, wire) if preferred == 1 else (wire, official)
    return Conflict(
        conflict_id="c1", type="contradiction", statement1=first, statement2=second, severity=4, confidence=0.9,
        reading=Reading(kind=kind, preferred=preferred, source_type="official"),  # type: ignore[arg-type]
        subject="trucking", attribute="pass_through_rate", when="2024-09",
    )  # fmt: skip


def test_a_disputed_period_is_drawn_at_the_figure_the_reading_prefers() -> None:
    """Only the wire story's 21.3% is among the claims, yet the report says to prefer the official 34.2%:
    the chart draws 34.2 and cites the official page, so it shows no fall from 28.9%."""
    claims = [
        claim("a", "trucking/pass_through_rate@2024-03", "28.9%"),
        claim("b", "trucking/pass_through_rate@2024-09", "21.3%", 0.9, "Trucking passed on 21.3%."),
    ]
    for preferred in (1, 2):
        (ref,) = chart_refs(claims, disputed=[_dispute(preferred)])
        assert _points(ref) == [("2024-03", "28.9%"), ("2024-09", "34.2%")]
        assert ref.points[1].source == "https://o.example"
    (ref,) = chart_refs(claims)  # no dispute: the claim is all there is
    assert _points(ref)[1] == ("2024-09", "21.3%")
