"""Report scores, best-report selection and the review flag (research.scoring, WFL-002/003)."""

from __future__ import annotations

import itertools
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from core.errors import ConfigError
from core.models import CamelModel
from research.models import Finding, SourceReference
from research.reliability import reliability_for
from research.scoring import (
    ConflictSummary,
    Facet,
    ReportScore,
    consistency_score,
    coverage_score,
    covered_facets,
    facets_for,
    flag_for_review,
    load_facets,
    overall_score,
    parse_facets,
    reliability_score,
    score_report,
    select_best,
    topic_terms,
)

TOPIC = "中小企業の価格転嫁の現状"
FACETS = facets_for(TOPIC)
TWO_FACETS = "中小企業の価格転嫁率は49.7%と5割に迫った。一方で労務費の転嫁は遅れている。"
SIX_FACETS = (
    TWO_FACETS + "エネルギーや原材料の上昇分も残る。業種別ではトラック運送業が34.2%と低い。"
    "最低賃金の引き上げが続き、価格交渉の機会を設ける企業が増えた。"
)
SIX_FACETS_EN = (
    "The pass-through rate reached 49.7%. Labour costs lag behind; energy prices eased. "
    "Trucking remains the weakest sector, wages keep rising and firms negotiate more often."
)


class Conflict(CamelModel):
    """Stand-in for the conflict detector's model: any model with severity and confidence will do."""

    conflict_id: str
    severity: int
    confidence: float


def conflict(severity: int = 3, confidence: float = 1.0, cid: str = "c") -> Conflict:
    return Conflict(conflict_id=cid, severity=severity, confidence=confidence)


def src(url: str, source_type: str | None = None, duplicate_of: str | None = None) -> SourceReference:
    return SourceReference(
        url=url,
        title="t",
        fetched_at=datetime(2025, 1, 1, tzinfo=UTC),
        source_type=source_type,
        duplicate_of=duplicate_of,
    )


def score(rid: str, consistency: float, coverage: float = 0.5, reliability: float = 0.5) -> ReportScore:
    return ReportScore(
        report_id=rid,
        consistency_score=consistency,
        coverage_score=coverage,
        source_reliability_score=reliability,
        overall_score=overall_score(consistency, reliability, coverage),
    )


# --- bounds -------------------------------------------------------------------------------------

CONFLICT_SETS = [
    [],
    [conflict(1, 0.1)],
    [conflict(5, 1.0)],
    [conflict(5, 1.0, str(i)) for i in range(50)],
    [conflict(9, 3.0)],
    [conflict(-2, -1.0)],
]  # out-of-range inputs are clamped, not trusted
SOURCE_SETS = [
    [],
    [src("https://www.meti.go.jp/a")],
    [src("https://note.com/u/n/1", "community"), src("https://a.example/", "official")],
]
TEXTS = ["", TWO_FACETS, SIX_FACETS, SIX_FACETS_EN, [Finding(text=SIX_FACETS, source="u")]]


@pytest.mark.parametrize(
    ("conflicts", "claims", "sources", "text"),
    [(c, n, s, t) for c, n, s, t in itertools.product(CONFLICT_SETS, [0, 1, 20], SOURCE_SETS, TEXTS)],
)
def test_every_score_is_bounded(
    conflicts: list[Conflict], claims: int, sources: list[SourceReference], text: Any
) -> None:
    s = score_report("r", conflicts=conflicts, claim_count=claims, sources=sources, text=text, facets=FACETS)
    for value in (s.consistency_score, s.source_reliability_score, s.coverage_score, s.overall_score):
        assert 0.0 <= value <= 1.0


# --- consistency ----------------------------------------------------------------------------------


def test_consistency_is_one_without_conflicts() -> None:
    assert consistency_score([], 0) == consistency_score([], 30) == 1.0


