"""Final report helpers: one claim per figure, capped citation lists, headings and readings in the report's language."""

from __future__ import annotations

from datetime import UTC, date, datetime

from nlp.conflicts import Conflict, Reading, Statement
from research.evidence import Citation, EvidencedClaim
from research.models import SourceReference
from research.report import MAX_CITES, Labels, SourceNumbers, distinct_claims, heading_for, reading_text


def _claim(claim_id: str, key: str | None, values: list[str]) -> EvidencedClaim:
    return EvidencedClaim(
        claim_id=claim_id, text=f"text {claim_id}", source=f"https://s.example/{claim_id}", key=key, values=values
    )


def test_one_claim_per_key_and_figures_the_first_standing_for_the_rest() -> None:
    claims = [
        _claim("a", "sme/energy@2024-09", ["45.9%", "51.8%"]),
        _claim("b", "sme/energy@2024-09", ["51.8％", "45.9％"]),  # same figures, other width and order
        _claim("c", "sme/energy@2024-09", ["46.0%"]),
        _claim("d", None, ["45.9%"]),
        _claim("e", None, ["45.9%"]),
    ]
    assert [c.claim_id for c in distinct_claims(claims)] == ["a", "c", "d", "e"]


def test_a_figure_already_shown_for_its_key_is_not_shown_again_in_another_language() -> None:
    claims = [
        _claim("ja", "sme/pass_through_rate@2025-03", ["52.4%", "49.7%"]),
        _claim("en", "sme/pass_through_rate@2025-03", ["52.4%"]),  # the English page's same figure
        _claim("other", "sme/pass_through_rate@2024-09", ["52.4%"]),  # another period: another figure
    ]
    assert [c.claim_id for c in distinct_claims(claims)] == ["ja", "other"]


def test_citations_are_numbered_once_and_capped() -> None:
    urls = [f"https://s.example/{i}" for i in range(MAX_CITES + 3)]
    refs = SourceNumbers([SourceReference(url=u, title=u, fetched_at=datetime.now(UTC)) for u in urls], "en")
    cites = [Citation(url=u, title=u, reliability=0.5, origin=u, statement="s") for u in urls]
    text = refs.cite_all(cites)
    assert text.startswith("[1][2]") and text.endswith(f"[{MAX_CITES}] (+3 more)")
    assert refs.cite(urls[1]) == "[2]" and refs.order == urls[:MAX_CITES]
    assert SourceNumbers([], "ja").cite_all(cites).endswith("（ほか3件）")


def test_a_heading_in_another_language_shows_only_its_names() -> None:
    """The subject a page gives a claim is a label of the report: shown whole in the report's language,
    else only the identifiers it holds."""
    assert heading_for("価格転嫁の現状", "ja") == "価格転嫁の現状"
    assert heading_for("Where things stand", "ja") == ""
    assert heading_for("Runtime settings › autovacuum_naptime (integer)", "ja") == "autovacuum_naptime"
    assert heading_for("Where things stand", "en") == "Where things stand"
    assert heading_for(None, "ja") == ""


def _dispute(reading: Reading, kind: str = "contradiction") -> Conflict:
    key = "sme/no_pass_through_share@2024-09"
    return Conflict(
        conflict_id="c", type=kind, severity=5, confidence=0.7, subject="sme", attribute="no_pass_through_share",
        when="2024-09", reading=reading,
        statement1=Statement(text="9.5%だった。", source="https://o.example", value="9.5%", key=key),
        statement2=Statement(text="約2割だった。", source="https://n.example", value="約2割", key=key),
    )  # fmt: skip


def test_the_suggested_reading_is_worded_in_the_reports_language() -> None:
    now = datetime.now(UTC)
    refs = SourceNumbers(
        [
            SourceReference(url="https://o.example", title="o", fetched_at=now, source_type="official"),
            SourceReference(url="https://n.example", title="n", fetched_at=now, source_type="news"),
        ],
        "ja",
    )
    prefer = Reading(kind="prefer", preferred=1, source_type="official", published=date(2024, 11, 29), agreeing=5)
    text = reading_text(_dispute(prefer.model_copy(update={"note": "approximate"})), refs, Labels("ja"))
    assert text == (
        "公的機関の出典（2024-11-29公表）の9.5%を採用するのが妥当です（ほかに独立した出典5件が同じ値）。"
        "報道の出典の約2割は概数です"
    )
    typo = reading_text(
        _dispute(prefer.model_copy(update={"note": "transcription", "agreeing": 0})), refs, Labels("ja")
    )
    assert typo.endswith("の9.5%を採用するのが妥当です。約2割は転記の誤りとみられます")
    english = reading_text(_dispute(prefer.model_copy(update={"note": "differs"})), refs, Labels("en"))
    assert english == (
        "prefer the official source dated 2024-11-29 (9.5%; 5 other independent source(s) agree); "
        "the news source gives 約2割"
    )
    newer = Reading(kind="superseded", preferred=1, source_type="official", published=date(2025, 6, 20))
    stale = _dispute(newer, "outdated")
    assert reading_text(stale, refs, Labels("ja")) == (
        "約2割は2024-09時点の値です。公的機関の出典（2025-06-20公表）が2024-09の値として9.5%を示しており、こちらが新しい値です"
    )
