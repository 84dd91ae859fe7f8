"""The result of a consensus research run, in the spec's ``ConsensusResearchResult`` shape.

``model_dump(by_alias=True)`` gives the spec's camelCase names (finalReport, iterations[].agentReports,
totalDurationMs, finalScore, metadata.config ...). Fields after ``metadata`` go beyond the spec: the
evidence behind every final claim, the disputed figures, the citation check, the executive summary.
Its files are written by research/outputs.py.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from actors.collection import CollectionStats
from core.llm.cost import UsageSummary
from core.models import CamelModel
from nlp.conflicts import Conflict
from research.charts import ChartRef
from research.evidence import CitationCheck, EvidencedClaim
from research.iteration import IterationContext
from research.models import AgentReport, AgentSnapshot, EntityMention, SourceReference
from research.result_labels import DisputeLabel
from research.scoring import ReportScore
from research.summary import ExecutiveSummary


class SearchConfig(CamelModel):
    provider: str
    max_results_per_agent: int


class ConsensusResearchConfig(CamelModel):
    """The spec's ConsensusResearchConfig as this run used it (the settings it came from are validated)."""

    topic: str
    agent_count: int
    iteration_count: int
    agent_timeout_ms: int
    conflict_threshold: float
    search_config: SearchConfig


class AgentFailure(CamelModel):
    agent_id: int
    iteration: int = 1
    attempt: int = 1
    error: str
    error_type: str
    timed_out: bool = False
    duration_ms: int = 0
    last_stage: str | None = None  # e.g. "fetch 5/12"
    partial: AgentSnapshot | None = None  # how far it got (timed-out agents)


class IterationResult(CamelModel):
    iteration: int
    agent_reports: list[AgentReport]
    scores: list[ReportScore]
    consensus_report: str
    selection_reason: str
    duration_ms: int
    selected_agent_id: int
    selected_report_id: str
    context: IterationContext
    agent_failures: list[AgentFailure] = Field(default_factory=list)
    retried: bool = False  # a majority of agents failed once and the iteration ran again
    flagged_for_review: bool = False  # every report's conflict rate was above conflictThreshold
    source_overlap: float = 0.0  # mean pairwise Jaccard overlap of the agents' source URLs

    @property
    def consensus(self) -> AgentReport:
        """The selected report."""
        return next(r for r in self.agent_reports if r.report_id == self.selected_report_id)

    @property
    def consensus_score(self) -> ReportScore:
        return next(s for s in self.scores if s.report_id == self.selected_report_id)


class ResultMetadata(CamelModel):
    topic: str
    started_at: datetime
    completed_at: datetime
    config: ConsensusResearchConfig


class ConsensusResearchResult(CamelModel):
    final_report: str
    iterations: list[IterationResult]
    total_duration_ms: int
    total_agent_runs: int
    final_score: ReportScore
    metadata: ResultMetadata
    run_id: str
    executive_summary: ExecutiveSummary
    claims: list[EvidencedClaim]  # verified claims: at least one citation passed
    # ids of claims that state or continue a figure shown to be outdated (research/superseded.py): listed
    # as such, never a supporting fact of the summary
    superseded: list[str] = Field(default_factory=list)
    disputed: list[Conflict]  # conflicts among every source read in the run, both sides
    dispute_labels: list[DisputeLabel] = Field(default_factory=list)  # the same, in the report's words
    citation_check: CitationCheck
    sources: list[SourceReference]  # every page read, with its reliability
    stopped_early: str | None = None  # why fewer iterations than configured ran
    collection: CollectionStats | None = None
    usage: UsageSummary | None = None  # LLM calls, tokens and cost of the run (None: no LLM configured)
    charts: list[ChartRef] = Field(default_factory=list)  # series drawn under charts/ (research/charts.py)
    warnings: list[str] = Field(default_factory=list)  # parts left out of this run's outputs, why, and the fix
    llm_quotes_dropped: int = 0  # agents' LLM notes dropped because their quote was not verbatim in the page

    @property
    def agent_failures(self) -> list[AgentFailure]:
        return [f for it in self.iterations for f in it.agent_failures]

    @property
    def entities(self) -> list[EntityMention]:
        """Entities of the last consensus report."""
        return self.iterations[-1].consensus.entities


def source_overlap(reports: list[AgentReport]) -> float:
    """Mean Jaccard overlap of source URLs over all pairs of reports (0: disjoint, 1: identical)."""
    sets = [{s.url for s in r.sources} for r in reports]
    pairs = [(a, b) for i, a in enumerate(sets) for b in sets[i + 1 :]]
    if not pairs:
        return 0.0
    return sum(len(a & b) / len(a | b) if a | b else 0.0 for a, b in pairs) / len(pairs)


__all__ = [
    "AgentFailure",
    "ConsensusResearchConfig",
    "ConsensusResearchResult",
    "IterationResult",
    "ResultMetadata",
    "SearchConfig",
    "source_overlap",
]
