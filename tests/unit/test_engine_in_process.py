"""The research engine through the in-process runtime: the same coordination code, no Ray."""

from __future__ import annotations

import datetime as dt
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from cli.research import terminal_summary
from core.events import ListSink
from core.messages import catalogue, leaks
from core.runtime import InProcessRuntime
from core.settings import load_settings
from nlp.settings import NlpSettings
from research.engine import run_research, start_pool
from research.errors import ResearchError
from research.events import AgentCompleted, ConsensusSelected, ResearchCompleted
from research.report import render_final_report
from research.transparency import transparency_markdown
from tests.report_words import foreign_words

PAGE = """<html lang="ja"><head><meta charset="utf-8"><title>{title}</title></head><body><article>
<h1>{title}</h1><p>{body}</p></article></body></html>"""


def write_corpus(root: Path) -> Path:
    bodies = [
        "2024年9月の調査では、中小企業の価格転嫁率は49.7%となり、前回から3.2ポイント上昇した。",
        "労務費の価格転嫁率は44.7%にとどまり、原材料費の51.8%を下回った。",
        "トラック運送業の価格転嫁率は34.2%で、全業種の中で最も低かった。",
        "令和7年3月の調査では価格転嫁率が52.4%となり、初めて5割を超えた。",
    ]
    for i, body in enumerate(bodies):
        (root / f"page{i}.html").write_text(PAGE.format(title=f"価格転嫁の調査 {i}", body=body * 3), encoding="utf-8")
    return root


async def _run(
    tmp_path: Path, topic: str = "中小企業の価格転嫁率", llm: dict[str, Any] | None = None, **research: Any
) -> tuple[Any, ListSink]:
    settings = load_settings(
        overrides={
            "search": {"corpus_dir": write_corpus(tmp_path)},
            "nlp": {"workers": 1},
            "research": {"agents": 2, **research},
            "llm": llm or {},
        }
    )
    runtime = InProcessRuntime()
    events = ListSink()
    try:
        return await run_research(topic, settings, runtime, events), events
    finally:
        await runtime.close()


async def test_two_agents_two_iterations_in_process(tmp_path: Path) -> None:
    result, events = await _run(tmp_path, iterations=2)
    assert [it.iteration for it in result.iterations] == [1, 2] and result.stopped_early is None
    assert all({r.agent_id for r in it.agent_reports} == {1, 2} for it in result.iterations)
    first, second = result.iterations
    assert first.context.is_initial and first.context.previous_consensus is None
    assert not second.context.is_initial and second.context.previous_consensus == first.consensus_report
    # agents read their reading's share of the 4 pages found; iteration 2 is told what iteration 1 read
    assert second.context.covered_sources == sorted({s.url for r in first.agent_reports for s in r.sources})
    assert set(second.context.covered_sources) <= {s.url for s in result.sources}
    assert second.context.previous_score is not None
    assert len(result.sources) >= 3 and all(s.url.startswith("file://") for s in result.sources)
    assert all(s.reliability_score is not None for s in result.sources)
    assert any("49.7%" in c.text for c in result.claims)
    assert result.citation_check.checked > 0 and result.citation_check.passed == result.citation_check.checked
    summary = result.executive_summary
    assert summary.written_by == "extractive" and set(summary.claims_used) <= {c.claim_id for c in result.claims}
    assert result.collection is not None and result.collection.urls_fetched_more_than_once == 0
    # Agents searched the corpus through the collector: 2 agents x 2 iterations, several queries each,
    # plus the 4 pages read once; all in this process (no Ray: node "local").
    reads = result.collection.corpus_reads_by_node
    assert set(reads) == {"local"} and reads["local"] > 4 + 4 and result.collection.corpus_node == "local"
    assert result.total_agent_runs == 4
    assert sum(isinstance(e, AgentCompleted) and e.success for e in events.events) == 4
    kinds = [e.type for e in events.events if e.type != "stageProgress"]
    assert kinds[0] == "researchStarted" and kinds[-1] == "researchCompleted"
    assert kinds.count("iterationStarted") == kinds.count("consensusSelected") == kinds.count("iterationCompleted") == 2
    progress = [e.progress for e in events.events if e.progress is not None]
    assert progress == sorted(progress) and progress[-1] == 100
    done = events.events[-1]
    assert isinstance(done, ResearchCompleted) and (done.iterations, done.claims) == (2, len(result.claims))
    selected = [e for e in events.events if isinstance(e, ConsensusSelected)]
    assert [e.selected_agent_id for e in selected] == [it.selected_agent_id for it in result.iterations]
    _check_report_languages(result)


