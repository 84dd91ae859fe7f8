"""Claim-level evidence (research.evidence): the corpus's 49.7% claim, citation checks, and the confidence rules."""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path
from typing import Any

import pytest
import trafilatura
import yaml

from nlp.analysis import AnalysisInput, analyse_texts
from nlp.claims import Claim, extract_claims
from nlp.conflicts import Conflict, SourcedClaim, claim_key, detect_conflicts, sourced
from research.evidence import EvidencedClaim, SourceDocument, build_evidence
from research.models import Finding, SourceReference

# tests/conftest.py chdirs into tmp_path, so locate the corpus from this file.
CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
MANIFEST: dict[str, Any] = yaml.safe_load((CORPUS / "manifest.yaml").read_text(encoding="utf-8"))
COPIES = {p["url"]: p["duplicate_of"] for p in MANIFEST["pages"] if p.get("duplicate_of")}
OFFICIAL = "https://sme-price-survey.example/2024/autumn"
BLOG = "https://machikouba-blog.example/entry/2024/12/10/kakaku-tenka"
KEY = "sme/pass_through_rate@2024-09"
TODAY = dt.date(2025, 12, 1)
FETCHED = dt.datetime(2025, 7, 1, tzinfo=dt.UTC)


@pytest.fixture(scope="module")
def corpus() -> tuple[dict[str, SourceDocument], list[Conflict]]:
    """Every corpus page analysed once (GiNZA included), as documents, and the conflicts among them."""
    pages = MANIFEST["pages"]
    texts = [trafilatura.extract((CORPUS / p["file"]).read_text(encoding="utf-8")) or "" for p in pages]
    analyses = analyse_texts([AnalysisInput(t, p["lang"], p["published"]) for t, p in zip(texts, pages, strict=True)])
    documents: dict[str, SourceDocument] = {}
    items: list[SourcedClaim] = []
    for page, text, analysis in zip(pages, texts, analyses, strict=True):
        ref = SourceReference(
            url=page["url"],
            title=page["title"],
            fetched_at=FETCHED,
            source_type=page["source_type"],
            published=str(page["published"]),
            lang=page["lang"],
            duplicate_of=page.get("duplicate_of"),
        )
        documents[page["url"]] = SourceDocument(source=ref, text=text, claims=analysis.claims)
        items += sourced(
            analysis.claims,
            page["url"],
            published=page["published"],
            source_type=page["source_type"],
            duplicate_of=page.get("duplicate_of"),
        )
    return documents, detect_conflicts(items)


def _finding(documents: dict[str, SourceDocument], url: str, fragment: str) -> Finding:
    """The finding an agent would report for the first claim with figures whose sentence holds ``fragment``."""
    claim = next(c for c in documents[url].claims if fragment in c.text and c.values)
    return Finding(
        text=claim.text, source=url, entities=claim.entities, key=claim_key(claim), values=[v.raw for v in claim.values]
    )


def _only(claims: list[EvidencedClaim]) -> EvidencedClaim:
    assert len(claims) == 1
    return claims[0]


# --- the bundled corpus -----------------------------------------------------------------------------


def test_the_49_7_percent_claim_is_supported_contradicted_and_disputed(
    corpus: tuple[dict[str, SourceDocument], list[Conflict]],
) -> None:
    documents, conflicts = corpus
    finding = _finding(documents, OFFICIAL, "直近6か月間")
    claim, check = build_evidence([(1, finding)], documents, conflicts, today=TODAY)
    evidence = _only(claim)
    assert evidence.key == KEY and "49.7%" in evidence.values
    assert evidence.supporting[0].url == OFFICIAL  # the page it was read from comes first
    supporters = {c.url for c in evidence.supporting}
    assert {
        "https://sme-price-survey.example/en/2024/autumn-summary",
        "https://tokyo-business-daily.example/articles/2024/11/29/kakaku-tenka-chousa",
        "https://jease.example/articles/v12n2/buyer-concentration-pass-through",
    } <= supporters
    assert evidence.independent_origins >= 5
    assert [c.url for c in evidence.contradicting] == [BLOG]
    assert evidence.contradicting_origins == 1
    assert "約6割" in evidence.contradicting[0].statement
    assert evidence.disputed
    assert 0.5 <= evidence.confidence < 1
    assert evidence.confidence_arithmetic.endswith(f"= {evidence.confidence:.2f}")
    assert check.checked == check.passed == len(evidence.supporting) + len(evidence.contradicting)
    assert check.dropped == []