def test_consistency_formula() -> None:
    # one certain severity-5 conflict among 20 claims: 1 - (5/5 * 1.0) / 20
    assert consistency_score([conflict(5, 1.0)], 20) == pytest.approx(0.95)
    assert consistency_score([conflict(2, 0.5), conflict(4, 0.75)], 10) == pytest.approx(1 - (0.2 + 0.6) / 10)


def test_more_conflicts_lower_consistency() -> None:
    values = [consistency_score([conflict(3, 0.8, str(i)) for i in range(n)], 40) for n in range(8)]
    assert all(a > b for a, b in itertools.pairwise(values))


@pytest.mark.parametrize("claims", [5, 20])
def test_severer_or_surer_conflicts_lower_consistency(claims: int) -> None:
    by_severity = [consistency_score([conflict(s, 0.8)], claims) for s in range(1, 6)]
    by_confidence = [consistency_score([conflict(3, c)], claims) for c in (0.1, 0.4, 0.7, 1.0)]
    assert all(a > b for a, b in itertools.pairwise(by_severity))
    assert all(a > b for a, b in itertools.pairwise(by_confidence))


def test_long_report_is_not_punished_for_its_size() -> None:
    conflicts = [conflict(4, 0.9)]
    assert consistency_score(conflicts, 10) < consistency_score(conflicts, 40)
    # the same share of contradicted claims gives the same score
    assert consistency_score(conflicts, 10) == pytest.approx(consistency_score(conflicts * 4, 40))


def test_consistency_saturates_at_zero() -> None:
    assert consistency_score([conflict(5, 1.0)] * 5, 3) == 0.0


# --- reliability ----------------------------------------------------------------------------------


def test_reliability_is_mean_of_distinct_origins() -> None:
    a, b = src("https://www.meti.go.jp/a"), src("https://x.hatenablog.com/e/1")
    assert reliability_score([a, b]) == pytest.approx((reliability_for(a) + reliability_for(b)) / 2)
    assert reliability_score([]) == 0.0


def test_syndicated_copy_counts_once_at_origin_reliability() -> None:
    origin = src("https://a.example/news/1", "news")
    copies = [src(f"https://portal{i}.example/1", "news", duplicate_of=origin.url) for i in range(3)]
    official = src("https://b.example/release", "official")
    assert reliability_score([official, origin, *copies]) == pytest.approx(
        (reliability_for(official) + reliability_for(origin)) / 2
    )
    # a copy alone stands for its origin
    assert reliability_score([official, copies[0]]) == reliability_score([official, origin])


# --- coverage -------------------------------------------------------------------------------------


def test_bundled_topic_has_configured_facets() -> None:
    names = [f.name for f in FACETS]
    assert {
        "overall_rate",
        "labour_cost",
        "energy_raw_materials",
        "sectors",
        "regions",
        "wages",
        "law_enforcement",
        "negotiation",
        "firm_size",
    } <= set(names)


def test_coverage_two_versus_six_facets() -> None:
    assert covered_facets(TWO_FACETS, FACETS) == ["overall_rate", "labour_cost"]
    assert covered_facets(SIX_FACETS, FACETS) == [
        "overall_rate",
        "labour_cost",
        "energy_raw_materials",
        "sectors",
        "wages",
        "negotiation",
    ]
    assert coverage_score(TWO_FACETS, FACETS) == pytest.approx(2 / len(FACETS))
    assert coverage_score(SIX_FACETS, FACETS) == pytest.approx(6 / len(FACETS))
    assert coverage_score(SIX_FACETS_EN, FACETS) == coverage_score(SIX_FACETS, FACETS)


def test_coverage_counts_claim_keys_and_findings() -> None:
    assert coverage_score("", FACETS, claim_keys=["minimum_wage", "trucking"]) == pytest.approx(2 / len(FACETS))
    findings = [Finding(text="価格転嫁率は49.7%。", source="u"), Finding(text="勧告は21件。", source="v")]
    assert covered_facets(findings, FACETS) == ["overall_rate", "law_enforcement"]
    assert coverage_score("何も関係のない文章", FACETS) == 0.0
    assert coverage_score(SIX_FACETS, []) == 0.0


