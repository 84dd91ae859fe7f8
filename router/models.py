"""The router's boundary models: the spec's RouteResult and its debug info, camelCase in JSON."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from core.models import CamelModel

Language = Literal["ja", "en"]
AgentName = Literal[
    "BusinessInfoAgent",
    "FacilityAgent",
    "EventAgent",
    "MemoryAgent",
    "GeneralKnowledgeAgent",
    "ClarificationAgent",
    "TimeAgent",
]
AGENT_NAMES: tuple[str, ...] = AgentName.__args__  # type: ignore[attr-defined]


class LanguageDetection(CamelModel):
    detected_language: Language
    confidence: float = Field(ge=0, le=1)
    is_mixed: bool
    failed: bool = False


RuleName = Literal[
    "memory",
    "time",
    "events",
    "ambiguous_cafe",
    "ambiguous_room",
    "question_word",
    "keywords",
    "follow_up",
    "follow_up_alone",
    "saino",
    "engineer_cafe",
    "membership",
    "purpose",
    "no_topic",
]


class Classification(CamelModel):
    """Why the router chose what it chose: the rule that decided (``rule``, a key whose words are in
    data/router/messages.yaml under ``why.``), the evidence it saw (``matched``: the words of the
    question, never a pattern), and ``reason``, the same in English for logs and developers."""

    rule: RuleName = "no_topic"
    reason: str
    matched: list[str] = Field(default_factory=list)

    @field_validator("matched")
    @classmethod
    def _as_words(cls, matched: list[str]) -> list[str]:
        """The words as a person reads them: a vocabulary prefix mark (``seat*``) dropped, each word once."""
        words = [w.rstrip("*").strip() for w in matched]
        return list(dict.fromkeys(w for w in words if w))

    subject: str | None = None
    inherited: bool = False
    fuzzy: bool = False
    abstained: bool = False
    memory_score: float = 0.0


class DebugInfo(CamelModel):
    language_detection: LanguageDetection
    classification: Classification


class RouteResult(CamelModel):
    agent: AgentName
    category: str
    request_type: str | None
    language: Language
    confidence: float = Field(ge=0, le=1)
    debug_info: DebugInfo


class RouteRequest(CamelModel):
    """One line of ``magi route --batch`` and the body of ``POST /router/route``."""

    query: str
    session_id: str


__all__ = [
    "AGENT_NAMES",
    "AgentName",
    "Classification",
    "DebugInfo",
    "Language",
    "LanguageDetection",
    "RouteRequest",
    "RouteResult",
]
