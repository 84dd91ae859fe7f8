"""Settings section ``advisor:`` (mode detection, context compression, sessions, files, knowledge base).

The fields marked :class:`~core.options.Option` are the per-turn options of ``magi advisor``,
``POST /advisor/chat`` and ``Orchestrator.turn``, derived from :data:`ADVISOR_OPTIONS`.
"""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import Field

from core.options import Option, Options
from core.settings import AbsolutePath, Section
from sessions.models import SessionPolicy

# The LLM roles the advisor's turns use; the first also names the advisor's client (its own provider
# when llm.roles sets one, e.g. in data/llm/offline.yaml), and readiness checks each of them.
LLM_ROLES = ("advisor.orchestrator", "advisor.mode1", "advisor.mode2")


class AdvisorSettings(Section):
    name: ClassVar[str] = "advisor"

    mode_threshold: Annotated[float, Option("threshold", metavar="X")] = Field(
        0.7, ge=0, le=1, description="LLM classification confidence above which a keyword-less message is Mode 2."
    )
    classify_history: int = Field(5, ge=0, le=50, description="Recent history entries shown to the classifier.")
    compress_after: int = Field(
        24, ge=4, le=1000, description="History entries (user+assistant) above which older ones are summarised."
    )
    keep_recent: int = Field(8, ge=2, le=200, description="Newest entries kept verbatim when compressing.")
    max_tool_turns: int = Field(8, ge=1, le=32, description="Model calls of one Mode 2 turn (tool loop limit).")
    max_message_chars: int = Field(4000, ge=10, le=100_000, description="Longest user message accepted.")
    retention_h: float = Field(24.0, gt=0, description="Sessions and their files are removed after this many hours.")
    history_limit: int = Field(400, ge=10, le=10_000, description="History entries kept per session.")
    kb_dir: AbsolutePath | None = Field(
        None, description="Extra knowledge-base folder (magi kb ingest writes here; unset: <data_dir>/advisor/kb)."
    )
    kb_min_coverage: float = Field(
        0.2,
        ge=0,
        le=1,
        description="Share of a question's subject (its nouns, weighted by rarity) a knowledge-base passage must "
        "hold to be given as an answer; below it the advisor says the knowledge base has nothing on it.",
    )
    font: AbsolutePath | None = Field(
        None, description="Japanese TrueType font (.ttf) for charts and PDFs (unset: found among the installed fonts)."
    )
    tool_context_tokens: int = Field(
        6000, ge=200, le=200_000, description="Tokens of earlier tool results (latest per tool) shown to Mode 2."
    )
    web_results: int = Field(5, ge=1, le=20, description="Results Mode 1 asks the search providers for.")
    replicas: int = Field(1, ge=1, le=64, description="Serve replicas of the advisor app (zero CPUs each).")
    scripted_latency_s: float = Field(
        0.0, ge=0, le=60, description="Delay per call of the shipped scripted model (benchmarks; 0: none)."
    )

    def session_policy(self) -> SessionPolicy:
        """Advisor sessions live ``retention_h`` hours after their last message (the spec: 24 h)."""
        return SessionPolicy(ttl_s=self.retention_h * 3600.0, history_limit=self.history_limit)


ADVISOR_OPTIONS = Options(AdvisorSettings)


__all__ = ["ADVISOR_OPTIONS", "LLM_ROLES", "AdvisorSettings"]
