"""Iteration context, early termination and the cross-language query: pure logic, no Ray."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from core.errors import ConfigError
from nlp.conflicts import Conflict, Statement
from nlp.glossary import cross_language_query, parse_glossary
from research.iteration import IterationContext, initial_context, next_context, relative_gain, should_stop_early
from research.models import AgentReport, AgentStrategy, Finding
from research.scoring import ReportScore


@pytest.mark.parametrize(
    ("history", "stops"),
    [
        ([0.80, 0.81, 0.82], True),  # two flat steps in a row
        ([0.80, 0.90, 0.91], False),  # one big step, then one flat: not yet
        ([0.80, 0.81], False),  # only one step so far
        ([0.90, 0.91, 0.99], False),  # the latest step gained 8.8%
        ([1.0, 1.0, 1.0], True),
        ([0.0, 0.0, 0.5], False),  # any rise from zero is an improvement
        ([0.9, 0.8, 0.7], True),  # getting worse is not improving
    ],
)
def test_early_termination_needs_two_consecutive_small_gains(history: list[float], stops: bool) -> None:
    assert should_stop_early(history) is stops


def test_relative_gain() -> None:
    assert relative_gain(0.8, 0.84) == pytest.approx(0.05)
    assert relative_gain(0.0, 0.0) == 0.0 and relative_gain(0.0, 0.1) == float("inf")


def _conflict() -> Conflict:
    return Conflict(
        conflict_id="c1",
        type="contradiction",
        severity=4,
        confidence=0.7,
        subject="sme",
        attribute="pass_through_rate",
        when="2024-09",
        statement1=Statement(
            text="価格転嫁率は49.7%だった。",
            source="https://a.example/1",
            value="49.7%",
            key="sme/pass_through_rate@2024-09",
        ),
        statement2=Statement(
            text="中小企業の価格転嫁率は約6割まで来たらしい。",
            source="https://b.example/2",
            value="約6割",
            key="sme/pass_through_rate@2024-09",
        ),
    )


def test_next_context_carries_consensus_questions_sources_and_gaps() -> None:
    report = AgentReport(
        agent_id=1,
        report_id="r1",
        content="# consensus",
        sources=[],
        generated_at=datetime.now(UTC),
        duration_ms=1,
        strategy=AgentStrategy(agent_id=1),
        findings=[Finding(text="価格転嫁率は49.7%だった。", source="https://a.example/1")],
    )
    score = ReportScore(
        report_id="r1",
        consistency_score=0.9,
        source_reliability_score=0.8,
        coverage_score=0.2,
        overall_score=0.75,
        conflicts=[_conflict()],
    )
    context = next_context(
        "中小企業の価格転嫁の現状",
        2,
        report,
        score,
        ["https://b.example/2", "https://a.example/1"],
        ["sme/labour_cost_pass_through_rate@2024-09"],
    )
    assert context.iteration == 2 and not context.is_initial and context.previous_consensus == "# consensus"
    assert context.previous_score == score
    assert context.covered_sources == ["https://a.example/1", "https://b.example/2"]
    assert context.unresolved_questions[0] == (
        "中小企業の価格転嫁率（2024-09）は49.7%（https://a.example/1）か約6割（https://b.example/2）か"
    )
    # named for people, in the topic's language: no claim key
    assert "中小企業の労務費の価格転嫁率（2024-09）を述べる出典は1件だけ" in context.unresolved_questions[1]
    assert not any("pass_through_rate" in q for q in context.unresolved_questions)
    assert "労務費の転嫁" in context.areas_to_deepen  # a facet of the topic the consensus did not cover
    assert "価格転嫁率" in context.focus_queries[0]  # the disputed sentence's own terms
    brief = context.brief()
    assert brief.iteration == 2 and brief.covered_sources == context.covered_sources
    assert initial_context().is_initial and initial_context().brief().focus_queries == []


def test_cross_language_query_from_the_glossary() -> None:
    query = cross_language_query("中小企業の価格転嫁の現状", "ja")
    assert query is not None and "pass-through" in query and "SMEs" in query
    assert cross_language_query("SMEs and cost pass-through rates", "en") == "中小企業 価格転嫁"
    assert cross_language_query("量子コンピュータ", "ja") is None  # not covered: no query rather than a bad one
    with pytest.raises(ConfigError, match=r"terms\[0\]"):
        parse_glossary({"terms": [{"ja": "価格転嫁"}]})


def test_focus_queries_are_dealt_out_among_agents() -> None:
    context = IterationContext(
        iteration=2, is_initial=False, focus_queries=["q1", "q2", "q3", "q4"], covered_sources=["https://a.example/1"]
    )
    shares = [context.brief(i, 3).focus_queries for i in (1, 2, 3)]
    assert shares == [["q1", "q4"], ["q2"], ["q3"]]
    assert sorted(q for share in shares for q in share) == context.focus_queries  # every question searched
    single = IterationContext(iteration=2, is_initial=False, focus_queries=["only"])
    assert [single.brief(i, 3).focus_queries for i in (1, 2, 3)] == [["only"]] * 3  # nobody left without one
    assert context.brief(2, 3).covered_sources == ["https://a.example/1"]


def test_an_outdated_figure_is_asked_whether_it_is_superseded() -> None:
    """Two periods are no either-or: the question asks whether the old figure was superseded."""
    old = _conflict().statement2.model_copy(update={"key": "sme/pass_through_rate@FY2022", "value": "39.3%"})
    stale = _conflict().model_copy(update={"type": "outdated", "statement2": old, "when": "FY2022"})
    report = AgentReport(
        agent_id=1, report_id="r1", content="", sources=[], generated_at=datetime.now(UTC), duration_ms=1,
        strategy=AgentStrategy(agent_id=1),
    )  # fmt: skip
    score = ReportScore(
        report_id="r1", consistency_score=1, source_reliability_score=1, coverage_score=1, overall_score=1,
        conflicts=[stale],
    )  # fmt: skip
    (question,) = next_context("価格転嫁の現状", 2, report, score, [], []).unresolved_questions
    assert question == (
        "中小企業の価格転嫁率の39.3%（2022年度、https://b.example/2）は、"
        "新しい49.7%（2024-09、https://a.example/1）に置き換わったか"
    )
