"""Research boundary models: agents return them, the engine, scoring and reports read them.

Field names are Python snake_case; ``by_alias`` dumps give the camelCase names the KATASHIRO
spec uses (``agentId``, ``reportId``, ``fetchedAt`` ...).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from actors.collection import SourceFailure
from core.llm.cost import UsageSummary
from core.models import CamelModel

SourceType = Literal["official", "news", "academic", "community"]


class AgentStrategy(CamelModel):
    agent_id: int = Field(ge=1)
    focus: str = ""
    query_modifiers: list[str] = Field(default_factory=list)
    preferred_sources: list[SourceType] = Field(default_factory=list)
    time_range: Literal["day", "week", "month", "year", "all"] = "all"
    cross_language: bool = False  # also search in the other language from iteration 1 (nlp/glossary.py)
    # how the agent turns the question into searches and passages (research/retrieval.py)
    reading: Literal["depth", "keywords", "feedback"] = "depth"


class AgentBrief(CamelModel):
    """What an agent is asked to look for in one iteration (the engine derives it from IterationContext)."""

    iteration: int = Field(1, ge=1)
    focus_queries: list[str] = Field(default_factory=list)  # gaps and disputed figures to search for
    covered_sources: list[str] = Field(default_factory=list)  # read in earlier iterations: ranked last
    known_findings: list[str] = Field(default_factory=list)  # the previous consensus: new findings rank first


class AgentSnapshot(CamelModel):
    """How far an agent got: what a timed-out or killed agent leaves for debugging."""

    agent_id: int
    iteration: int
    stage: str = "starting"
    stage_done: int = 0
    stage_total: int = 0
    elapsed_ms: int = 0
    queries: list[str] = Field(default_factory=list)
    urls: list[str] = Field(default_factory=list)  # search results it chose


class SourceReference(CamelModel):
    url: str
    title: str
    fetched_at: datetime
    reliability_score: float | None = Field(None, ge=0, le=1)
    source_type: str | None = None
    published: str | None = None
    lang: str | None = None
    duplicate_of: str | None = None  # a near-copy of this earlier source: one origin, not two


class EntityMention(CamelModel):
    text: str
    label: str
    lang: str
    count: int
    sources: list[str]


class Finding(CamelModel):
    """A sentence that carries a fact (a number, date or named entity), with where it came from."""

    text: str
    source: str
    entities: list[str] = Field(default_factory=list)
    score: float = 0.0
    key: str | None = None  # the claim's subject/attribute@period, e.g. sme/pass_through_rate@2024-09
    values: list[str] = Field(default_factory=list)  # its figures as written
    context: str | None = None  # the subject its document gives it: heading › lead-in › antecedent


class AgentReport(CamelModel):
    agent_id: int
    report_id: str
    content: str
    sources: list[SourceReference]
    strategy: AgentStrategy
    generated_at: datetime
    duration_ms: int
    queries: list[str] = Field(default_factory=list)
    findings: list[Finding] = Field(default_factory=list)
    entities: list[EntityMention] = Field(default_factory=list)
    failures: list[SourceFailure] = Field(default_factory=list)
    decisions: list[str] = Field(default_factory=list)  # what the agent chose and why (transparency report)
    llm_usage: UsageSummary | None = None  # the agent's own LLM calls (None: no LLM configured)
    quotes_dropped: int = 0  # LLM notes whose quote or figure was not found verbatim in the page


__all__ = [
    "AgentBrief",
    "AgentReport",
    "AgentSnapshot",
    "AgentStrategy",
    "EntityMention",
    "Finding",
    "SourceReference",
    "SourceType",
]
