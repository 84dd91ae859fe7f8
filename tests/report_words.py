"""What a research report writes in its own words, for the checks that no English label (or internal key)
reaches a Japanese reader: everything the report quotes or was given is taken out first (source sentences
and headings, figures, page titles, URLs, the topic, the queries that were searched), and what is left
must be in the report's language."""

from __future__ import annotations

import re
from typing import Any

from core.messages import Catalogue, leaks
from nlp.conflicts import identifiers

_LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_.\-]*[A-Za-z0-9]|[A-Za-z]")
_URL = re.compile(r"(?:https?|file)://\S+?(?=[)>\s]|$)")
_CHART_FILE = re.compile(r"\]\(charts/[^)]+\)")  # a chart's file name: a path, not a word


def quoted(result: Any) -> set[str]:
    """The texts a report of ``result`` quotes from its sources or from the person who asked."""
    found = {result.metadata.topic}
    for claim in result.claims:
        found |= {claim.text, *claim.values, *(c.statement for c in claim.supporting)}
        found |= {*(c.statement for c in claim.contradicting), *(c.title for c in claim.supporting)}
        if claim.context:
            found |= {claim.context, *claim.context.split(" › "), *identifiers(claim.context)}
    for d in result.disputed:
        for side in (d.statement1, d.statement2):
            found |= {side.text, side.value, side.source}
    for source in result.sources:
        found |= {source.title, source.url}
    for it in result.iterations:
        found |= {*it.context.focus_queries, *it.context.areas_to_deepen}
        for report in it.agent_reports:
            found |= set(report.queries)
    for chart in result.charts:
        found |= {p.figure for p in chart.points}
    return {q for q in found if q}


def own_words(text: str, result: Any) -> str:
    """``text`` with every quotation of :func:`quoted` and every URL taken out."""
    for q in sorted(quoted(result), key=len, reverse=True):
        text = text.replace(q, " ")
    return _CHART_FILE.sub("]", _URL.sub(" ", text))


def foreign_words(text: str, result: Any, catalogue: Catalogue) -> list[str]:
    """English labels and internal keys (:func:`core.messages.leaks`) and any other Latin word that is not a
    proper name of the catalogue, in what a Japanese report says in its own words: empty when clean."""
    own = own_words(text, result)
    names = {n.casefold() for n in catalogue.names}
    latin = sorted({w for w in _LATIN_WORD.findall(own) if w.casefold() not in names})
    return sorted(set(leaks(own, catalogue)) | set(latin))
