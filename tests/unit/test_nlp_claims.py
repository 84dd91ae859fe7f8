"""Claim candidates (nlp.claims) over the bundled corpus, the GiNZA pre-filter, and the era-date fix."""

from __future__ import annotations

import datetime as dt
import itertools
from collections import defaultdict
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import trafilatura
import yaml

from core.errors import ConfigError, InputError
from nlp.claims import (
    Claim,
    candidate_spans,
    extract_claims,
    is_claim_candidate,
    load_vocabulary,
    parse_vocabulary,
)
from nlp.entities import attach_era_names, extract_entities, extract_entities_batch
from nlp.findings import split_sentences
from nlp.values import Value, fold, parse_values, values_agree

# tests/conftest.py chdirs into tmp_path, so locate the corpus from this file.
CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
MANIFEST: dict[str, Any] = yaml.safe_load((CORPUS / "manifest.yaml").read_text(encoding="utf-8"))
PLANTED: dict[str, Any] = yaml.safe_load((CORPUS / "planted.yaml").read_text(encoding="utf-8"))
BY_URL = {p["url"]: p for p in MANIFEST["pages"]}

# The (subject, attribute) each planted conflict must land on, on every side, in both languages.
EXPECTED_KEYS = {
    "pass-through-rate-autumn-2024": ("sme", "pass_through_rate"),
    "no-pass-through-share-autumn-2024": ("sme", "no_pass_through_share"),
    "pass-through-rate-latest": ("sme", "pass_through_rate"),
    "labour-cost-pass-through-autumn-2024": ("sme", "labour_cost_pass_through_rate"),
    "trucking-pass-through-autumn-2024": ("trucking", "pass_through_rate"),
    "survey-responses-autumn-2024": ("sme", "survey_responses"),
}
DEFAULT_PERIOD = "2024-09"  # every planted round except the `as_of` ones is September 2024
SIDES = [(c["id"], side) for c in PLANTED["conflicts"] for side in c["sides"]]


@cache
def page_text(url: str) -> str:
    page = BY_URL[url]
    return trafilatura.extract((CORPUS / page["file"]).read_text(encoding="utf-8")) or ""


@cache
def page_claims(url: str, with_entities: bool = True) -> tuple[Claim, ...]:
    page, text = BY_URL[url], page_text(url)
    entities = extract_entities(text, page["lang"]) if with_entities else []
    return tuple(extract_claims(text, entities, page["lang"], reference_date=page["published"]))


def period(claim: Claim) -> str | None:
    return claim.when.date_from[:7] if claim.when and claim.when.date_from else None


def planted_value(side: dict[str, Any]) -> Value:
    return parse_values(str(side["value"]))[0]


def agrees(value: Value, planted: Value) -> bool:
    """A bare planted number ("36,210" on the English summary) stands for a count of the same size."""
    if planted.kind == "number" and value.kind == "count":
        return value.value == planted.value
    return values_agree(value, planted)


def matching(claims: tuple[Claim, ...], side: dict[str, Any]) -> list[tuple[Claim, Value]]:
    """Claims holding the side's value as written (49.7%, 約6割, 36,210社)."""
    want, written = planted_value(side), fold(str(side["value"]))
    return [(c, v) for c in claims for v in c.values if written in fold(v.raw) and agrees(v, want)]


def test_every_planted_conflict_is_covered() -> None:
    assert {c["id"] for c in PLANTED["conflicts"]} == set(EXPECTED_KEYS)


@pytest.mark.parametrize(("conflict", "side"), SIDES, ids=[f"{c}|{s['url'].split('/')[2]}" for c, s in SIDES])
def test_planted_value_is_a_claim_with_the_expected_key(conflict: str, side: dict[str, Any]) -> None:
    claims = page_claims(side["url"])
    found = matching(claims, side)
    assert found, f"{side['value']} not found among {[v.raw for c in claims for v in c.values]}"
    subject, attribute = EXPECTED_KEYS[conflict]
    when = side.get("as_of") or DEFAULT_PERIOD
    keyed = [(c, v) for c, v in found if (c.subject, c.attribute, period(c)) == (subject, attribute, when)]
    assert keyed, [(c.subject, c.attribute, period(c), c.text) for c, _ in found]
    claim, value = keyed[0]
    assert claim.lang == BY_URL[side["url"]]["lang"] and not value.change
    assert page_text(side["url"])[claim.start : claim.end] == claim.text
    assert claim.polarity == "positive"  # negations inside 全く転嫁できなかった belong to the attribute


