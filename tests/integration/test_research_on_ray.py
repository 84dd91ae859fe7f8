"""The research skeleton on a real local Ray cluster over the bundled corpus."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import ResearchError
from core.events import AgentCompleted, AgentStarted, ListSink, ResearchCompleted, StageProgress
from core.runtime import RayRuntime
from core.settings import load_settings
from research.engine import run_research
from research.result import ResearchResult, write_outputs

TOPIC = "中小企業の価格転嫁の現状"


@pytest.fixture(scope="module")
def ray_result(ray_cluster: None, tmp_path_factory: pytest.TempPathFactory) -> tuple[ResearchResult, ListSink]:
    # Module-scoped: runs before the per-test isolation, so the data directory is set explicitly.
    settings = load_settings(data_dir=tmp_path_factory.mktemp("data"))
    runtime = RayRuntime()
    events = ListSink()
    try:
        result = run_research(TOPIC, settings, runtime, events, run_id="itest")
    finally:
        runtime.close()
    return result, events


def test_three_agents_run_as_actors_and_one_report_is_kept(ray_result: tuple[ResearchResult, ListSink]) -> None:
    result, _ = ray_result
    assert result.total_agent_runs == 3 and result.agent_failures == []
    assert {r.agent_id for r in result.agent_reports} == {1, 2, 3}
    assert result.selected_agent_id in {1, 2, 3} and "distinct sources" in result.selection_reason
    assert len({s.url for s in result.sources}) >= 10
    assert all(s.url.startswith("https://") and ".example" in s.url for s in result.sources)


def test_report_cites_sources_and_lists_japanese_entities(ray_result: tuple[ResearchResult, ListSink]) -> None:
    result, _ = ray_result
    ja = [e for e in result.entities if e.lang == "ja"]
    assert len(ja) >= 10
    assert {"DATE", "PERCENT"} <= {e.label for e in ja}
    cited = {f.source for f in result.findings}
    assert cited <= {s.url for s in result.sources} and len(cited) >= 3
    for finding in result.findings:  # every finding is a sentence of its cited page's report
        assert finding.text in result.final_report
    assert "## Sources" in result.final_report and "## Methodology" in result.final_report


def test_no_url_fetched_or_analysed_twice(ray_result: tuple[ResearchResult, ListSink]) -> None:
    result, _ = ray_result
    stats = result.collection
    assert stats is not None
    assert stats.urls_requested > stats.unique_urls  # agents overlapped ...
    assert stats.urls_fetched_more_than_once == 0 and stats.contents_analysed_more_than_once == 0  # ... yet
    assert stats.fetches == stats.unique_urls and stats.page_cache_hits == 0  # a fresh data directory
    assert stats.analyses + stats.analysis_cache_hits <= stats.unique_urls
    assert "urlsFetchedMoreThanOnce" in result.model_dump_json(by_alias=True)


def test_agents_differ_in_strategy(ray_result: tuple[ResearchResult, ListSink]) -> None:
    result, _ = ray_result
    queries = [tuple(r.queries) for r in result.agent_reports]
    assert len(set(queries)) == 3
    preferred = {r.agent_id: r.strategy.preferred_sources for r in result.agent_reports}
    assert preferred[1] == ["official"] and preferred[2] == ["news"]


def test_events_flow_from_actors_to_driver(ray_result: tuple[ResearchResult, ListSink]) -> None:
    _, events = ray_result
    kinds = [e.type for e in events.events]
    assert kinds[0] == "researchStarted" and kinds[-1] == "researchCompleted"
    assert sum(isinstance(e, AgentStarted) for e in events.events) == 3
    assert sum(isinstance(e, AgentCompleted) and e.success for e in events.events) == 3
    stages = {(e.agent_id, e.stage) for e in events.events if isinstance(e, StageProgress)}
    assert {(a, s) for a in (1, 2, 3) for s in ("search", "fetch", "entities", "report")} <= stages
    assert isinstance(events.events[-1], ResearchCompleted)


def test_outputs_written_atomically(ray_result: tuple[ResearchResult, ListSink], tmp_path: Path) -> None:
    result, _ = ray_result
    md, js = write_outputs(result, tmp_path / "out")
    again = ResearchResult.model_validate_json(js.read_text(encoding="utf-8"))
    assert again.run_id == result.run_id and md.read_text(encoding="utf-8") == result.final_report
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["report.json", "report.md"]


def test_all_agents_timing_out_is_a_typed_error(ray_cluster: None) -> None:
    settings = load_settings(research_agent_timeout_s=0.01, research_agents=2)
    runtime = RayRuntime()
    try:
        with pytest.raises(ResearchError, match=r"all 2 research agents failed.*timed out"):
            run_research(TOPIC, settings, runtime, ListSink())
    finally:
        runtime.close()