def test_generic_facets_for_other_topics() -> None:
    assert topic_terms("リモートワークの導入状況") == ["リモートワーク", "導入"]
    facets = facets_for("Remote work adoption", ["wage_increase_rate", "rate:離職率"])
    names = [f.name for f in facets]
    assert names == ["term:remote", "term:work", "term:adoption", "claim:rate:離職率", "claim:wage_increase_rate"]
    # the union of terms and every agent's claim keys; each report covers its share
    assert coverage_score("Remote work is spreading.", facets) == pytest.approx(2 / 5)
    assert coverage_score("離職率が下がった", facets, ["wage_increase_rate"]) == pytest.approx(2 / 5)


def test_facet_file_errors_name_the_entry(tmp_path: Path) -> None:
    good_facet = {"name": "f", "keywords": ["x"]}
    with pytest.raises(ConfigError, match=r"facets\.yaml: topics\[0\] \('t'\)\.facets\[1\] \('empty'\)"):
        parse_facets(
            {"topics": [{"name": "t", "match": ["x"], "facets": [good_facet, {"name": "empty"}]}]}, "facets.yaml"
        )
    with pytest.raises(ConfigError, match=re.escape("topics[0] ('t').match")):
        parse_facets({"topics": [{"name": "t", "match": ["("], "facets": [good_facet]}]}, "facets.yaml")
    with pytest.raises(ConfigError, match=r"facets\.yaml: top level: expected a mapping of keys, got list"):
        parse_facets([], "facets.yaml")
    with pytest.raises(ConfigError, match=r"nothing\.yaml"):
        load_facets(tmp_path / "nothing.yaml")


# --- overall --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("c", "r", "v"), [(1, 1, 1), (0, 0, 0), (0.9, 0.4, 0.25), (0.123, 0.456, 0.789)])
def test_overall_formula(c: float, r: float, v: float) -> None:
    assert overall_score(c, r, v) == pytest.approx(0.5 * c + 0.3 * r + 0.2 * v, abs=1e-15)


def test_score_report_fields_and_arithmetic() -> None:
    sources = [src("https://a.example/1", "official"), src("https://b.example/2", "community")]
    s = score_report(
        "r1",
        conflicts=[conflict(4, 0.5)],
        claim_count=10,
        sources=sources,
        text=TWO_FACETS,
        facets=FACETS,
        unverified_count=3,
    )
    assert s.consistency_score == pytest.approx(1 - 0.4 / 10)
    assert s.source_reliability_score == pytest.approx((0.9 + 0.3) / 2)
    assert s.coverage_score == pytest.approx(2 / 9)
    assert s.overall_score == pytest.approx(
        0.5 * s.consistency_score + 0.3 * s.source_reliability_score + 0.2 * s.coverage_score
    )
    assert "4/5×0.50" in s.arithmetic and "2/9 facets" in s.arithmetic and f"{s.overall_score:.3f}" in s.arithmetic
    dumped = s.model_dump(by_alias=True)
    assert {
        "reportId",
        "consistencyScore",
        "sourceReliabilityScore",
        "coverageScore",
        "overallScore",
        "relevanceScore",
        "conflicts",
        "unverifiedCount",
        "arithmetic",
    } == set(dumped)
    assert dumped["conflicts"] == [{"conflictId": "c", "severity": 4, "confidence": 0.5}]
    back = ReportScore.model_validate_json(s.model_dump_json(by_alias=True))
    assert isinstance(back.conflicts[0], ConflictSummary) and back.conflicts[0].severity == 4


def test_report_score_rejects_conflicts_without_severity() -> None:
    class Bare(CamelModel):
        text: str

    with pytest.raises(ValidationError, match="severity"):
        ReportScore(
            report_id="r",
            consistency_score=1,
            source_reliability_score=1,
            coverage_score=1,
            overall_score=1,
            conflicts=[Bare(text="x")],
        )
    with pytest.raises(ValidationError):
        score("r", consistency=1.2)