@pytest.mark.parametrize("conflict", PLANTED["conflicts"], ids=lambda c: c["id"])
def test_planted_conflicts_are_detectable_by_value(conflict: dict[str, Any]) -> None:
    """Sides that state the same figure agree, the outlier disagrees; the outdated one differs in `when`."""
    subject, attribute = EXPECTED_KEYS[conflict["id"]]
    readings = []
    for side in conflict["sides"]:
        when = side.get("as_of") or DEFAULT_PERIOD
        key = (subject, attribute, when)
        found = [v for c, v in matching(page_claims(side["url"]), side) if (c.subject, c.attribute, period(c)) == key]
        readings.append((str(side["value"]), when, found[0]))
    for (raw_a, when_a, a), (raw_b, when_b, b) in itertools.combinations(readings, 2):
        same = fold(raw_a).rstrip("社") == fold(raw_b).rstrip("社")
        assert values_agree(a, b) is same, (raw_a, raw_b)
        if conflict["type"] == "outdated":
            assert (when_a == when_b) is same
        else:
            assert when_a == when_b


@pytest.mark.parametrize(("conflict", "side"), SIDES, ids=[f"{c}|{s['url'].split('/')[2]}" for c, s in SIDES])
def test_pages_do_not_contradict_themselves(conflict: str, side: dict[str, Any]) -> None:
    """Every level figure a page gives for the planted key agrees with the planted value (no false conflicts)."""
    subject, attribute = EXPECTED_KEYS[conflict]
    when = side.get("as_of") or DEFAULT_PERIOD
    want = planted_value(side)
    at_key = [
        v
        for c in page_claims(side["url"])
        if (c.subject, c.attribute, period(c)) == (subject, attribute, when)
        for v in c.values
        if not v.change
    ]
    assert at_key and all(agrees(v, want) for v in at_key), [v.raw for v in at_key]


def test_corpus_disagrees_only_where_conflicts_were_planted() -> None:
    """Across all 47 pages, named keys with disagreeing figures are exactly the planted contradictions."""
    groups: dict[tuple[str | None, str, str | None], list[tuple[str, Value]]] = defaultdict(list)
    for page in MANIFEST["pages"]:
        if page.get("duplicate_of"):
            continue
        for c in page_claims(page["url"], with_entities=False):
            if c.attribute and ":" not in c.attribute and c.when:
                groups[(c.subject, c.attribute, period(c))] += [(page["url"], v) for v in c.values if not v.change]
    disagreeing = {
        key
        for key, items in groups.items()
        if any(a[0] != b[0] and not values_agree(a[1], b[1]) for a, b in itertools.combinations(items, 2))
    }
    assert disagreeing == {
        ("sme", "pass_through_rate", "2024-09"),
        ("sme", "no_pass_through_share", "2024-09"),
        ("sme", "labour_cost_pass_through_rate", "2024-09"),
        ("trucking", "pass_through_rate", "2024-09"),
        ("sme", "survey_responses", "2024-09"),
    }
    # The outdated conflict: same key, different rounds.
    assert {v.raw for _, v in groups[("sme", "pass_through_rate", "2022-09")]} == {"39.3%"}
    assert "52.4%" in {v.raw for _, v in groups[("sme", "pass_through_rate", "2025-03")]}


# --- reading single sentences ---------------------------------------------------------------------


def read(text: str, lang: str, reference_date: dt.date | None = None) -> list[tuple[Any, ...]]:
    return [
        (c.subject, c.attribute, period(c), c.polarity, [v.raw for v in c.values])
        for c in extract_claims(text, [], lang, reference_date=reference_date)
        if c.values
    ]


def test_japanese_breakdowns_previous_readings_and_changes() -> None:
    text = (
        "令和6年9月調査の結果を公表します。中小企業の価格転嫁率は49.7%となり、令和6年3月調査の46.1%から3.6ポイント上昇しました。"
        "コスト要素別にみると、原材料費が51.8%、労務費が44.7%でした。"
        "業種別では、トラック運送が34.2%で最も低く、化学（61.4%）が最も高い。"
        "全く転嫁できなかった企業の割合は9.5%で、前回の11.2%から減った。"
    )
    assert read(text, "ja") == [
        ("sme", "pass_through_rate", "2024-09", "positive", ["49.7%", "3.6ポイント"]),
        ("sme", "pass_through_rate", "2024-03", "positive", ["46.1%"]),
        ("sme", "raw_material_pass_through_rate", "2024-09", "positive", ["51.8%"]),
        ("sme", "labour_cost_pass_through_rate", "2024-09", "positive", ["44.7%"]),
        ("trucking", "pass_through_rate", "2024-09", "positive", ["34.2%"]),
        ("chemicals", "pass_through_rate", "2024-09", "positive", ["61.4%"]),
        ("sme", "no_pass_through_share", "2024-09", "positive", ["9.5%"]),
        ("sme", "no_pass_through_share", None, "negative", ["11.2%"]),  # an earlier round: no period given
    ]