def test_syndicated_copies_are_cited_but_counted_once(
    corpus: tuple[dict[str, SourceDocument], list[Conflict]],
) -> None:
    documents, conflicts = corpus
    finding = _finding(documents, OFFICIAL, "直近6か月間")
    with_copies = _only(build_evidence([(1, finding)], documents, conflicts, today=TODAY)[0])
    originals = {url: doc for url, doc in documents.items() if url not in COPIES}
    without = _only(build_evidence([(1, finding)], originals, conflicts, today=TODAY)[0])
    copies = [c for c in with_copies.supporting if c.url in COPIES]
    assert copies, "the corpus syndicates the 49.7% article"
    assert all(c.origin == COPIES[c.url] and c.origin in {s.url for s in with_copies.supporting} for c in copies)
    assert len(with_copies.supporting) == len(without.supporting) + len(copies)
    assert with_copies.independent_origins == without.independent_origins
    assert with_copies.independent_origins == len({c.origin for c in with_copies.supporting})
    assert with_copies.confidence == without.confidence


def test_the_blog_figure_is_outweighed(corpus: tuple[dict[str, SourceDocument], list[Conflict]]) -> None:
    documents, conflicts = corpus
    evidence = _only(build_evidence([(1, _finding(documents, BLOG, "先月発表"))], documents, conflicts, today=TODAY)[0])
    assert [c.url for c in evidence.supporting] == [BLOG]
    assert OFFICIAL in {c.url for c in evidence.contradicting} and evidence.contradicting_origins >= 5
    assert evidence.disputed and evidence.confidence <= 0.05


def test_outdated_conflict_disputes_only_the_stale_figure(
    corpus: tuple[dict[str, SourceDocument], list[Conflict]],
) -> None:
    documents, conflicts = corpus
    stale = _finding(documents, "https://toto-econ-institute.example/reports/2023/02/kakaku-tenka", "39.3%")
    newer = _finding(documents, "https://sme-price-survey.example/2025/spring", "52.4%")
    claims, _ = build_evidence([(1, stale), (1, newer)], documents, conflicts, today=TODAY)
    by_key = {c.key: c for c in claims}
    assert by_key["sme/pass_through_rate@2022-09"].disputed
    assert not by_key["sme/pass_through_rate@2025-03"].disputed
    assert by_key["sme/pass_through_rate@2025-03"].contradicting == []


def test_claim_key_is_the_conflict_statement_key(corpus: tuple[dict[str, SourceDocument], list[Conflict]]) -> None:
    documents, conflicts = corpus
    for conflict in conflicts:
        for statement in (conflict.statement1, conflict.statement2):
            keys = {claim_key(c) for c in documents[statement.source].claims if c.text == statement.text}
            assert statement.key in keys
    assert (
        claim_key(
            Claim(
                text="x",
                start=0,
                end=1,
                subject=None,
                attribute="a",
                values=[],
                when=None,
                polarity="positive",
                entities=[],
                lang="ja",
            )
        )
        is None
    )


def test_an_altered_figure_loses_its_own_citation(corpus: tuple[dict[str, SourceDocument], list[Conflict]]) -> None:
    documents, conflicts = corpus
    honest = _finding(documents, OFFICIAL, "直近6か月間")
    altered = honest.model_copy(
        update={
            "text": honest.text.replace("49.7%", "49.9%"),
            "values": ["49.9%" if v == "49.7%" else v for v in honest.values],
        }
    )
    claims, check = build_evidence([(1, altered)], documents, conflicts, today=TODAY)
    evidence = _only(claims)
    assert evidence.supporting == [] and evidence.confidence == 0
    assert evidence.confidence_arithmetic == "no verified supporting source = 0.00"
    assert [(d.claim_id, d.url) for d in check.dropped] == [(evidence.claim_id, OFFICIAL)]
    assert "49.9%" in check.dropped[0].reason and "not in the page text" in check.dropped[0].reason
    assert check.checked == 1 and check.passed == 0

    # The sentence kept, only the reported figure changed: the sentence is found, the figure is not.
    relabelled = honest.model_copy(update={"values": ["49.9%"]})
    evidence = _only(build_evidence([(1, relabelled)], documents, conflicts, today=TODAY)[0])
    assert evidence.supporting == [] and evidence.independent_origins == 0