def _check_report_languages(result: Any) -> None:
    """Golden headings of report.md in the topic's language; no English label in the Japanese one."""
    report = result.final_report
    headings = [line for line in report.splitlines() if line.startswith("## ")]
    assert headings[:3] == ["## 要約", "## 反復ごとの主な発見", "## 主張・確信度・出典"]
    assert headings[-2:] == ["## 調査方法", "## 出典"]
    assert "### 反復1（採用した報告: エージェント" in report and "— 確信度 0." in report
    # Every word the report and its transparency report write themselves is Japanese: no English label,
    # no claim key, no report id (quotations of the sources and the topic are left aside).
    assert foreign_words(report, result, catalogue("research")) == []
    transparency = transparency_markdown(result)
    assert transparency.startswith("# 透明性レポート — ") and "## 反復1" in transparency
    assert foreign_words(transparency, result, catalogue("research")) == []
    ids = [result.run_id, *(r.report_id for it in result.iterations for r in it.agent_reports)]
    assert not any(i in text for i in ids for text in (report, transparency))
    # The terminal summary of `magi research`: Japanese, no report or run id, the scores and counts.
    terminal = terminal_summary(result, Path("out/report.md"), Path("out/result.json"))
    assert terminal.startswith("# 調査: ") and "- 報告書: out/report.md" in terminal
    assert f"引用の検証: {result.citation_check.checked}件中{result.citation_check.passed}件が一致" in terminal
    assert "最終スコア 0." in terminal and result.run_id not in terminal
    assert all(r.report_id not in terminal for it in result.iterations for r in it.agent_reports)
    prose = re.sub(r"out/\S+", "", terminal.replace(result.metadata.topic, ""))  # the topic and paths are the user's
    assert leaks(prose, catalogue("research")) == []
    english = result.model_copy(update={"metadata": result.metadata.model_copy(update={"topic": "SME pass-through"})})
    text = render_final_report(english)
    assert [line for line in text.splitlines() if line.startswith("## ")][:3] == [
        "## Executive summary",
        "## Key findings by iteration",
        "## Claims, confidence and sources",
    ]


async def test_hostile_corpus_files_are_left_out_and_counted_in_the_collection_block(tmp_path: Path) -> None:
    """A FIFO, a link to /etc/passwd and an ELF renamed .txt sit among the pages: the run completes,
    none of them is a source, and the collection block says what was skipped."""
    os.mkfifo(tmp_path / "pipe.txt")
    (tmp_path / "passwd.txt").symlink_to("/etc/passwd")
    shutil.copyfile(shutil.which("true") or "/bin/true", tmp_path / "tool.txt")
    result, _ = await _run(tmp_path, topic="中小企業の価格転嫁率", iterations=1)
    assert result.collection is not None
    assert result.collection.corpus_skipped == {"not_regular": 1, "outside_root": 1, "binary": 1}
    assert {Path(s.url).name for s in result.sources} <= {f"page{i}.html" for i in range(4)}
    assert "root:x:0:0" not in result.model_dump_json()


async def test_early_termination_fires_when_consistency_stops_improving(tmp_path: Path) -> None:
    """The tiny corpus gives the same consistency every iteration: two flat steps end the run after 3 of 5."""
    result, _ = await _run(tmp_path, iterations=5)
    assert len(result.iterations) == 3
    assert result.stopped_early and "5%未満" in result.stopped_early  # a Japanese topic: Japanese words
    assert "- 早期終了: " in result.final_report  # a Japanese topic: a Japanese report


