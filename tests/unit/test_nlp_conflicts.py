"""Conflict detection (nlp.conflicts): the planted conflicts of the corpus, and one small case per rule."""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from core.errors import ConfigError
from nlp.analysis import AnalysisInput, analyse_texts
from nlp.claims import Claim, Polarity
from nlp.conflicts import Conflict, ConflictPolicy, SourcedClaim, detect_conflicts, load_policy, sourced
from nlp.values import Value, fold, parse_values
from scrapers.extract import extract_page

# tests/conftest.py chdirs into tmp_path, so locate the corpus from this file.
CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
MANIFEST: dict[str, Any] = yaml.safe_load((CORPUS / "manifest.yaml").read_text(encoding="utf-8"))
PLANTED: dict[str, Any] = yaml.safe_load((CORPUS / "planted.yaml").read_text(encoding="utf-8"))
ORIGIN = {p["url"]: p.get("duplicate_of") or p["url"] for p in MANIFEST["pages"]}
# Where each planted conflict lands: (subject, attribute, when of the disagreeing/stale side).
EXPECTED = {
    "pass-through-rate-autumn-2024": ("sme", "pass_through_rate", "2024-09"),
    "no-pass-through-share-autumn-2024": ("sme", "no_pass_through_share", "2024-09"),
    "pass-through-rate-latest": ("sme", "pass_through_rate", "2022-09"),
    "labour-cost-pass-through-autumn-2024": ("sme", "labour_cost_pass_through_rate", "2024-09"),
    "trucking-pass-through-autumn-2024": ("trucking", "pass_through_rate", "2024-09"),
    "survey-responses-autumn-2024": ("sme", "survey_responses", "2024-09"),
}


@pytest.fixture(scope="module")
def corpus_claims() -> list[SourcedClaim]:
    """Every corpus page analysed once (GiNZA included), as an agent's sources would be."""
    pages = MANIFEST["pages"]
    texts = [extract_page((CORPUS / p["file"]).read_bytes(), url=p["url"]).text for p in pages]
    analyses = analyse_texts([AnalysisInput(t, p["lang"], p["published"]) for t, p in zip(texts, pages, strict=True)])
    items: list[SourcedClaim] = []
    for i, (page, analysis) in enumerate(zip(pages, analyses, strict=True)):
        items += sourced(
            analysis.claims,
            page["url"],
            report_id=f"report-{i % 3 + 1}",
            published=page["published"],
            source_type=page["source_type"],
            duplicate_of=page.get("duplicate_of"),
        )
    return items


@pytest.fixture(scope="module")
def corpus_conflicts(corpus_claims: list[SourcedClaim]) -> list[Conflict]:
    return detect_conflicts(corpus_claims)


