"""The research result (``report.json``), its Markdown report, and writing both atomically."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import Field

from actors.collector import CollectionStats
from core.files import atomic_write_text
from core.models import AgentReport, CamelModel, EntityMention, Finding, SourceReference


class AgentFailure(CamelModel):
    agent_id: int
    error: str
    error_type: str
    timed_out: bool = False


class ResearchResult(CamelModel):
    run_id: str
    topic: str
    started_at: datetime
    completed_at: datetime
    total_duration_ms: int
    total_agent_runs: int
    config: dict[str, Any]
    selected_agent_id: int
    selection_reason: str
    final_report: str
    sources: list[SourceReference]
    findings: list[Finding]
    entities: list[EntityMention]
    agent_reports: list[AgentReport]
    agent_failures: list[AgentFailure] = Field(default_factory=list)
    collection: CollectionStats | None = None

    @classmethod
    def build(cls, *, run_id: str, topic: str, config: dict[str, Any], started_at: datetime, duration_ms: int,
              selected: AgentReport, reason: str, reports: list[AgentReport],
              failures: list[AgentFailure], collection: CollectionStats | None = None) -> ResearchResult:
        result = cls(
            run_id=run_id, topic=topic, started_at=started_at, completed_at=datetime.now(UTC),
            total_duration_ms=duration_ms, total_agent_runs=len(reports) + len(failures), config=config,
            selected_agent_id=selected.agent_id, selection_reason=reason, final_report="",
            sources=selected.sources, findings=selected.findings, entities=selected.entities,
            agent_reports=reports, agent_failures=failures, collection=collection,
        )
        result.final_report = render_final_report(result)
        return result


def render_final_report(result: ResearchResult) -> str:
    """The kept agent report, framed by run metadata and a methodology note."""
    selected = next(r for r in result.agent_reports if r.agent_id == result.selected_agent_id)
    langs: dict[str, int] = defaultdict(int)
    for s in result.sources:
        langs[s.lang or "?"] += 1
    lines = [
        selected.content.rstrip(), "", "## Methodology", "",
        f"- Run `{result.run_id}`, {result.started_at:%Y-%m-%d %H:%M:%S} UTC, "
        f"{result.total_duration_ms / 1000:.1f} s.",
        f"- {result.total_agent_runs} independent agents searched, fetched, extracted and analysed in parallel; "
        f"{len(result.agent_failures)} failed.",
        f"- Kept report: {result.selection_reason}.",
        "- Sources by language: " + ", ".join(f"{k}: {v}" for k, v in sorted(langs.items())) + ".",
    ]
    if result.collection is not None:
        c = result.collection
        lines.append(
            f"- Collection: {c.unique_urls} distinct URLs for {c.urls_requested} requests; {c.fetches} fetches "
            f"({c.urls_fetched_more_than_once} URLs more than once), {c.page_cache_hits} from the page cache; "
            f"{c.analyses} analyses ({c.contents_analysed_more_than_once} contents more than once), "
            f"{c.analysis_cache_hits} from the analysis cache; {c.near_duplicates} near-duplicate pages."
        )
    for failure in result.agent_failures:
        lines.append(f"- Agent {failure.agent_id} failed ({failure.error_type}): {failure.error}")
    return "\n".join(lines) + "\n"


def write_outputs(result: ResearchResult, out_dir: Path) -> tuple[Path, Path]:
    """Write ``report.md`` and ``report.json``; each appears whole or not at all."""
    md = atomic_write_text(out_dir / "report.md", result.final_report)
    js = atomic_write_text(out_dir / "report.json", result.model_dump_json(by_alias=True, indent=2) + "\n")
    return md, js