def test_findings_merge_across_iterations_and_order_is_deterministic(
    corpus: tuple[dict[str, SourceDocument], list[Conflict]],
) -> None:
    documents, conflicts = corpus
    findings = [
        (3, _finding(documents, OFFICIAL, "直近6か月間")),
        (1, _finding(documents, OFFICIAL, "直近6か月間")),
        (2, _finding(documents, BLOG, "先月発表")),
        (2, _finding(documents, "https://sme-price-survey.example/2025/spring", "52.4%")),
        (
            1,
            _finding(
                documents, "https://nippon-commerce-wire.example/2025/01/28/truckers-struggle-to-pass-on-costs", "21.3%"
            ),
        ),
        (2, Finding(text="A sentence from a page that was never read: 12.3%.", source="https://nowhere.example/")),
    ]
    claims, check = build_evidence(findings, documents, conflicts, today=TODAY)
    assert len(claims) == 5
    merged = next(c for c in claims if c.source == OFFICIAL)
    assert merged.iterations == [1, 3]
    assert [c.confidence for c in claims] == sorted((c.confidence for c in claims), reverse=True)
    unread = next(c for c in claims if c.source == "https://nowhere.example/")
    assert unread.confidence == 0 and unread.supporting == [] and unread.key is None
    ties = [c for c in claims if c.confidence == 0]  # the blog's 約6割 too: by first iteration, then id
    assert ties == sorted(ties, key=lambda c: (c.iterations[0], c.claim_id))
    assert any(d.reason == "page not among the documents read" for d in check.dropped)
    assert check.checked == check.passed + len(check.dropped)

    shuffled = list(findings)
    random.Random(3).shuffle(shuffled)
    pages = list(documents.items())
    random.Random(4).shuffle(pages)
    again = build_evidence(shuffled, dict(pages), list(reversed(conflicts)), today=TODAY)
    assert again == (claims, check)
    assert build_evidence(findings, documents, conflicts, today=TODAY)[0][0].claim_id == claims[0].claim_id
    dumped = claims[0].model_dump(by_alias=True)
    assert {"claimId", "independentOrigins", "confidenceArithmetic", "supporting"} <= set(dumped)


# --- small cases, one rule at a time ------------------------------------------------------------------

SENTENCE = "令和6年9月調査では、中小企業の価格転嫁率は49.7%となった。"


def _doc(url: str, text: str, source_type: str = "news", duplicate_of: str | None = None) -> SourceDocument:
    claims = extract_claims(text, [], "ja", reference_date=dt.date(2024, 12, 1))
    ref = SourceReference(
        url=url,
        title=url,
        fetched_at=FETCHED,
        source_type=source_type,
        published="2024-12-01",
        duplicate_of=duplicate_of,
    )
    return SourceDocument(source=ref, text=text, claims=claims)


def _evidence(docs: list[SourceDocument], *, conflicts: bool = False, today: dt.date = TODAY) -> EvidencedClaim:
    """Evidence for the first page's first claim, among ``docs``."""
    claim = docs[0].claims[0]
    finding = Finding(text=claim.text, source=docs[0].source.url, key=claim_key(claim), values=["49.7%"])
    found = []
    if conflicts:
        for d in docs:
            found += sourced(
                d.claims, d.source.url, source_type=d.source.source_type, duplicate_of=d.source.duplicate_of
            )
    return _only(
        build_evidence([(1, finding)], {d.source.url: d for d in docs}, detect_conflicts(found), today=today)[0]
    )


def test_confidence_rises_with_independent_origins_only() -> None:
    official = _doc("https://a.example/", SENTENCE, "official")
    news = _doc("https://b.example/", "2024年9月の調査で、中小企業の価格転嫁率は49.7%だった。")
    copy = _doc(
        "https://c.example/",
        "2024年9月の調査で、中小企業の価格転嫁率は49.7%だった。",
        duplicate_of="https://b.example/",
    )
    academic = _doc("https://d.example/", "中小企業の価格転嫁率は2024年9月時点で約5割であった。", "academic")
    one, two = _evidence([official]), _evidence([official, news])
    with_copy, three = _evidence([official, news, copy]), _evidence([official, news, academic])
    assert (one.independent_origins, two.independent_origins, three.independent_origins) == (1, 2, 3)
    assert one.confidence < two.confidence < three.confidence
    assert with_copy.independent_origins == 2 and len(with_copy.supporting) == 3
    assert with_copy.confidence == two.confidence
    assert one.confidence_arithmetic == (
        "agreement 1-0.5^1=0.500 × reliability 0.90 × recency 1.00 × support share 1.00 = 0.45"
    )
    assert not one.disputed and one.contradicting == []