def test_english_attached_phrases_and_periods() -> None:
    text = (
        "Japan's small firms are surveyed twice a year. "
        "In the September 2024 round, the average pass-through rate was 49.7%, and 9.5% of firms whose costs "
        "had risen could not pass on any of the increase. Firms passed on 51.8% of raw material cost increases "
        "and 44.7% of labour cost increases. Trucking operators passed on just 21.3% of their cost increases "
        "in the March 2025 survey round. The share of firms unable to pass on any cost increase fell to 8.1% "
        "from 9.5%."
    )
    assert read(text, "en") == [
        ("sme", "pass_through_rate", "2024-09", "positive", ["49.7%"]),
        ("sme", "no_pass_through_share", "2024-09", "positive", ["9.5%"]),
        ("sme", "raw_material_pass_through_rate", "2024-09", "positive", ["51.8%"]),
        ("sme", "labour_cost_pass_through_rate", "2024-09", "positive", ["44.7%"]),
        ("trucking", "pass_through_rate", "2025-03", "positive", ["21.3%"]),
        ("sme", "no_pass_through_share", "2024-09", "negative", ["8.1%"]),  # "fell to": a decrease
        ("sme", "no_pass_through_share", None, "positive", ["9.5%"]),
    ]


def test_negation_segments_and_year_less_months() -> None:
    ja = "9月の調査で、中小企業の価格転嫁率は5割に達していない。従業員20人以下の企業では14.8%だった。"
    claims = read(ja, "ja", reference_date=dt.date(2024, 11, 29))
    assert claims[0] == ("sme", "pass_through_rate", "2024-09", "negative", ["5割"])
    assert claims[-1][0] == "segment:従業員20人以下の企業"
    assert read(ja, "ja")[0][2] == "--09"  # without a reference date the year stays open


def test_other_languages_and_bad_input() -> None:
    assert extract_claims("Le taux est de 49,7 %.", [], "other") == []
    assert extract_claims("", [], "ja") == []
    with pytest.raises(InputError, match="unsupported language"):
        extract_claims("49.7%", [], "fr")


def test_entity_only_sentences_and_entities_field() -> None:
    text = "トヨタ自動車が福岡に新工場を建てる。価格転嫁率は49.7%だった。"
    entities = extract_entities(text, "ja")
    claims = extract_claims(text, entities, "ja")
    assert claims[0].values == [] and "トヨタ自動車" in claims[0].entities
    assert claims[1].values[0].raw == "49.7%"
    assert [c.text for c in extract_claims(text, [], "ja")] == ["価格転嫁率は49.7%だった。"]


# --- the pre-filter ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sentence", "candidate"),
    [
        ("価格転嫁率は49.7%だった。", True),
        ("価格転嫁率は４９．７％だった。", True),
        ("約三割の企業が回答した。", True),
        ("令和元年の改元。", True),
        ("It rose in March.", True),
        ("こんばんは、三代目です。", False),
        ("材料費は通るけど人件費は通らない、という声ばかりです。", False),
        ("Start with the top.", False),
        ("Labour is the common thread.", False),
        ("12", False),  # too short to hold a claim
    ],
)
def test_is_claim_candidate(sentence: str, candidate: bool) -> None:
    assert is_claim_candidate(sentence) is candidate


def test_names_widen_the_pre_filter() -> None:
    assert not is_claim_candidate("トヨタ自動車が新工場を発表した。")
    assert is_claim_candidate("経済産業省が新工場を発表した。", names=True)
    assert is_claim_candidate("Analysts said Toyota Motor will expand.", names=True)
    assert not is_claim_candidate("this is all lower case prose.", names=True)