async def test_timeouts_retry_once_then_fail_with_the_partial_results(tmp_path: Path) -> None:
    with pytest.raises(ResearchError, match="2 of 2 agents failed twice") as caught:
        await _run(tmp_path, agent_timeout_s=0.001)
    partial = caught.value.partial
    assert partial is not None and partial["iterations"] == []
    attempts = partial["failedAttempts"]
    assert len(attempts) == 2 and all(len(a["failures"]) == 2 for a in attempts)
    failure = attempts[0]["failures"][0]
    assert failure["timedOut"] and "timed out after 0.001 s in stage" in failure["error"]


async def test_llm_summary_keeps_supported_sentences_and_drops_invented_ones(tmp_path: Path) -> None:
    writer = Path(__file__).resolve().parent / "providers" / "summary_writer.py"
    result, _ = await _run(tmp_path, iterations=1, llm={"provider": f"python:{writer}:write"})
    summary = result.executive_summary
    assert summary.written_by == "llm" and summary.sentences_kept == 1
    assert summary.sentences_removed == ["全体の99.9%が満足している。"]
    assert "99.9%" not in result.final_report and "裏付けのない1文を削除しました" in result.final_report
    usage = result.usage  # the summary's one call, metered; a python: provider has no price
    assert usage is not None and usage.calls == 1 and usage.cost_usd == "unknown"
    assert result.model_dump(by_alias=True)["usage"]["costUsd"] == "unknown"


async def test_a_kept_pool_serves_a_second_run_that_needs_no_analysis(tmp_path: Path) -> None:
    """As the Serve replica does: one NLP pool for two runs; the second finds every analysis cached."""
    from research.engine import start_pool

    settings = load_settings(
        overrides={"search": {"corpus_dir": write_corpus(tmp_path)}, "nlp": {"workers": 1}, "research": {"agents": 2}}
    )
    runtime = InProcessRuntime()
    try:
        pool = start_pool(runtime, NlpSettings.of(settings))
        first = await run_research("中小企業の価格転嫁率", settings, runtime, ListSink(), pool=pool, run_id="first")
        second = await run_research("中小企業の価格転嫁率", settings, runtime, ListSink(), pool=pool, run_id="second")
    finally:
        await runtime.close()
    assert first.collection is not None and first.collection.analyses > 0
    assert second.collection is not None and second.collection.analyses == 0
    # no new batch reached a worker (in process the pool's counters are shared by both runs' collectors)
    assert second.collection.nlp_usage_by_node == first.collection.nlp_usage_by_node
    assert len(pool.workers) == 1  # left running for the caller


ARTICLE = (
    "Trucking operators passed on just 21.3% of their cost increases in the September 2024 survey round, "
    "according to the survey centre. Fuel and wages rose faster than freight rates, the operators said, and "
    "many shippers refused to renegotiate contracts signed before the price rises began in earnest."
)


