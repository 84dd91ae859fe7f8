"""Claim-level evidence: which sources support or contradict each final claim, checked citations, confidence.

(Skeleton: models are fixed; functions are being implemented.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date

from pydantic import Field

from core.models import CamelModel, Finding, SourceReference
from nlp.claims import Claim
from nlp.conflicts import Conflict


class SourceDocument(CamelModel):
    """A page read during the run: its reference (type, date, duplicate_of), its extracted text, its claims."""

    source: SourceReference
    text: str
    claims: list[Claim] = Field(default_factory=list)


class Citation(CamelModel):
    """One source cited for or against a claim, after verification."""

    url: str
    title: str
    source_type: str | None = None
    reliability: float = Field(ge=0, le=1)
    origin: str  # the original page when this is a syndicated copy, else the url
    published: str | None = None
    statement: str  # the sentence of this source that states (or contradicts) the claim


class DroppedCitation(CamelModel):
    claim_id: str
    url: str
    reason: str  # e.g. "value 49.7% not in the page text"


class CitationCheck(CamelModel):
    checked: int = 0
    passed: int = 0
    dropped: list[DroppedCitation] = Field(default_factory=list)


class EvidencedClaim(CamelModel):
    """A final claim with its evidence; ``confidence`` follows the documented formula."""

    claim_id: str
    text: str
    source: str  # where the sentence was read
    key: str | None = None  # subject/attribute@period
    values: list[str] = Field(default_factory=list)  # figures as written
    entities: list[str] = Field(default_factory=list)
    iterations: list[int] = Field(default_factory=list)  # iterations whose consensus reported it
    supporting: list[Citation] = Field(default_factory=list)  # verified, one entry per source page
    contradicting: list[Citation] = Field(default_factory=list)
    independent_origins: int = 0  # supporting origins, near-duplicates counted once
    contradicting_origins: int = 0
    confidence: float = Field(0.0, ge=0, le=1)
    confidence_arithmetic: str = ""
    disputed: bool = False  # a detected conflict touches this claim's key and figure


def build_evidence(
    findings: Sequence[tuple[int, Finding]],
    documents: Mapping[str, SourceDocument],
    conflicts: Sequence[Conflict],
    *,
    today: date | None = None,
) -> tuple[list[EvidencedClaim], CitationCheck]:
    """Evidence for each (iteration, finding); see the module docstring."""
    raise NotImplementedError