def test_a_contradiction_lowers_confidence_and_a_conflict_marks_it_disputed() -> None:
    official = _doc("https://a.example/", SENTENCE, "official")
    news = _doc("https://b.example/", "2024年9月の調査で、中小企業の価格転嫁率は49.7%だった。")
    blog = _doc("https://blog.example/", "2024年9月の調査で、中小企業の価格転嫁率は約6割だったらしい。", "community")
    other_period = _doc("https://e.example/", "令和6年3月調査では、中小企業の価格転嫁率は46.1%だった。")
    calm, against = _evidence([official, news, other_period]), _evidence([official, news, blog])
    assert calm.contradicting == [] and not calm.disputed  # another survey round is not a contradiction
    assert [c.url for c in against.contradicting] == ["https://blog.example/"]
    assert against.contradicting_origins == 1 and against.confidence < calm.confidence
    # (0.9 + 0.6) / (0.9 + 0.6 + 0.265): blog.example is a blog host, community-typed
    assert "support share 0.85" in against.confidence_arithmetic
    assert not against.disputed  # no detected conflict was passed
    assert _evidence([official, news, blog], conflicts=True).disputed


def test_other_pages_are_cited_only_if_their_text_holds_the_figure() -> None:
    official = _doc("https://a.example/", SENTENCE, "official")
    news = _doc("https://b.example/", "2024年9月の調査で、中小企業の価格転嫁率は49.7%だった。")
    # The page changed after it was analysed: its claims still say 49.7%, its text no longer does.
    edited = news.model_copy(update={"text": "2024年9月の調査で、中小企業の価格転嫁率は5割弱だった。"})
    claim = official.claims[0]
    finding = Finding(text=claim.text, source=official.source.url, key=claim_key(claim), values=["49.7%"])
    claims, check = build_evidence([(1, finding)], {d.source.url: d for d in (official, edited)}, [], today=TODAY)
    assert [c.url for c in claims[0].supporting] == ["https://a.example/"]
    assert [(d.url, d.reason) for d in check.dropped] == [
        ("https://b.example/", "value 49.7% not in the page text; sentence not in the page text")
    ]
    assert (check.checked, check.passed) == (2, 1)


def test_full_width_text_and_line_breaks_still_verify() -> None:
    page = _doc("https://a.example/", SENTENCE, "official")
    wide = page.model_copy(update={"text": "令和６年９月調査では、中小企業の\n価格転嫁率は４９．７％となった。"})
    claim = page.claims[0]
    finding = Finding(text=claim.text, source=page.source.url, key=claim_key(claim), values=["49.7%"])
    claims, check = build_evidence([(1, finding)], {page.source.url: wide}, [], today=TODAY)
    assert claims[0].independent_origins == 1 and check.dropped == []


def test_old_figures_lose_confidence_down_to_a_floor() -> None:
    docs = [_doc("https://a.example/", SENTENCE, "official")]
    recent = _evidence(docs, today=dt.date(2026, 9, 1))  # within two years of September 2024
    older = _evidence(docs, today=dt.date(2028, 9, 30))
    ancient = _evidence(docs, today=dt.date(2060, 1, 1))
    assert "recency 1.00" in recent.confidence_arithmetic
    assert recent.confidence > older.confidence > ancient.confidence > 0
    assert "recency 0.50" in ancient.confidence_arithmetic


def test_a_page_holding_the_same_sentence_supports_it_even_without_figures() -> None:
    rule = "The maintainer must upload the package to the archive only after the tests pass."
    chapter = _doc("https://docs.example/ch-upload.html", f"Uploading. {rule} Then announce it.")
    overview = _doc("https://docs.example/index.html", f"Overview of the rules. {rule}")
    other = _doc("https://docs.example/ch-build.html", "The build daemon rebuilds every architecture.")
    finding = Finding(text=rule, source=overview.source.url)
    pages = {d.source.url: d for d in (overview, chapter, other)}
    claim = _only(build_evidence([(1, finding)], pages, [], today=TODAY)[0])
    assert [c.url for c in claim.supporting] == [overview.source.url, chapter.source.url]
    short = Finding(text="Yes, it is.", source=chapter.source.url)
    answers = [_doc(f"https://docs.example/faq{n}.html", "Is it? Yes, it is.") for n in (1, 2)]
    brief = build_evidence([(1, short)], {d.source.url: d for d in answers}, [], today=TODAY)[0]
    assert brief == [] or brief[0].supporting == []  # its own page lacks it; a short sentence proves nothing
    own = Finding(text="Yes, it is.", source=answers[0].source.url)
    alone = _only(build_evidence([(1, own)], {d.source.url: d for d in answers}, [], today=TODAY)[0])
    assert [c.url for c in alone.supporting] == [answers[0].source.url]  # too short to count the other page
