"""The consensus research engine on a real local Ray cluster over the bundled corpus: 3 agents x 3 iterations."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import pytest_asyncio
import yaml

from core.events import ListSink
from core.runtime import RayRuntime
from core.settings import load_settings
from research.engine import run_research
from research.errors import ResearchError
from research.events import AgentCompleted, AgentStarted, ResearchCompleted, StageProgress
from research.outputs import write_outputs
from research.result import ConsensusResearchResult as Result

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
        assert it.selected_report_id in {s.report_id for s in it.scores} and "selected among 3" in it.selection_reason
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


def test_every_planted_contradiction_is_disputed_with_both_sources(ray_result: tuple[Result, ListSink]) -> None:
    result, _ = ray_result
    planted = yaml.safe_load((CORPUS / "planted.yaml").read_text(encoding="utf-8"))["conflicts"]
    disputed_section = result.final_report.split("## 食い違う数値")[1].split("## 調査方法")[0]
    numbered = _source_numbers(result.final_report)
    for conflict in planted:
        urls = {side["url"] for side in conflict["sides"]}
        matches = [
            d
            for d in result.disputed
            if d.type == conflict["type"] and {d.statement1.source, d.statement2.source} <= urls | _copies(urls)
        ]
        assert matches, conflict["id"]
        for d in matches:
            for statement in (d.statement1, d.statement2):
                assert statement.value in disputed_section and f"[{numbered[statement.source]}]" in disputed_section


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
    assert any("read in earlier iterations" in d for a in second for d in a["decisions"])


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
