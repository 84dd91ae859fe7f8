"""LLM-backed reading for research agents: planning, notes as structured claims, report writing.

Used by :class:`research.agent.ResearchAgent` when an LLM is configured (``core/llm`` only:
``make_llm(settings, role=AGENT_ROLE, meter=...)``); without one the offline pipeline runs alone.

* Planning: the model breaks the question into sub-questions (:class:`ResearchPlan`), searched next
  to the offline ones.
* Reading: the model sees, per page, the passages most relevant to the question and writes notes
  (:class:`Note`: quote + figure + subject + page). Every quote must be found verbatim in its page's
  text (after width folding and whitespace squashing) and its figure inside the quote, or the note is
  dropped and counted: the model cannot put words in a page's mouth. Kept notes become findings, so the
  run's citation check verifies them again like any other finding.
* Writing: the model writes the agent's report from the kept notes, citing sources by number; a report
  that cites a number no source has is discarded for the rendered offline one.

Failures of the model (errors, invalid output after the one repair ``generate`` allows) never fail the
agent: that step falls back to the offline result and the reason goes into the agent's decisions.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache

from pydantic import BaseModel, Field

from core.errors import MagiError, first_line
from core.llm.base import LLMClient, Message, generate
from core.llm.cost import UsageSummary
from core.llm.fencing import fence
from core.messages import Lang, catalogue, language_of
from core.resources import data_path
from nlp.values import fold

AGENT_ROLE = "research.agent"  # LLM role of agent planning, reading and writing (llm.models / llm.params)
PROMPTS = {
    "plan": data_path("prompts", "research_agent_plan.md"),
    "notes": data_path("prompts", "research_agent_notes.md"),
    "report": data_path("prompts", "research_agent_report.md"),
}
MAX_SUB_QUESTIONS, MAX_NOTES = 4, 8
_SPACE = re.compile(r"\s+")
_CITATION = re.compile(r"\[(\d+)\]")


class ResearchPlan(BaseModel):
    sub_questions: list[str] = Field(default_factory=list, max_length=MAX_SUB_QUESTIONS)


class Note(BaseModel):
    quote: str = Field(min_length=1)
    figure: str | None = None
    subject: str | None = None
    page: int = Field(ge=1)


class ReadingNotes(BaseModel):
    notes: list[Note] = Field(default_factory=list)


class AgentReportText(BaseModel):
    report: str = Field(min_length=1)


@dataclass(frozen=True)
class PageForReading:
    url: str
    title: str
    text: str
    passages: list[str]


@dataclass
class VerifiedNotes:
    kept: list[tuple[Note, str]] = field(default_factory=list)  # (note, its page's url)
    dropped: int = 0
    reasons: list[str] = field(default_factory=list)


@cache
def prompt(name: str) -> str:
    return PROMPTS[name].read_text(encoding="utf-8").strip()


def squash(text: str) -> str:
    """Width-folded text without whitespace: how quotes are compared with page text."""
    return _SPACE.sub("", fold(text))


async def plan(llm: LLMClient, question: str, reading: str) -> list[str]:
    """Sub-questions the model proposes for ``question`` (at most :data:`MAX_SUB_QUESTIONS`)."""
    out = await generate(
        llm,
        system=prompt("plan"),
        messages=[Message(role="user", content=f"{_question(question)}\nAngle: {reading}")],
        output_type=ResearchPlan,
        max_tokens=400,
        role=AGENT_ROLE,
    )
    assert out.parsed is not None
    return [q.strip() for q in out.parsed.sub_questions if q.strip()][:MAX_SUB_QUESTIONS]


def _question(question: str) -> str:
    """The user's question, fenced as data, and the language the answer's texts are written in."""
    language = "Japanese" if language_of(question) == "ja" else "English"
    return f"Language: {language}\nQuestion:\n{fence(question, 'QUESTION')}"


def _pages_message(question: str, pages: Sequence[PageForReading]) -> str:
    lines = []
    for n, page in enumerate(pages, start=1):
        lines.append(f"## Page {n}: {page.title}")
        lines += [f"- {p}" for p in page.passages]
        lines.append("")
    return f"{_question(question)}\n\n{fence(chr(10).join(lines).rstrip(), 'PAGES')}"


def verify_notes(notes: Sequence[Note], pages: Sequence[PageForReading]) -> VerifiedNotes:
    """Keep the notes whose quote is in their page verbatim and whose figure is in the quote."""
    result = VerifiedNotes()
    squashed = [squash(p.text) for p in pages]
    for note in notes[:MAX_NOTES]:
        reason = None
        if note.page > len(pages):
            reason = f"page {note.page} does not exist ({len(pages)} pages were given)"
        elif squash(note.quote) not in squashed[note.page - 1]:
            reason = f"quote not found verbatim in page {note.page}: {note.quote[:60]!r}"
        elif note.figure and squash(note.figure) not in squash(note.quote):
            reason = f"figure {note.figure!r} is not in its quote"
        if reason:
            result.dropped += 1
            result.reasons.append(reason)
        else:
            result.kept.append((note, pages[note.page - 1].url))
    return result


async def read_notes(llm: LLMClient, question: str, pages: Sequence[PageForReading]) -> VerifiedNotes:
    """The model's notes on ``pages``, verified (see :func:`verify_notes`)."""
    out = await generate(
        llm,
        system=prompt("notes"),
        messages=[Message(role="user", content=_pages_message(question, pages))],
        output_type=ReadingNotes,
        max_tokens=1500,
        role=AGENT_ROLE,
    )
    assert out.parsed is not None
    return verify_notes(out.parsed.notes, pages)