def _sides(conflict: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(reference sides, disagreeing sides) of a planted conflict: newer vs stale, or majority vs the rest."""
    sides = conflict["sides"]
    if conflict["type"] == "outdated":
        newest = max(str(s["as_of"]) for s in sides)
        return [s for s in sides if str(s["as_of"]) == newest], [s for s in sides if str(s["as_of"]) != newest]
    written = [fold(str(s["value"])).rstrip("社") for s in sides]
    majority = max(set(written), key=written.count)
    return [s for s, w in zip(sides, written, strict=True) if w == majority], [
        s for s, w in zip(sides, written, strict=True) if w != majority
    ]


@pytest.mark.parametrize("planted", PLANTED["conflicts"], ids=lambda c: c["id"])
def test_every_planted_conflict_is_found(planted: dict[str, Any], corpus_conflicts: list[Conflict]) -> None:
    subject, attribute, when = EXPECTED[planted["id"]]
    at_key = [c for c in corpus_conflicts if (c.subject, c.attribute, c.when) == (subject, attribute, when)]
    reference, disagreeing = _sides(planted)
    # One conflict per disagreeing origin: a syndicated copy is not a second outlier.
    origins = {ORIGIN[s["url"]] for s in disagreeing}
    assert len(at_key) == len(origins), [(c.statement1.source, c.statement2.source) for c in at_key]
    for conflict in at_key:
        assert conflict.type == planted["type"]
        assert ORIGIN[conflict.statement2.source] in origins
        assert conflict.statement1.source in {s["url"] for s in reference}
        assert fold(conflict.statement1.value).startswith(fold(str(reference[0]["value"])))
        assert fold(conflict.statement2.value).startswith(fold(str(disagreeing[0]["value"])))
        assert conflict.statement1.text and conflict.statement2.text and conflict.statement1.report_id
        assert conflict.confidence >= 0.6
        assert conflict.resolution
    severity = {c.severity for c in at_key}
    if planted["type"] == "contradiction":
        assert severity <= {4, 5}
    elif planted["type"] == "inconsistency":
        assert severity == {2}  # a transposed digit in a response count: low
    else:
        assert severity == {3}


def test_corpus_yields_only_the_planted_conflicts(corpus_conflicts: list[Conflict]) -> None:
    found = {(c.subject, c.attribute, c.when, c.type) for c in corpus_conflicts}
    assert found == {(*EXPECTED[p["id"]], p["type"]) for p in PLANTED["conflicts"]}
    assert len(corpus_conflicts) == len(PLANTED["conflicts"])


def test_resolutions_name_the_preferred_figure(corpus_conflicts: list[Conflict]) -> None:
    by_type = {(c.subject, c.attribute, c.type): c.resolution for c in corpus_conflicts}
    assert by_type[("sme", "pass_through_rate", "contradiction")] == (
        "prefer the official source dated 2024-11-29 (49.7%; 13 other independent sources agree); "
        "the community figure (約6割) is approximate"
    )
    assert by_type[("sme", "pass_through_rate", "outdated")] == (
        "the 39.3% figure refers to 2022-09; superseded by 52.4% (2025-03, the official source dated 2025-06-20)"
    )
    assert "transcription error" in str(by_type[("sme", "survey_responses", "inconsistency")])


def test_a_copy_never_conflicts_with_its_original(
    corpus_claims: list[SourcedClaim], corpus_conflicts: list[Conflict]
) -> None:
    assert all(ORIGIN[c.statement1.source] != ORIGIN[c.statement2.source] for c in corpus_conflicts)
    for copy, original in {(u, o) for u, o in ORIGIN.items() if u != o}:
        pair = [s for s in corpus_claims if s.source_url in (copy, original)]
        assert detect_conflicts(pair) == []
        # Even treated as independent pages they agree: the copy only rewords sentences.
        assert detect_conflicts([s.model_copy(update={"origin": s.source_url}) for s in pair]) == []


def test_results_are_deterministic_and_dump_camel_case(
    corpus_claims: list[SourcedClaim], corpus_conflicts: list[Conflict]
) -> None:
    shuffled = list(corpus_claims)
    random.Random(7).shuffle(shuffled)
    assert detect_conflicts(shuffled) == corpus_conflicts
    dumped = corpus_conflicts[0].model_dump(by_alias=True)
    assert {"conflictId", "type", "statement1", "statement2", "severity", "confidence", "resolution"} <= set(dumped)
    assert set(dumped["statement1"]) == {"text", "source", "reportId", "value", "key"}
    assert dumped["statement1"]["key"].startswith(f"{dumped['subject']}/{dumped['attribute']}@")


# --- one rule at a time ---------------------------------------------------------------------------


def _when(period: str | None) -> Value | None:
    if period is None:
        return None
    year, month = (int(x) for x in period.split("-"))
    end = (dt.date(year + month // 12, month % 12 + 1, 1) - dt.timedelta(days=1)).isoformat()
    return Value(
        kind="date", value=None, raw=period, start=0, end=0, date_from=f"{period}-01", date_to=end, granularity="month"
    )


def item(
    text: str,
    url: str,
    *,
    when: str | None = "2024-09",
    published: str = "2024-12-01",
    source_type: str = "news",
    subject: str = "sme",
    attribute: str = "pass_through_rate",
    polarity: Polarity = "positive",
    lang: str = "ja",
    origin: str | None = None,
) -> SourcedClaim:
    """A claim about (subject, attribute, when) holding every figure of ``text``."""
    values = [v for v in parse_values(text) if v.kind != "date"]
    claim = Claim(
        text=text, start=0, end=len(text), subject=subject, attribute=attribute, values=values,
        when=_when(when), polarity=polarity, entities=[], lang=lang,
    )  # fmt: skip
    return SourcedClaim(
        claim=claim,
        source_url=url,
        report_id="r1",
        published=dt.date.fromisoformat(published),
        source_type=source_type,
        origin=origin or url,
    )


OFFICIAL = "https://official.example/2024"


def official(text: str = "2024年9月調査の中小企業の価格転嫁率は49.7%。", **kw: Any) -> SourcedClaim:
    return item(text, OFFICIAL, source_type="official", published="2024-11-29", **kw)


def test_approximate_figures_agree_when_their_range_covers_the_precise_one() -> None:
    assert detect_conflicts([official(), item("価格転嫁率は約5割だった。", "https://a.example")]) == []
    (c,) = detect_conflicts([official(), item("価格転嫁率は約6割だった。", "https://a.example")])
    assert (c.type, c.statement1.source, c.statement2.value) == ("contradiction", OFFICIAL, "約6割")
    precise = detect_conflicts([official(), item("2024年9月調査の中小企業の価格転嫁率は60.0%。", "https://a.example")])
    assert c.confidence < precise[0].confidence  # 約 lowers it


def test_majority_collapses_to_the_most_reliable_earliest_source_and_copies_count_once() -> None:
    majority = [
        item("価格転嫁率は49.7%。", f"https://news{i}.example", published=f"2024-12-0{i + 1}") for i in range(3)
    ]
    blogs = [item("価格転嫁率は約6割。", f"https://blog{i}.example", source_type="community") for i in range(2)]
    found = detect_conflicts([*majority, official(), *blogs])
    assert {(c.statement1.source, c.statement2.source) for c in found} == {
        (OFFICIAL, "https://blog0.example"),
        (OFFICIAL, "https://blog1.example"),
    }
    # Copies of one page are one origin: they do not outvote two independent sources, and the
    # original page speaks for them.
    mirrors = [item("労務費の転嫁率は44.7%。", f"https://mirror{i}.example", origin=OFFICIAL) for i in range(3)]
    news = [item("労務費の転嫁率は31.2%。", f"https://news{i}.example") for i in range(2)]
    (c,) = detect_conflicts([*mirrors, official("労務費の転嫁率は44.7%。"), *news])
    assert (c.statement1.source, c.statement2.source) == ("https://news0.example", OFFICIAL)
    assert c.resolution == "prefer the official source dated 2024-11-29 (44.7%); the news source gives 31.2%"
    # A copy never conflicts with its original, even when it rewords the figure.
    assert detect_conflicts([official(), item("価格転嫁率は約6割。", "https://mirror.example", origin=OFFICIAL)]) == []


def test_small_gaps_and_transcription_errors_are_inconsistencies() -> None:
    (small,) = detect_conflicts([official(), item("価格転嫁率は49.2%。", "https://a.example")])
    assert (small.type, small.severity) == ("inconsistency", 2)
    # 36,210 vs 26,310 (two digits swapped) and 36,210 vs 36,270 (one digit wrong), whatever the gap.
    for typo in ("26,310社", "36,270社", "63,210社"):
        (c,) = detect_conflicts(
            [
                official("有効回答数は36,210社。", attribute="survey_responses"),
                item(f"有効回答数は{typo}。", "https://a.example", attribute="survey_responses"),
            ]
        )
        assert c.type == "inconsistency" and "transcription error" in str(c.resolution), typo
    (c,) = detect_conflicts(
        [
            official("有効回答数は36,210社。", attribute="survey_responses"),
            item("有効回答数は24,510社。", "https://a.example", attribute="survey_responses"),
        ]
    )
    assert c.type == "contradiction"


def test_opposite_polarity_about_the_same_figure_is_a_contradiction() -> None:
    denial = item("2024年9月調査で価格転嫁率は5割に達していない。", "https://a.example", polarity="negative")
    (c,) = detect_conflicts([official("2024年9月調査で価格転嫁率は5割に達した。"), denial])
    assert (c.type, c.statement2.value, c.severity) == ("contradiction", "5割", 4)
    assert c.resolution and "check the wording" in c.resolution
    english = item(
        "The pass-through rate did not reach 50% in the September 2024 round.", "https://b.example",
        polarity="negative", lang="en",
    )  # fmt: skip
    assert [c.type for c in detect_conflicts([official("価格転嫁率は5割。"), english])] == ["contradiction"]
    # A decrease is negative polarity but does not deny the figure it falls to.
    fell = item(
        "The rate fell to 49.7% in the September 2024 round.", "https://b.example", polarity="negative", lang="en"
    )
    assert detect_conflicts([official(), fell]) == []
    below = item("小売は44.0%と全体（49.7%）を下回った。", "https://c.example", polarity="negative")
    assert detect_conflicts([official(), below]) == []


def test_figures_without_a_period_are_compared_only_with_undated_figures_published_close() -> None:
    undated = item("中小企業の価格転嫁率は約6割。", "https://a.example", when=None, published="2024-12-03")
    assert detect_conflicts([official(), undated]) == []  # an undated figure may be an earlier reading
    other = item("価格転嫁率は49.7%。", "https://b.example", when=None, published="2024-12-01")
    (c,) = detect_conflicts([other, undated])
    assert c.when is None and c.statement1.key == "sme/pass_through_rate@undated" and c.confidence <= 0.7
    assert detect_conflicts([other, undated.model_copy(update={"published": dt.date(2025, 3, 1)})]) == []
    # A page with 52.4% for 2025-03 and an undated earlier reading ("up from 49.7%") knows both figures.
    dated = item("2025年3月調査の価格転嫁率は52.4%。", "https://p.example", when="2025-03", published="2025-06-20")
    previous = item("前回の49.7%から上昇した。", "https://p.example", when=None, published="2025-06-20")
    headline = item("価格転嫁率は52.4%。", "https://q.example", when=None, published="2025-06-21")
    assert detect_conflicts([dated, previous, headline]) == []
    assert len(detect_conflicts([previous, headline])) == 1


def test_changes_are_compared_only_against_the_same_named_baseline() -> None:
    def change(points: str, since: str, url: str) -> SourcedClaim:
        return item(f"2024年9月調査の中小企業の価格転嫁率は49.7%となり、{since}調査から{points}上昇した。", url)

    a = change("3.6ポイント", "2024年3月", "https://a.example")
    (c,) = detect_conflicts([a, change("5.1ポイント", "2024年3月", "https://b.example")])
    assert (c.type, c.statement1.value, c.statement2.value) == ("contradiction", "3.6ポイント", "5.1ポイント")
    assert c.confidence == 0.8  # explicit keys, precise figures, but changes
    since_2022 = change("10.4ポイント", "2022年9月", "https://b.example")
    assert detect_conflicts([a, since_2022]) == []  # another baseline: both can be true
    gap = item("全業種平均との差は2024年3月調査で10ポイント以上ある。", "https://c.example")
    assert detect_conflicts([a, gap]) == []  # no level in the claim: a gap between groups, not a movement


def test_a_time_series_is_not_outdated_but_an_old_figure_called_latest_is() -> None:
    new = item(
        "2025年3月調査では価格転嫁率は52.4%。", OFFICIAL, when="2025-03", published="2025-06-20", source_type="official"
    )
    old = item("2024年3月調査の価格転嫁率は46.1%。", "https://a.example", when="2024-03", published="2024-06-21")
    assert detect_conflicts([new, old]) == []  # each is true for its own round
    latest = "最新の調査では価格転嫁率は46.1%にとどまる。"
    (c,) = detect_conflicts([new, item(latest, "https://a.example", when="2024-03", published="2024-06-21")])
    assert (c.type, c.when, c.statement1.value, c.severity) == ("outdated", "2024-03", "52.4%", 3)
    assert c.resolution == (
        "the 46.1% figure refers to 2024-03; superseded by 52.4% (2025-03, the official source dated 2025-06-20)"
    )
    # One round old is publication lag, not an outdated claim.
    recent = item("The latest round put the rate at 49.7%.", "https://b.example", when="2024-09", lang="en")
    assert detect_conflicts([new, recent]) == []
    # A page that also gives a later round is describing a series.
    series = [
        item(latest, "https://a.example", when="2024-03"),
        item("2025年3月は52.4%。", "https://a.example", when="2025-03"),
    ]
    assert detect_conflicts([new, *series]) == []


def test_claims_without_a_key_and_other_kinds_are_ignored() -> None:
    assert detect_conflicts([official(), item("価格転嫁率は約6割。", "https://a.example", subject="")]) == []
    assert detect_conflicts([official(), item("回答は1,200社。", "https://a.example")]) == []  # count vs percent
    generic = [item("離職率は12.0%。", f"https://{h}.example", attribute="rate:離職率") for h in "ab"]
    assert detect_conflicts([generic[0], item("離職率は20.0%。", "https://b.example", attribute="rate:離職率")])
    assert detect_conflicts(generic) == []


def test_policy_file_loads_and_rejects_bad_entries(tmp_path: Path) -> None:
    policy = load_policy()
    assert policy.contradiction_min_gap == 0.10 and "pass_through_rate" in policy.headline_attributes
    bad = tmp_path / "policy.yaml"
    bad.write_text("version: 1\ncurrent_markers: ['(']\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"policy\.yaml: line 2, column 1: current_markers: bad pattern '\('"):
        load_policy(bad)
    bad.write_text("version: 1\nunknown: 1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="line 2, column 1: unknown: unknown key"):
        load_policy(bad)
    strict = ConflictPolicy(contradiction_min_gap=0.5)
    (c,) = detect_conflicts([official(), item("価格転嫁率は約6割。", "https://a.example")], strict)
    assert c.type == "inconsistency"


# --- the same subject and attribute ---------------------------------------------------------------


def _manual(
    text: str, url: str, *, context: str = "", subject: str = "default", attribute: str = "value"
) -> SourcedClaim:
    """A standing fact of a manual page (no period), keyed as a shape reader keys "The default is ..."."""
    found = item(text, url, when=None, subject=subject, attribute=attribute, lang="en", source_type="official")
    return found.model_copy(update={"context": context})


def test_values_of_different_parameters_never_conflict() -> None:
    """Two defaults under one vague key ("default"/"value") are two parameters' defaults when they count
    different things, or when their sentences and sections name different parameters."""
    tuples = _manual("The default is 50 tuples.", "https://a.example/autovacuum")
    transactions = _manual("The default is 150 million transactions.", "https://b.example/client")
    assert detect_conflicts([tuples, transactions]) == []
    # the same noun, but the sections name different parameters
    threshold = _manual("The default is 50 tuples.", "https://a.example/a", context="autovacuum_vacuum_threshold")
    insert = _manual("The default is 1000 tuples.", "https://b.example/b", context="autovacuum_vacuum_insert_threshold")
    assert detect_conflicts([threshold, insert]) == []
    freeze = _manual("The default of autovacuum_freeze_max_age is 200 million transactions.", "https://a.example/c")
    table = _manual("The default of vacuum_freeze_table_age is 150 million transactions.", "https://b.example/d")
    assert [v.kind for v in (*freeze.claim.values, *table.claim.values)] == ["number", "number"]
    assert detect_conflicts([freeze, table]) == []
    # one parameter stated differently by two pages is still a conflict
    wrong = _manual("The default is 500 tuples.", "https://b.example/e", context="autovacuum_vacuum_threshold")
    (c,) = detect_conflicts([threshold, wrong])
    assert (c.type, c.statement1.value, c.statement2.value) == ("contradiction", "50", "500")
    assert detect_conflicts([tuples, _manual("The default is 75 tuples.", "https://c.example/f")])


def test_the_reading_names_the_preferred_side_as_data() -> None:
    """The suggested reading is data (which side, why), so a report can word it in its own language."""
    (c,) = detect_conflicts(
        [official(), item("価格転嫁率は約6割だった。", "https://blog.example", source_type="community")]
    )
    assert c.reading is not None and (c.reading.kind, c.reading.preferred, c.reading.note) == (
        "prefer",
        1,
        "approximate",
    )
    assert c.preferred.value == "49.7%" and c.reading.source_type == "official"
    # the outlier is the more authoritative side: it is the one to prefer
    news = [item("価格転嫁率は約6割。", f"https://news{i}.example", source_type="news") for i in range(2)]
    (c,) = detect_conflicts([*news, official("2024年9月調査の中小企業の価格転嫁率は50.2%。")])
    assert c.statement1.source.startswith("https://news") and c.preferred.value == "50.2%"
    new = item("2025年3月調査では価格転嫁率は52.4%。", OFFICIAL, when="2025-03", published="2025-06-20")
    old = item(
        "最新の調査では価格転嫁率は46.1%にとどまる。", "https://a.example", when="2024-03", published="2024-06-21"
    )
    (c,) = detect_conflicts([new, old])
    assert c.reading is not None and c.reading.kind == "superseded" and c.preferred.value == "52.4%"
