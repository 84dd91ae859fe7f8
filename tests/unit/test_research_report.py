"""Final report helpers: one claim per figure, capped citation lists."""

from __future__ import annotations

from datetime import UTC, datetime

from research.evidence import Citation, EvidencedClaim
from research.models import SourceReference
from research.report import MAX_CITES, SourceNumbers, distinct_claims


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