async def write_report(llm: LLMClient, question: str, sources: Sequence[tuple[str, list[str]]]) -> str | None:
    """The agent's report in Markdown from ``(source title, kept quotes)``; None when it cites a missing source."""
    lines = []
    for n, (title, quotes) in enumerate(sources, start=1):
        lines.append(f"[{n}] {title}")
        lines += [f"- {q}" for q in quotes]
    content = f"{_question(question)}\n\n{fence(chr(10).join(lines), 'SOURCES')}"
    out = await generate(
        llm,
        system=prompt("report"),
        messages=[Message(role="user", content=content)],
        output_type=AgentReportText,
        max_tokens=1200,
        role=AGENT_ROLE,
    )
    assert out.parsed is not None
    cited = {int(n) for n in _CITATION.findall(out.parsed.report)}
    if not cited or any(n < 1 or n > len(sources) for n in cited):
        return None
    return out.parsed.report.strip() + "\n"


def combine_usage(summaries: Sequence[UsageSummary | None]) -> UsageSummary | None:
    """The sum of several runs' usage (agents in their own processes, the summary); None when all are None."""
    present = [u for u in summaries if u is not None]
    if not present:
        return None
    unknown = any(u.cost_usd == "unknown" for u in present)
    priced = sum(u.priced_cost_usd for u in present)
    return UsageSummary(
        calls=sum(u.calls for u in present),
        input_tokens=sum(u.input_tokens for u in present),
        output_tokens=sum(u.output_tokens for u in present),
        cache_creation_input_tokens=sum(u.cache_creation_input_tokens for u in present),
        cache_read_input_tokens=sum(u.cache_read_input_tokens for u in present),
        cost_usd="unknown" if unknown else round(priced, 6),
        priced_cost_usd=round(priced, 6),
        unpriced_models=sorted({m for u in present for m in u.unpriced_models}),
    )


def failure(step: str, exc: Exception, lang: Lang = "en") -> str:
    """The decision line of a failed LLM step (the agent goes on offline), in ``lang``; ``step`` is
    ``planning``, ``reading`` or ``report_writing``."""
    what = first_line(exc) if isinstance(exc, MagiError) else f"{type(exc).__name__}: {exc}"
    c = catalogue("research")
    return c.text("decision.llm_failed", lang, step=c.text(f"step.{step}", lang), error=what)


__all__ = [
    "AGENT_ROLE",
    "MAX_NOTES",
    "MAX_SUB_QUESTIONS",
    "AgentReportText",
    "Note",
    "PageForReading",
    "ReadingNotes",
    "ResearchPlan",
    "VerifiedNotes",
    "combine_usage",
    "failure",
    "plan",
    "prompt",
    "read_notes",
    "squash",
    "verify_notes",
    "write_report",
]