async def test_a_copy_read_before_its_original_becomes_its_copy(tmp_path: Path) -> None:
    """A syndicated copy collected first looks like an original when it is read; once its earlier
    original is read, the run counts the two as one source (found by their text, not their URLs)."""
    from actors.collector import Collector
    from research.engine import _Run
    from research.models import AgentReport, AgentStrategy, SourceReference

    copy = ARTICLE.replace("the operators said", "operators told the wire")
    page = '<html lang="en"><head><meta name="date" content="{date}"><title>{t}</title></head><body><article>'
    page += "<h1>{t}</h1><p>{body}</p></article></body></html>"
    (tmp_path / "copy.html").write_text(page.format(date="2025-01-29", t="[Syndicated] Truckers", body=copy))
    (tmp_path / "original.html").write_text(page.format(date="2025-01-28", t="Truckers", body=ARTICLE))
    settings = load_settings(overrides={"search": {"corpus_dir": tmp_path}, "nlp": {"workers": 1}})
    runtime = InProcessRuntime()
    run = _Run("trucking pass-through", settings, runtime, ListSink(), "copies")
    pool = start_pool(runtime, NlpSettings.of(settings))
    run.collector = runtime.spawn(Collector, settings, pool)

    def cited(name: str) -> AgentReport:
        url = (tmp_path / name).resolve().as_uri()
        now = dt.datetime.now(dt.UTC)
        source = SourceReference(url=url, title=name, fetched_at=now)
        return AgentReport(
            agent_id=1, report_id=name, content="", sources=[source], strategy=AgentStrategy(agent_id=1),
            generated_at=now, duration_ms=0,
        )  # fmt: skip

    try:
        for name in ("copy.html", "original.html"):  # the copy arrives first
            await run.collector.call(Collector.collect, [cited(name).sources[0].url])
            await run._read_documents([cited(name)])
        original, duplicate = (cited(n).sources[0].url for n in ("original.html", "copy.html"))
        assert run.documents[duplicate].source.duplicate_of == original
        assert run.documents[original].source.duplicate_of is None
    finally:
        await runtime.close()


MANUAL = """<html lang="en"><head><meta charset="utf-8"><title>{title}</title></head><body><article>
<h1>{title}</h1>{body}</article></body></html>"""
MANUAL_PAGES = {
    "vacuum.html": (
        "Background cleaning in ExampleDB",
        "<p>ExampleDB runs a background cleaner, the autovacuum worker, that reclaims space left by "
        "updated rows.</p><dl><dt>autovacuum_naptime (integer)</dt><dd>Sets how long the cleaner sleeps "
        "between two rounds over one database. The default is 60 seconds.</dd>"
        "<dt>autovacuum_vacuum_threshold (integer)</dt><dd>Sets how many changed rows a table needs before "
        "it is cleaned. The default is 50 rows.</dd></dl>",
    ),
    "freeze.html": (
        "Freezing old rows in ExampleDB",
        "<dl><dt>vacuum_freeze_table_age (integer)</dt><dd>Sets the age at which a whole-table scan is "
        "forced. The default is 150 million transactions.</dd></dl>",
    ),
}


async def _manual_run(tmp_path: Path) -> Any:
    for name, (title, body) in MANUAL_PAGES.items():
        (tmp_path / name).write_text(MANUAL.format(title=title, body=body), encoding="utf-8")
    settings = load_settings(
        overrides={
            "search": {"corpus_dir": tmp_path},
            "nlp": {"workers": 1},
            "research": {"agents": 1, "iterations": 1},
        }
    )
    runtime = InProcessRuntime()
    try:
        return await run_research("ExampleDB の autovacuum の既定値は？", settings, runtime, ListSink())
    finally:
        await runtime.close()


async def test_a_japanese_question_on_an_english_manual_gets_japanese_labels(tmp_path: Path) -> None:
    """A question in Japanese about an English manual: the report is Japanese; every label the report
    writes (outside its summary, see the next test) and the transparency report's are Japanese, whatever
    the language of the pages quoted; two parameters' defaults are no dispute."""
    result = await _manual_run(tmp_path)
    report = result.final_report
    assert report.startswith("# ExampleDB の autovacuum の既定値は？\n\n## 要約")
    after_summary = report.split("## 反復ごとの主な発見", 1)[1]
    assert foreign_words(after_summary, result, catalogue("research")) == []
    assert foreign_words(transparency_markdown(result), result, catalogue("research")) == []
    assert result.disputed == []  # 60 seconds, 50 rows, 150 million transactions: three parameters


async def test_the_summary_of_a_japanese_report_has_japanese_labels(tmp_path: Path) -> None:
    result = await _manual_run(tmp_path)
    summary = result.final_report.split("## 反復ごとの主な発見", 1)[0]
    assert foreign_words(summary, result, catalogue("research")) == []