# --- selection ------------------------------------------------------------------------------------


def test_highest_consistency_wins_even_with_lower_overall() -> None:
    steady = score("steady", consistency=0.95, coverage=0.2, reliability=0.2)
    flashy = score("flashy", consistency=0.90, coverage=1.0, reliability=1.0)
    assert flashy.overall_score > steady.overall_score
    best, reason = select_best([flashy, steady])
    assert best == "steady"
    assert "highest consistency 0.950 (next: flashy 0.900)" in reason
    assert "flashy has a higher overall score" in reason


def test_equal_consistency_coverage_decides() -> None:
    a = score("a", consistency=0.9, coverage=0.4, reliability=0.9)
    b = score("b", consistency=0.9, coverage=0.7, reliability=0.1)
    best, reason = select_best([a, b])
    assert best == "b"
    assert "2 reports tie on consistency 0.900" in reason and "highest coverage 0.700 (next: a 0.400)" in reason


def test_consistency_within_epsilon_counts_as_equal() -> None:
    a = score("a", consistency=0.9 + 5e-10, coverage=0.4)
    b = score("b", consistency=0.9, coverage=0.6)
    assert select_best([a, b])[0] == "b"
    c = score("c", consistency=0.9 + 1e-6, coverage=0.4)
    assert select_best([c, b])[0] == "c"


def test_ties_on_consistency_and_coverage_go_to_the_report_that_answers_more_of_the_question() -> None:
    """Answer relevance decides before the weighted score: a report id is the very last resort."""
    reliable = score("a", consistency=1.0, coverage=0.5, reliability=0.9)
    answering = score("b", consistency=1.0, coverage=0.5, reliability=0.1).model_copy(update={"relevance_score": 0.8})
    best, reason = select_best([reliable, answering])
    assert best == "b"
    assert "highest answer relevance 0.800 (next: a 0.000)" in reason


def test_full_ties_fall_to_overall_then_report_id() -> None:
    low = score("r1", consistency=0.8, coverage=0.5, reliability=0.2)
    high = score("r2", consistency=0.8, coverage=0.5, reliability=0.6)
    assert select_best([low, high])[0] == "r2"
    twins = [score(rid, consistency=0.8) for rid in ("r9", "r3", "r5")]
    best, reason = select_best(twins)
    assert best == "r3" and "report id r3 comes first among r3, r5, r9" in reason


def test_selection_is_deterministic() -> None:
    scores = [score("a", 0.9, 0.3), score("b", 0.9, 0.3), score("c", 0.7, 1.0), score("d", 0.9, 0.1)]
    results = {select_best(list(p)) for p in itertools.permutations(scores)}
    assert len(results) == 1 and next(iter(results))[0] == "a"


def test_select_best_needs_a_score() -> None:
    with pytest.raises(ValueError, match="at least one"):
        select_best([])


# --- review flag ----------------------------------------------------------------------------------


def test_flag_when_every_report_is_above_threshold() -> None:
    assert flag_for_review([score("a", 0.85), score("b", 0.5)])  # conflict rates 0.15 and 0.5 > 0.1
    assert not flag_for_review([score("a", 0.85), score("b", 0.95)])  # b: rate 0.05, within the threshold
    assert not flag_for_review([score("a", 0.9)])  # exactly at the threshold is not above it
    assert flag_for_review([score("a", 0.9)], threshold=0.05)
    assert not flag_for_review([])


def test_flag_uses_consistency_from_conflicts() -> None:
    facets = [Facet(name="f")]
    many = score_report("a", conflicts=[conflict(5, 1.0)] * 3, claim_count=10, sources=[], text="", facets=facets)
    few = score_report("b", conflicts=[conflict(5, 1.0)], claim_count=20, sources=[], text="", facets=facets)
    assert flag_for_review([many])  # 3/10 conflicting claims
    assert not flag_for_review([many, few])  # 1/20 is within the default 0.1