def test_candidate_spans_skip_text_without_claims() -> None:
    text = "こんばんは。今日は暑い。価格転嫁率は49.7%だった。2024年9月の調査による。ところで。\n36,210社が回答した。"
    spans = candidate_spans(text)
    expected = ["価格転嫁率は49.7%だった。2024年9月の調査による。", "36,210社が回答した。"]
    assert [text[s:e] for s, e in spans] == expected
    kept = [s.text for s in split_sentences(text) if is_claim_candidate(s.text)]
    assert "".join(text[s:e] for s, e in spans).replace("\n", "") == "".join(kept)
    assert candidate_spans("こんばんは。Start with the top.") == []


def test_pre_filter_keeps_every_claim_of_the_corpus() -> None:
    """Whatever extract_claims finds with figures lies inside a candidate span (nothing is lost by skipping)."""
    for page in MANIFEST["pages"]:
        text = page_text(page["url"])
        spans = candidate_spans(text)
        for claim in page_claims(page["url"], with_entities=False):
            assert any(s <= claim.start and claim.end <= e for s, e in spans), claim.text


def test_worker_flow_runs_ginza_on_candidate_spans_only() -> None:
    text = page_text("https://sme-price-survey.example/2024/autumn")
    spans = candidate_spans(text)
    assert sum(e - s for s, e in spans) < len(text)
    found = extract_entities_batch([text[s:e] for s, e in spans], lang="ja")
    entities = [
        e.model_copy(update={"start": e.start + s, "end": e.end + s})
        for (s, _), ents in zip(spans, found, strict=True)
        for e in ents
    ]
    assert all(text[e.start : e.end] == e.text for e in entities)
    claims = extract_claims(text, entities, "ja", reference_date=dt.date(2024, 11, 29))
    assert any("令和6年9月" in c.entities for c in claims)  # the era fix reaches the claims


# --- the vocabulary ------------------------------------------------------------------------------


def test_vocabulary_loads_and_rejects_bad_entries(tmp_path: Path) -> None:
    vocab = load_vocabulary()
    assert {a.key for a in vocab.attributes} >= {"pass_through_rate", "no_pass_through_share", "survey_responses"}
    with pytest.raises(ConfigError, match="attributes"):
        parse_vocabulary({"subjects": {}})
    with pytest.raises(ConfigError, match=r"attributes\.x\.kinds: Field required"):
        parse_vocabulary({"attributes": {"x": {"before": ["率"]}}})
    with pytest.raises(ConfigError, match="bad pattern"):
        parse_vocabulary({"attributes": {"x": {"kinds": ["percent"], "before": ["(unclosed"]}}})
    with pytest.raises(ConfigError, match=r"subjects\.s\.type: Field required"):
        parse_vocabulary({"attributes": {}, "subjects": {"s": {"patterns": ["x"]}}})
    with pytest.raises(ConfigError, match="cannot read"):
        load_vocabulary(tmp_path / "missing.yaml")
    (tmp_path / "bad.yaml").write_text("attributes: [", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_vocabulary(tmp_path / "bad.yaml")


# --- the era-date fix in nlp.entities ------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "spans", "expected"),
    [
        ("令和6年9月の調査", [(2, 6, "DATE")], [(0, 6, "DATE")]),
        ("令和6年9月30日時点", [(2, 11, "DATE")], [(0, 11, "DATE")]),  # keeps its own end
        ("令和元年度の予算", [], [(0, 5, "DATE")]),  # GiNZA misses 元年 entirely
        ("令和元年5月1日", [(4, 8, "DATE")], [(0, 8, "DATE")]),
        ("平成31年4月", [(0, 7, "DATE")], [(0, 7, "DATE")]),  # already right
        ("令和6年に", [(2, 4, "CARDINAL")], [(0, 4, "DATE")]),  # a number inside the date is replaced
        ("令和6年度予算委員会", [(0, 10, "ORG")], [(0, 10, "ORG")]),  # a larger name is left alone
    ],
)
def test_attach_era_names(text: str, spans: list[Any], expected: list[Any]) -> None:
    assert attach_era_names(text, spans) == expected


def test_ginza_dates_include_the_era_name() -> None:
    text = "令和6年9月の調査では、令和元年度と比べ、令和６年１０月１日から回答を得た。"
    dates = [(e.text, e.start) for e in extract_entities(text, "ja") if e.label == "DATE"]
    assert ("令和6年9月", 0) in dates
    assert ("令和元年度", text.index("令和元年度")) in dates
    assert any(t.startswith("令和６年１０月１日") for t, _ in dates)
    assert all(text[s : s + len(t)] == t for t, s in dates)
