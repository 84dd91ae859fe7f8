"""Iterative refinement (KATASHIRO WFL-004): what each iteration is told, and when to stop early.

After an iteration, the next one receives the consensus report, its score, the questions the sources
left open, the sources already read and the areas to deepen. Agents act on it (see
:class:`core.models.AgentBrief`): they search for each open question and area, and rank sources
already read after new ones.

* Unresolved questions: one per conflict among the consensus report's sources, plus each finding no
  second independent source confirmed (who / what / when), in the topic's language and named by the
  claim's labels (research/labels.py), for the transparency report.
* Areas to deepen: the topic's facets the consensus did not cover (their labels).
* Focus queries: the search terms of the open questions first (the disputed figure's subject, measure
  and period, as words that occur in pages), then the uncovered facets' labels. They are dealt out
  among the agents (:meth:`IterationContext.brief`), so the agents deepen different questions and
  their sources overlap less, while every question is searched by someone.

Early termination ("consistency improves by less than 5% over 2 consecutive iterations"): read as two
consecutive *improvements* — after iteration k (k >= 3) the run stops when both the step from k-2 to
k-1 and the step from k-1 to k improved the consensus consistency by less than 5% (relative:
``(c_k - c_{k-1}) / c_{k-1}``; from 0, any rise counts as an improvement). One flat step may be noise;
two in a row mean more iterations will not help. With the default of 3 iterations this can only
end the run at its natural end; it saves work from 4 iterations on.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

from pydantic import Field

from core.messages import Lang, catalogue
from core.models import CamelModel
from nlp.conflicts import Conflict
from research.labels import period_label, report_language, series_label
from research.models import AgentBrief, AgentReport
from research.scoring import ReportScore, covered_facets, facets_for, topic_terms

MIN_RELATIVE_GAIN = 0.05
FLAT_STEPS_TO_STOP = 2
MAX_QUESTIONS = 8


class IterationContext(CamelModel):
    """The spec's IterationContext, plus the focus queries agents actually run."""

    iteration: int = Field(ge=1)
    previous_consensus: str | None = None
    previous_score: ReportScore | None = None
    unresolved_questions: list[str] = Field(default_factory=list)
    covered_sources: list[str] = Field(default_factory=list)
    areas_to_deepen: list[str] = Field(default_factory=list)
    is_initial: bool = True
    focus_queries: list[str] = Field(default_factory=list)
    known_findings: list[str] = Field(default_factory=list)  # sentences the consensus so far already states

    def brief(self, agent_id: int = 1, agent_count: int = 1) -> AgentBrief:
        """Agent ``agent_id``'s share of the focus queries (every ``agent_count``-th, at least one): each
        question is still searched, and agents deepen different ones, which keeps their sources apart."""
        queries = self.focus_queries
        share = queries[agent_id - 1 :: agent_count] or queries[(agent_id - 1) % len(queries) :][:1] if queries else []
        return AgentBrief(
            iteration=self.iteration,
            focus_queries=share,
            covered_sources=self.covered_sources,
            known_findings=self.known_findings,
        )


def initial_context() -> IterationContext:
    return IterationContext(iteration=1)


def _words_of(key: str) -> str:
    """``sme/labour_cost_pass_through_rate@2024-09`` -> ``sme labour cost pass through rate 2024-09``: the
    search terms of a key (what was searched is shown as it was, in the transparency report)."""
    return key.replace("/", " ").replace("@", " ").replace("_", " ").replace("undated", "").strip()


def _when(period: str | None, lang: Lang) -> str:
    if not period or period == "undated":
        return ""
    return catalogue("research").text("question.when", lang, when=period_label(period, lang))


def _question(conflict: Conflict, lang: Lang) -> tuple[str, str]:
    """(question for people, in ``lang`` and named by labels, search terms for the search engine) for one conflict."""
    s1, s2 = conflict.statement1, conflict.statement2
    label = series_label(f"{conflict.subject}/{conflict.attribute}", lang)
    if conflict.type == "outdated":  # two periods: is the old figure superseded, not which is right
        question = catalogue("research").text(
            "question.outdated",
            lang,
            label=label,
            old=s2.value,
            old_when=period_label(s2.key.rsplit("@", 1)[-1], lang),
            old_source=s2.source,
            new=s1.value,
            new_when=period_label(s1.key.rsplit("@", 1)[-1], lang),
            new_source=s1.source,
        )
        return question, _search_terms(s2.text)
    question = catalogue("research").text(
        "question.disputed",
        lang,
        label=label,
        when=_when(conflict.when, lang),
        first=s1.value,
        first_source=s1.source,
        second=s2.value,
        second_source=s2.source,
    )
    return question, _search_terms(s2.text)


def _single(key: str, lang: Lang) -> str:
    """The question a figure only one source states asks, named by its labels."""
    series, _, period = key.partition("@")
    label = series_label(series, lang) if "/" in series else series
    return catalogue("research").text("question.single", lang, label=label, when=_when(period, lang))


def _search_terms(sentence: str, limit: int = 4) -> str:
    """The longest content terms of a sentence, in their order: what a page on the same point will contain."""
    terms = topic_terms(sentence)
    keep = set(sorted(terms, key=len, reverse=True)[:limit])
    return " ".join(t for t in terms if t in keep)


def next_context(
    topic: str,
    iteration: int,
    consensus: AgentReport,
    score: ReportScore,
    covered_sources: Sequence[str],
    single_source_findings: Sequence[str],
) -> IterationContext:
    """The context of ``iteration`` (>= 2), from the previous iteration's consensus and its score.

    ``single_source_findings``: claim keys of consensus findings no second origin confirmed.
    """
    lang = report_language(topic)
    questions: list[str] = []
    queries: list[str] = []
    for c in score.conflicts:
        if isinstance(c, Conflict):
            question, terms = _question(c, lang)
            questions.append(question)
            queries.append(terms)
    for key in single_source_findings:
        questions.append(_single(key, lang))
        queries.append(_words_of(key))
    facets = facets_for(topic)
    covered = set(covered_facets(consensus.findings, facets))
    areas = [f.label or f.name for f in facets if f.name not in covered]
    queries += areas
    return IterationContext(
        iteration=iteration,
        previous_consensus=consensus.content,
        previous_score=score,
        unresolved_questions=questions[:MAX_QUESTIONS],
        covered_sources=sorted(set(covered_sources)),
        areas_to_deepen=areas,
        is_initial=False,
        focus_queries=[q for q in dict.fromkeys(queries) if q][:MAX_QUESTIONS],
        known_findings=[f.text for f in consensus.findings],
    )


def relative_gain(before: float, after: float) -> float:
    if before <= 0:
        return float("inf") if after > 0 else 0.0
    return (after - before) / before


def should_stop_early(
    consistencies: Sequence[float], min_gain: float = MIN_RELATIVE_GAIN, flat_steps: int = FLAT_STEPS_TO_STOP
) -> bool:
    """True when the last ``flat_steps`` steps of consensus consistency each gained less than ``min_gain``."""
    if len(consistencies) < flat_steps + 1:
        return False
    recent = consistencies[-(flat_steps + 1) :]
    return all(relative_gain(a, b) < min_gain for a, b in pairwise(recent))


__all__ = [
    "FLAT_STEPS_TO_STOP",
    "MAX_QUESTIONS",
    "MIN_RELATIVE_GAIN",
    "IterationContext",
    "initial_context",
    "next_context",
    "relative_gain",
    "should_stop_early",
]
