"""The consensus research engine on a real local Ray cluster over the bundled corpus: 3 agents x 3 iterations."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import yaml

from core.events import ListSink
from core.messages import catalogue
from core.runtime import RayRuntime
from core.settings import load_settings
from nlp.values import parse_values
from research.engine import run_research
from research.errors import ResearchError
from research.events import AgentCompleted, AgentStarted, ResearchCompleted, StageProgress
from research.outputs import write_outputs
from research.result import ConsensusResearchResult as Result
from tests.report_words import foreign_words

TOPIC = "中小企業の価格転嫁の現状"
CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"


def _copies(urls: set[str]) -> set[str]:
    """Syndicated copies of these pages (a copy may stand for its original in a conflict)."""
    manifest = yaml.safe_load((CORPUS / "manifest.yaml").read_text(encoding="utf-8"))
    return {p["url"] for p in manifest["pages"] if p.get("duplicate_of") in urls}


def _source_numbers(report: str) -> dict[str, int]:
    sources = report.split("## 出典")[1]  # the topic is Japanese: so is the report
    return {m.group(2): int(m.group(1)) for m in re.finditer(r"^(\d+)\. \[.*?\]\((\S+)\)", sources, re.MULTILINE)}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def ray_result(ray_cluster: None, tmp_path_factory: pytest.TempPathFactory) -> tuple[Result, ListSink]:
    # Module-scoped: runs before the per-test isolation, so the data directory is set explicitly.
    settings = load_settings(overrides={"data_dir": tmp_path_factory.mktemp("data")})
    runtime = RayRuntime()
    events = ListSink()
    try:
        result = await run_research(TOPIC, settings, runtime, events, run_id="itest")
    finally:
        await runtime.close()
    return result, events


def test_three_agents_three_iterations_with_a_consensus_each(ray_result: tuple[Result, ListSink]) -> None:
    result, _ = ray_result
    assert [it.iteration for it in result.iterations] == [1, 2, 3] and result.stopped_early is None
    assert result.total_agent_runs == 9 and result.agent_failures == []
    for it in result.iterations:
        assert {r.agent_id for r in it.agent_reports} == {1, 2, 3}
        assert it.selected_report_id in {s.report_id for s in it.scores} and "（3件中）" in it.selection_reason
        assert 0 <= it.source_overlap < 1
    assert len(result.sources) >= 20
    assert all(s.url.startswith("https://") and ".example" in s.url for s in result.sources)


def test_later_iterations_search_the_open_questions_and_read_new_sources(ray_result: tuple[Result, ListSink]) -> None:
    result, _ = ray_result
    first, second = result.iterations[0], result.iterations[1]
    assert second.context.unresolved_questions and second.context.focus_queries
    asked = {q for r in second.agent_reports for q in r.queries}
    assert any(focus in q for focus in second.context.focus_queries for q in asked)
    before = {s.url for r in first.agent_reports for s in r.sources}
    after = {s.url for r in second.agent_reports for s in r.sources}
    assert after - before  # the covered sources ranked last, so new ones came in


# Where each planted conflict lands: the key of its disagreeing (or stale) side.
PLANTED_KEYS = {
    "pass-through-rate-autumn-2024": "sme/pass_through_rate@2024-09",
    "no-pass-through-share-autumn-2024": "sme/no_pass_through_share@2024-09",
    "pass-through-rate-latest": "sme/pass_through_rate@2022-09",
    "labour-cost-pass-through-autumn-2024": "sme/labour_cost_pass_through_rate@2024-09",
    "trucking-pass-through-autumn-2024": "trucking/pass_through_rate@2024-09",
    "survey-responses-autumn-2024": "sme/survey_responses@2024-09",
}
NEVER_READ = "pass-through-rate-autumn-2024"  # see test_the_blog_that_misremembers_the_rate_is_read


def _check_planted(result: Result, conflict: dict[str, Any]) -> None:
    """The planted conflict is disputed at its key, between its own pages, both sides in the report."""
    disputed_section = result.final_report.split("## 食い違う数値")[1].split("## 調査方法")[0]
    numbered = _source_numbers(result.final_report)
    urls = {side["url"] for side in conflict["sides"]}
    matches = [
        d
        for d in result.disputed
        if d.type == conflict["type"]
        and d.statement2.key == PLANTED_KEYS[conflict["id"]]
        and {d.statement1.source, d.statement2.source} <= urls | _copies(urls)
    ]
    assert matches, conflict["id"]
    for d in matches:
        for statement in (d.statement1, d.statement2):
            assert statement.value in disputed_section and f"[{numbered[statement.source]}]" in disputed_section


def test_every_planted_contradiction_is_disputed_with_both_sources(ray_result: tuple[Result, ListSink]) -> None:
    result, _ = ray_result
    planted = yaml.safe_load((CORPUS / "planted.yaml").read_text(encoding="utf-8"))["conflicts"]
    for conflict in planted:
        if conflict["id"] != NEVER_READ:
            _check_planted(result, conflict)


@pytest.mark.xfail(
    strict=True,
    reason="the community blog stating 約6割 ranks 16th-24th for every query the agents run, below what any "
    "agent reads in three iterations, so the page is never read: a retrieval gap (nlp conflict tests find the "
    "conflict once the page is read). Not read at bd61fd8 either, where this test matched any planted page pair.",
)
def test_the_blog_that_misremembers_the_rate_is_read(ray_result: tuple[Result, ListSink]) -> None:
    result, _ = ray_result
    planted = yaml.safe_load((CORPUS / "planted.yaml").read_text(encoding="utf-8"))["conflicts"]
    _check_planted(result, next(c for c in planted if c["id"] == NEVER_READ))


def test_every_citation_passes_verification(ray_result: tuple[Result, ListSink]) -> None:
    result, _ = ray_result
    check = result.citation_check
    assert check.checked > 0 and check.passed == check.checked and check.dropped == []
    texts = {s.url for s in result.sources}
    for claim in result.claims:
        assert claim.supporting and {c.url for c in claim.supporting} <= texts
        assert 0 <= claim.confidence <= 1 and claim.confidence_arithmetic
    assert result.executive_summary.text.strip() in result.final_report


def test_result_has_the_spec_shape(ray_result: tuple[Result, ListSink]) -> None:
    result, _ = ray_result
    data = json.loads(result.model_dump_json(by_alias=True))
    assert {"finalReport", "iterations", "totalDurationMs", "totalAgentRuns", "finalScore", "metadata"} <= set(data)
    config = data["metadata"]["config"]
    assert {"topic", "agentCount", "iterationCount", "agentTimeoutMs", "conflictThreshold", "searchConfig"} <= set(
        config
    ) and set(config["searchConfig"]) == {"provider", "maxResultsPerAgent"}
    it = data["iterations"][0]
    assert {"iteration", "agentReports", "scores", "consensusReport", "selectionReason", "durationMs"} <= set(it)
    assert {"agentId", "reportId", "content", "sources", "strategy", "generatedAt", "durationMs"} <= set(
        it["agentReports"][0]
    )
    assert {"url", "title", "fetchedAt", "reliabilityScore"} <= set(data["sources"][0])
    assert all(0 <= src["reliabilityScore"] <= 1 for r in it["agentReports"] for src in r["sources"])
    assert {
        "reportId",
        "consistencyScore",
        "sourceReliabilityScore",
        "coverageScore",
        "overallScore",
        "conflicts",
        "unverifiedCount",
    } <= set(data["finalScore"])
    assert {"conflictId", "type", "statement1", "statement2", "severity", "confidence", "resolution"} <= set(
        data["disputed"][0]
    )
    for section in (
        "## 要約",
        "## 反復ごとの主な発見",
        "## 主張・確信度・出典",
        "## 食い違う数値",
        "## 調査方法",
        "## 出典",
    ):
        assert section in result.final_report
    from core.messages import catalogue, leaks

    assert leaks(result.final_report.split("## 要約")[0], catalogue("research")) == []  # the title block


def test_report_lists_japanese_entities(ray_result: tuple[Result, ListSink]) -> None:
    result, _ = ray_result
    ja = [e for e in result.entities if e.lang == "ja"]
    assert len(ja) >= 10 and {"DATE", "PERCENT"} <= {e.label for e in ja}


def test_no_url_fetched_or_analysed_twice(ray_result: tuple[Result, ListSink]) -> None:
    result, _ = ray_result
    stats = result.collection
    assert stats is not None
    assert stats.urls_requested > stats.unique_urls  # agents overlapped ...
    assert stats.urls_fetched_more_than_once == 0 and stats.contents_analysed_more_than_once == 0  # ... yet
    assert stats.fetches == stats.unique_urls and stats.page_cache_hits == 0  # a fresh data directory
    assert stats.analyses + stats.analysis_cache_hits <= stats.unique_urls
    assert "urlsFetchedMoreThanOnce" in result.model_dump_json(by_alias=True)


def test_agents_differ_in_strategy(ray_result: tuple[Result, ListSink]) -> None:
    result, _ = ray_result
    reports = result.iterations[0].agent_reports
    queries = [tuple(r.queries) for r in reports]
    assert len(set(queries)) == 3
    preferred = {r.agent_id: r.strategy.preferred_sources for r in reports}
    assert preferred[1] == ["official"] and preferred[2] == ["news"]


def test_events_flow_from_actors_to_driver(ray_result: tuple[Result, ListSink]) -> None:
    _, events = ray_result
    kinds = [e.type for e in events.events]
    assert kinds[0] == "researchStarted" and kinds[-1] == "researchCompleted"
    assert sum(isinstance(e, AgentStarted) for e in events.events) == 9
    assert sum(isinstance(e, AgentCompleted) and e.success for e in events.events) == 9
    for kind in ("iterationStarted", "scoringCompleted", "consensusSelected", "iterationCompleted"):
        assert kinds.count(kind) == 3, kind
    progress = [e.progress for e in events.events if e.progress is not None]
    assert progress == sorted(progress) and progress[-1] == 100
    stages = {(e.agent_id, e.stage) for e in events.events if isinstance(e, StageProgress)}
    assert {(a, s) for a in (1, 2, 3) for s in ("search", "fetch", "entities", "report")} <= stages
    assert isinstance(events.events[-1], ResearchCompleted)


def test_outputs_written_atomically(ray_result: tuple[Result, ListSink], tmp_path: Path) -> None:
    result, _ = ray_result
    md, js = write_outputs(result, tmp_path / "out")
    again = Result.model_validate_json(js.read_text(encoding="utf-8"))
    assert again.run_id == result.run_id and md.read_text(encoding="utf-8") == result.final_report
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert names == ["charts", "report.json", "report.md", "transparency.json", "transparency.md"]
    # the bundled corpus states figures for several survey rounds: their series are drawn and linked
    assert result.charts and sorted(p.name for p in (tmp_path / "out" / "charts").iterdir()) == sorted(
        c.file for c in result.charts
    )
    assert all(f"(charts/{c.file})" in result.final_report for c in result.charts)
    transparency = json.loads((tmp_path / "out" / "transparency.json").read_text(encoding="utf-8"))
    assert len(transparency["iterations"]) == 3 and transparency["conflictResolutions"]
    assert all(s["arithmetic"].startswith("consistency") for it in transparency["iterations"] for s in it["scores"])
    assert all(a["decisions"] for it in transparency["iterations"] for a in it["agents"])
    second = transparency["iterations"][1]["agents"]
    assert any("前の反復で読んだ結果" in d for a in second for d in a["decisions"])  # a Japanese topic


async def test_all_agents_timing_out_is_a_typed_error(ray_cluster: None) -> None:
    settings = load_settings(overrides={"research": {"agent_timeout_s": 0.01, "agents": 2, "iterations": 1}})
    runtime = RayRuntime()
    try:
        with pytest.raises(ResearchError, match=r"2 of 2 agents failed twice.*timed out"):
            await run_research(TOPIC, settings, runtime, ListSink())
    finally:
        await runtime.close()


def test_standalone_python_api_uses_the_spec_option_names(ray_cluster: None, tmp_path: Path) -> None:
    from core.errors import ConfigError
    from research.api import research

    with pytest.raises(ConfigError, match=r"research\.iterations from argument 'iteration_count'"):
        research(TOPIC, iteration_count=0)
    result = research(TOPIC, agent_count=2, iteration_count=1, agent_timeout_ms=120_000, conflict_threshold=0.2)
    config = result.metadata.config
    assert (config.agent_count, config.iteration_count, config.agent_timeout_ms, config.conflict_threshold) == (
        2,
        1,
        120_000,
        0.2,
    )
    assert len(result.iterations) == 1 and result.claims


def _level(figure: str) -> Any:
    return next(v for v in parse_values(figure) if v.value is not None and v.kind != "date")


def _rounded(figure: str) -> bool:
    v = _level(figure)
    return v.approx or v.lower is not None or v.upper is not None


def test_every_chart_point_is_the_figure_the_report_states(ray_result: tuple[Result, ListSink]) -> None:
    """The charts agree with report.md: each point is a figure the report states for that series and
    period (a claim or a side of a dispute printed in it), the preferred side where the report lists a
    dispute, never a rounded paraphrase where the report states a precise figure, the figure the summary
    answers with; and the report lists the plotted figures under each chart."""
    result, _ = ray_result
    report = result.final_report
    assert result.charts
    answer = next(c for c in result.claims if c.claim_id == result.executive_summary.claims_used[0])
    for chart in result.charts:
        listed = report.split(f"(charts/{chart.file})", 1)[1].split("\n\n", 2)[1]
        for point in chart.points:
            key = f"{chart.key}@{point.period}"
            assert f"{point.period} {point.figure}" in listed, (key, listed)
            claims = [c for c in result.claims if c.key == key and c.text in report]
            sides = [s for d in result.disputed for s in (d.statement1, d.statement2) if s.key == key]
            stated = [f for c in claims for f in c.values] + [s.value for s in sides if s.text in report]
            assert point.figure in stated, (key, point.figure, stated)
            for d in result.disputed:
                if d.statement2.key == key and d.type != "outdated":
                    assert point.figure == d.preferred.value, (key, point.figure, d.preferred.value)
            if any(not _rounded(f) for f in stated if _level(f).kind == _level(point.figure).kind):
                assert not _rounded(point.figure), (key, point.figure, stated)
            if answer.key == key:
                assert point.figure in result.executive_summary.text, (key, point.figure)
    headline = next(c for c in result.charts if c.key == "sme/pass_through_rate")
    assert [(p.period, p.figure) for p in headline.points][-1] == ("2025-03", "52.4%")
    trucking = next(c for c in result.charts if c.key == "trucking/pass_through_rate")
    assert ("2024-09", "34.2%") in [(p.period, p.figure) for p in trucking.points]


def test_one_dispute_per_disagreeing_source_and_no_outdated_supporting_fact(
    ray_result: tuple[Result, ListSink],
) -> None:
    """Syndicated copies are one source: a dispute is listed once per origin, however many copies were
    read; a figure the report calls outdated (and what its paragraph builds on it) is no summary fact."""
    result, _ = ray_result
    origin = {s.url: s.duplicate_of or s.url for s in result.sources}
    manifest = yaml.safe_load((CORPUS / "manifest.yaml").read_text(encoding="utf-8"))
    for page in manifest["pages"]:
        if page.get("duplicate_of") in origin and page["url"] in origin:
            assert origin[page["url"]] == page["duplicate_of"], page["url"]  # found by the text
    sides = [(d.statement2.key, origin.get(d.statement2.source, d.statement2.source)) for d in result.disputed]
    assert len(sides) == len(set(sides)), sides
    stale = {d.statement2.text for d in result.disputed if d.type == "outdated"}
    assert {c.claim_id for c in result.claims if c.text in stale} <= set(result.superseded)
    assert result.superseded and not set(result.superseded) & set(result.executive_summary.claims_used)


def test_the_reports_speak_japanese(ray_result: tuple[Result, ListSink], tmp_path: Path) -> None:
    """report.md and transparency.md say everything in their own words in Japanese: no English label,
    no claim key, no report id (only the sources' own sentences, titles and addresses are quoted)."""
    result, _ = ray_result
    write_outputs(result, tmp_path)
    ids = [result.run_id, *(r.report_id for it in result.iterations for r in it.agent_reports)]
    for name in ("report.md", "transparency.md"):
        text = (tmp_path / name).read_text(encoding="utf-8")
        assert foreign_words(text, result, catalogue("research")) == [], name
        assert not any(i in text for i in ids), name
