"""The executive summary of a research report, built only from verified claims.

A claim is *verified* when it has at least one supporting citation. Two ways to write the summary:

* :func:`extractive_summary` (no LLM): the best verified claims as a bulleted list, each with its
  confidence and number of independent sources. Used when there is no LLM or the LLM's text fails.
* :func:`write_summary` with an LLM: the model is given the verified claims only (system prompt in
  ``data/prompts/research_summary.md``), and every sentence it writes is then checked with
  :func:`check_sentences`; unsupported sentences are dropped, and if none survives the summary
  falls back to the extractive one.

Sentence rules of :func:`check_sentences` (a cheap, deterministic guard against invented facts,
not a proof of faithfulness):

* Figures: every figure in the sentence must agree (``nlp.values.values_agree``: same kind, unit and
  change flag, overlapping intervals) with a figure of some verified claim, taken from its ``values``
  and its text. Approximate restatements count: 約5割 and "about 50%" agree with 49.7%, 約6割 does not.
  Full-width digits are folded (４９．７％ = 49.7%). A figure matching a claim is enough substance.
  A bound in a claim (5割を超えた, "over half") supports only a bound, never a precise figure.
* Dates are not figures: they never make a sentence supported, but each date that names a year must
  overlap a date stated in some verified claim (2024年度 fits 2024年9月; an invented 2023年 does not).
  Dates without a year (9月) are not checked.
* Sentences without figures must share substance with one claim: one of its entities, or at least
  :data:`MIN_SHARED_TERMS` content terms (runs of 2+ kanji/katakana, Latin words of 4+ letters that
  are not function words) with the claim's text.
* Framing and hedges with no fact ("以下に要点をまとめる。", "In summary:") fail these rules and are
  removed: a summary of verified claims does not need them. Sentences touching a disputed claim are
  kept (the claim is still verified); the prompt asks the model to say that it is disputed.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import Field

from core.errors import ConfigError, MagiError, first_line
from core.llm.base import LLMClient, Message, generate
from core.llm.fencing import fence
from core.messages import Lang, catalogue, language_of
from core.models import CamelModel
from core.resources import data_path
from nlp.findings import split_sentences
from nlp.values import Value, fold, parse_values, values_agree
from research.answering import names_entity, text_relevance, title_share
from research.evidence import EvidencedClaim
from research.labels import report_language
from research.noise import noise_factor
from research.question import Question, answer_fit, answered_share, answers, parse_question
from research.retrieval import EXACT_BONUS

log = logging.getLogger(__name__)

PROMPT_PATH = data_path("prompts", "research_summary.md")
MAX_LLM_CLAIMS = 20  # claims shown to the model, highest confidence first
TITLE_WEIGHT = 0.5  # of the share of what is asked that the cited page's title names
MAX_TOKENS = 700  # 3-5 sentences, with room for Japanese tokenisation
DISPUTED_ANSWER_WEIGHT = 0.5
AGREEING_SOURCE_BONUS, MAX_AGREEING_SOURCES = 0.25, 4  # an answer's weight per independent source beyond one
MIN_ANSWER_SHARE = 0.3  # of the best answer weight, for a claim stating more of the asked attributes to win
MIN_SHARED_TERMS = 2  # content terms a figure-less sentence must share with one claim

_LIST_MARKER = re.compile(r"^(?:#+|[-*・•●]|[0-9]+[.)）]|[(（][0-9]+[)）])\s*")
_CJK_TERM = re.compile(r"[\u4e00-\u9fff々〆\u30a1-\u30faー]{2,}")
_LATIN_WORD = re.compile(r"[a-z][a-z\-]{3,}")
# fmt: off
_STOPWORDS = frozenset({
    "about", "also", "after", "before", "been", "being", "both", "each", "from", "have", "having", "into",
    "more", "most", "much", "only", "other", "over", "some", "such", "than", "that", "their", "them", "then",
    "there", "these", "they", "this", "those", "very", "were", "what", "when", "where", "which", "while",
    "will", "with", "would", "could", "should", "summary", "overall", "according", "report", "reported",
})
# fmt: on
_ENDS = ("。", "！", "？", "!", "?", ".")
_LIST_JOIN = r"\s*(?:,|and|or|と|、|や|および|及び)\s*"  # "%D and %p", 「%D と %p」: several things asked


class ExecutiveSummary(CamelModel):
    """The summary as written, and an audit of how: who wrote it, what was removed, which claims fed it."""

    text: str
    written_by: Literal["llm", "extractive"]
    sentences_kept: int
    sentences_removed: list[str]
    claims_used: list[str]  # claim ids given to the model, or picked by the extractive summary
    answers: list[str] = Field(default_factory=list)  # of those, the claims the extractive summary gives as its answer
    note: str | None = None  # e.g. why the LLM summary was not used


def _verified(claims: Sequence[EvidencedClaim]) -> list[EvidencedClaim]:
    """Claims with at least one supporting citation, highest confidence first (ties: more sources, id)."""
    kept = [c for c in claims if c.supporting]
    return sorted(kept, key=lambda c: (-c.confidence, -c.independent_origins, c.claim_id))


def _pick(claims: Sequence[EvidencedClaim], max_sentences: int, *, ordered: bool = False) -> list[EvidencedClaim]:
    """Top verified claims, one per key, undisputed before disputed, then by confidence (or in the
    given order when ``ordered``)."""
    picked: list[EvidencedClaim] = []
    keys: set[str] = set()
    pool = list(claims) if ordered else sorted(_verified(claims), key=lambda c: c.disputed)  # stable
    for claim in pool:
        key = claim.key or f"id:{claim.claim_id}"
        if key in keys:
            continue
        keys.add(key)
        picked.append(claim)
        if len(picked) >= max_sentences:
            break
    return picked


def _bullet(claim: EvidencedClaim, *, cited: bool = False, japanese: bool = False) -> str:
    lang: Lang = "ja" if japanese else "en"
    c = catalogue("research")
    sources = claim.independent_origins
    stats = c.text(
        "summary.stats",
        lang,
        disputed=c.text("summary.disputed", lang) if claim.disputed else "",
        confidence=f"{claim.confidence:.2f}",
        n=sources,
        sources="source" if sources == 1 else "sources",
    )
    text = claim.text.strip()
    if claim.context:
        text = f"{claim.context}: {text}"  # the subject its document gives it
    gap = "" if japanese or text.endswith(("。", "！", "？", "」", "）")) else " "  # none after Japanese text
    where = f" [{claim.supporting[0].title}]" if cited and claim.supporting else ""
    return f"- {text}{gap}{stats}{where}"


def _read(claim: EvidencedClaim) -> str:
    return f"{claim.context or ''} {claim.text}"


def _answer_weights(question: Question, verified: Sequence[EvidencedClaim]) -> list[float]:
    """How well each verified claim answers: relevance of the claim read with its context (plus the
    exact-entity bonus) and the share of asked attributes it states, x confidence, x the sources that
    agree beyond the first (:data:`AGREEING_SOURCE_BONUS` each, at most :data:`MAX_AGREEING_SOURCES`: a
    figure four sources state answers before a remark one source makes under a heading that repeats the
    question), halved when disputed, x the noise factor (a survey's method is no answer:
    :mod:`research.noise`). A claim cited from a page whose title names what is asked gains up to
    :data:`TITLE_WEIGHT` (the page "mod_auth_form" answers for mod_auth_form, not a page that shares
    the words "form" and "login")."""
    reads = [_read(c) for c in verified]
    relevance = text_relevance(reads, [question.text])
    weights = []
    for c, read, rel in zip(verified, reads, relevance, strict=True):
        if rel <= 0:
            weights.append(0.0)
            continue
        fit = rel + (EXACT_BONUS if names_entity(question, read) else 0.0) + answered_share(question, read)
        fit += TITLE_WEIGHT * max((title_share(question, s.title) for s in c.supporting), default=0.0)
        disputed = DISPUTED_ANSWER_WEIGHT if c.disputed else 1.0
        agreeing = 1.0 + AGREEING_SOURCE_BONUS * min(max(c.independent_origins - 1, 0), MAX_AGREEING_SOURCES)
        confidence = (0.5 + 0.5 * c.confidence) * agreeing
        weights.append(fit * confidence * disputed * noise_factor(c.text, question))
    return weights


_UNIT_AFTER = re.compile(r" ([A-Za-z]{1,14})\b")
# fmt: off
_NOT_UNITS = frozenset({
    "a", "an", "and", "or", "the", "to", "of", "is", "are", "in", "on", "for", "from", "by", "as", "at", "if",
    "it", "be", "with", "than", "that",
})
# fmt: on
_NAME = re.compile(r"\w[_.:/%@]\w|^[%@/]\w")  # a parameter's or file's name ("mail_check", "%D"), not "PostgreSQL"


def _naming(question: Question, verified: Sequence[EvidencedClaim]) -> list[EvidencedClaim]:
    """The claims that may answer a question naming a parameter (``autovacuum_naptime``, ``%D``): those
    that name it, in their sentence, their context or the title of a page they cite; none when no claim
    does. Another parameter's value is never the answer ("vacuum_cost_delay" for
    "autovacuum_vacuum_cost_delay"). A question naming no parameter keeps them all."""
    names = [e for e in question.entities if _NAME.search(e)]
    if not names:
        return list(verified)
    named = replace(question, entities=tuple(names))
    return [
        c for c in verified if names_entity(named, _read(c)) or any(names_entity(named, s.title) for s in c.supporting)
    ]


def _answer_for(question: Question, verified: Sequence[EvidencedClaim]) -> EvidencedClaim | None:
    """The verified claim that best answers one asked item; None when no claim shares a term with it,
    when the item asks for an attribute (a default, a size ...) and none states it, or when it names a
    parameter and no claim names it (:func:`_naming`)."""
    verified = _naming(question, verified)
    if not verified:
        return None
    weights = _answer_weights(question, verified)
    top = max(weights)
    if top <= 0:
        return None
    # a claim that states what is asked (a default, a size) answers before one that only matches words
    fits = [
        answer_fit(question, _read(c)) if w >= MIN_ANSWER_SHARE * top else (False, -1.0)
        for c, w in zip(verified, weights, strict=True)
    ]
    best = max(range(len(verified)), key=lambda i: (fits[i], weights[i], -i))
    if not answers(question, _read(verified[best])):
        return None
    return verified[best] if _names_a_year(question.text) else _newest(verified[best], verified)


def _listed(entities: Sequence[str], topic: str) -> bool:
    """Whether two of the entities are listed side by side ("%D and %p"), i.e. asked about one by one."""
    return any(re.search(re.escape(a) + _LIST_JOIN + re.escape(b), topic) for a in entities for b in entities if a != b)


def _items(topic: str) -> list[tuple[str, Question]]:
    """The things a question asks, each labelled and parsed as its own question: its clauses ("..., and
    what was ..."), else one per entity it names (``%D`` and ``%p``), else the question itself."""
    question = parse_question(topic)
    if len(question.clauses) > 1:
        return [(c, parse_question(c)) for c in question.clauses]
    if len(question.entities) > 1 and _listed(question.entities, topic):
        return [(e, replace(question, entities=(e,), text=f"{e} {topic}")) for e in question.entities]
    return [(topic, question)]


def _answer(topic: str, claims: Sequence[EvidencedClaim]) -> EvidencedClaim | None:
    """The verified claim that best answers the whole question (see :func:`_answer_for`)."""
    return _answer_for(parse_question(topic), _verified(claims))


def _names_a_year(topic: str) -> bool:
    """Whether the question asks about a dated moment (2024年9月, FY2023): then its own date decides."""
    return any(_has_year(v) for v in parse_values(topic))


def _series(claim: EvidencedClaim) -> tuple[str, str] | None:
    """(subject/attribute, period) of a dated claim key such as ``価格転嫁率@2025-03``; None when undated."""
    series, _, period = (claim.key or "").partition("@")
    return (series, period) if series and period[:4].isdigit() else None


def _newest(answer: EvidencedClaim, verified: Sequence[EvidencedClaim]) -> EvidencedClaim:
    """For a question about the present, the same figure at its newest date: a survey's latest round
    answers "what is the rate" better than an earlier one, however well the earlier sentence matches.
    Among claims of that date an undisputed one comes first, then confidence (``verified``'s order)."""
    dated = _series(answer)
    if dated is None:
        return answer
    same = [(p, c) for c in verified if (k := _series(c)) is not None and k[0] == dated[0] for p in [k[1]]]
    newest = max(p for p, _ in same)
    if newest <= dated[1]:
        return answer
    return next(c for disputed in (False, True) for p, c in same if p == newest and c.disputed == disputed)


def _earlier(answer: EvidencedClaim, verified: Sequence[EvidencedClaim]) -> tuple[str, str] | None:
    """(period, figure) of the answer's figure at the latest date before the answer's, to mention;
    None when there is none or the answer's sentence already states it."""
    dated = _series(answer)
    if dated is None:
        return None
    before = [
        (k[1], c.values[0])
        for c in verified
        if c.values and (k := _series(c)) is not None and k[0] == dated[0] and k[1] < dated[1]
    ]
    if not before:
        return None
    period, figure = max(before, key=lambda pair: pair[0])
    return None if figure in answer.text else (period, figure)  # the answer may state it already


def _value_first(question: Question, claim: EvidencedClaim) -> str:
    """The figure an answer states, to lead its line with, when the question asks for a value (a default,
    a duration, a size ...) and the claim states one: the reader sees "2 ms" before the sentence."""
    if not question.attributes or not claim.values or "reason" in question.attributes:
        return ""
    figure = claim.values[0]
    at = claim.text.find(figure)
    unit = _UNIT_AFTER.match(claim.text, at + len(figure)) if at >= 0 else None
    if unit and unit.group(1).lower() not in _NOT_UNITS:
        return f"{figure} {unit.group(1)}"  # "5000 steps", "2 milliseconds": the unit the sentence gives
    return figure


def _answer_line(question: Question, claim: EvidencedClaim, lang: Lang) -> str:
    c = catalogue("research")
    value = _value_first(question, claim)
    lead = c.text("summary.answer_value", lang, value=value) if value else ""
    return lead + _bullet(claim, cited=True, japanese=lang == "ja")[2:]


def _extractive(
    topic: str,
    picked: Sequence[EvidencedClaim],
    answer: EvidencedClaim | None = None,
    earlier: tuple[str, str] | None = None,
    items: Sequence[tuple[str, EvidencedClaim | None]] = (),
    lang: Lang | None = None,
) -> str:
    """The summary text in the report's language: the answer first, led by the value asked for (one line
    per asked item when the question asks several, then what the sources do not answer), then the
    supporting facts. Every label comes from the message catalogue."""
    lang = lang or report_language(topic)
    japanese = lang == "ja"
    c = catalogue("research")
    if not picked and answer is None and not any(cl for _, cl in items):
        return c.text("summary.no_claims", lang)
    question = parse_question(topic)
    answered = [cl for _, cl in items if cl is not None] or ([answer] if answer else [])
    shown = {cl.claim_id for cl in answered}
    rest = [cl for cl in picked if cl.claim_id not in shown]
    missing = [label for label, cl in items if cl is None]
    label = c.text("summary.answer", lang)
    lines: list[str] = []
    if len(items) > 1 and answered:
        lines.append(f"{label}:")
        lines += [f"- {item}: {_answer_line(parse_question(item), cl, lang)}" for item, cl in items if cl is not None]
    elif answered:
        line = f"{label}: " + _answer_line(question, answered[0], lang)
        if earlier is not None:
            period, figure = earlier
            line += c.text("summary.earlier", lang, figure=figure, period=period)
        lines.append(line)
    if missing and (answered or len(items) > 1):
        lines.append(c.text("summary.unanswered", lang, items=("、" if japanese else "; ").join(missing)))
    if not answered:
        key = "summary.no_direct_answer" if missing and len(items) == 1 else "summary.key_facts"
        lead = c.text(key, lang, topic=topic)
        return "\n".join([*lines, lead, *(_bullet(cl, japanese=japanese) for cl in rest)])
    if rest:
        lines.append(c.text("summary.supporting", lang))
        lines += [_bullet(cl, japanese=japanese) for cl in rest]
    return "\n".join(lines)


def extractive_summary(
    topic: str,
    claims: Sequence[EvidencedClaim],
    *,
    max_sentences: int = 5,
    answer_first: bool = True,
    lang: Lang | None = None,
) -> str:
    """A deterministic, LLM-free summary: the answer first, then the best verified claims as bullets.

    The answer is the verified claim most relevant to the question (passage BM25 x confidence); it is
    left out when no claim shares a term with the question. When the question names no year (it asks
    about the present) and the answer's figure is stated for several dates (its key
    ``subject/attribute@period``), the newest date's claim answers and the previous date's figure is
    mentioned after it. The bullets keep one claim per key, so the
    list is not several variants of one figure; disputed claims come after undisputed ones and are labelled.
    """
    if not answer_first:
        return _extractive(topic, _pick(claims, max_sentences), lang=lang)
    items, answer, picked = _answering(topic, claims, max_sentences)
    earlier = _earlier(answer, _verified(claims)) if answer else None
    return _extractive(topic, picked, answer, earlier, items, lang)


def _answering(
    topic: str, claims: Sequence[EvidencedClaim], max_sentences: int
) -> tuple[list[tuple[str, EvidencedClaim | None]], EvidencedClaim | None, list[EvidencedClaim]]:
    """(each asked item with its answer or None, the answer to the whole question, the supporting
    claims): supporting claims are the next best answers, one per key, undisputed first."""
    verified = _verified(claims)
    question = parse_question(topic)
    asked = _items(topic)
    items = [(label, _answer_for(q, verified)) for label, q in asked]
    answer = items[0][1] if len(items) == 1 else _answer_for(question, verified)
    weights = _answer_weights(question, verified)
    # one claim per key, the most confident (verified is in confidence order), ranked by its key's best answer
    best: dict[str, tuple[int, float]] = {}
    for i, c in enumerate(verified):
        key = c.key or f"id:{c.claim_id}"
        first, weight = best.get(key, (i, 0.0))
        best[key] = (first, max(weight, weights[i]))
    order = sorted(best.values(), key=lambda pair: (verified[pair[0]].disputed, -pair[1], pair[0]))
    return items, answer, _pick([verified[i] for i, _ in order], max_sentences, ordered=True)


def _norm(text: str) -> str:
    return fold(text).lower()


def _terms(text: str) -> set[str]:
    """Content terms of normalised text: kanji/katakana runs and Latin words that are not function words."""
    words = {w.strip("-") for w in _LATIN_WORD.findall(text)}
    return set(_CJK_TERM.findall(text)) | {w for w in words if len(w) >= 4 and w not in _STOPWORDS}


def _has_year(value: Value) -> bool:
    return value.kind == "date" and value.date_from is not None and not value.date_from.startswith("--")


@dataclass
class _Evidence:
    """What a claim offers for checking: its figures, its dates, its words."""

    text: str
    terms: set[str]
    entities: list[str]
    figures: list[Value] = field(default_factory=list)
    dates: list[Value] = field(default_factory=list)


def _evidence(claim: EvidencedClaim) -> _Evidence:
    text = _norm(claim.text)
    ev = _Evidence(text, _terms(text), [e for e in (_norm(x).strip() for x in claim.entities) if len(e) >= 2])
    for value in (v for source in [*claim.values, claim.text] for v in parse_values(source)):
        if value.kind != "date":
            ev.figures.append(value)
        elif _has_year(value):
            ev.dates.append(value)
    return ev


def _shares_substance(sentence: str, ev: _Evidence) -> bool:
    if any(entity in sentence for entity in ev.entities):
        return True
    shared = {t for t in _terms(sentence) if t in ev.text or any(c in t for c in ev.terms)}
    return len(shared) >= MIN_SHARED_TERMS


def _bounded(v: Value) -> bool:
    return v.lower is not None or v.upper is not None


def _backs(claimed: Value, written: Value) -> bool:
    """A claim's figure supports a written one when they agree, and a bound (5割超, "over half") only
    supports a bound: "over 50%" must not vouch for an invented 99.9%."""
    return values_agree(claimed, written) and (_bounded(written) or not _bounded(claimed))


def _supported(sentence: str, evidence: Sequence[_Evidence]) -> bool:
    values = parse_values(sentence)
    figures = [v for v in values if v.kind != "date"]
    all_dates = [d for ev in evidence for d in ev.dates]
    for date in (v for v in values if _has_year(v)):
        if not any(values_agree(date, d) for d in all_dates):
            return False
    if figures:
        return all(any(_backs(g, f) for ev in evidence for g in ev.figures) for f in figures)
    norm = _norm(sentence)
    return any(_shares_substance(norm, ev) for ev in evidence)


def _clean(sentence: str) -> str:
    """The sentence without a leading list marker or heading hashes (the model was asked for prose)."""
    return _LIST_MARKER.sub("", sentence.strip()).strip()


def _whole(sentence: str, lang: str | None) -> bool:
    """A finished sentence in the report's language: it ends with a sentence mark (a cut one does not)
    and is written in ``lang`` (an English sentence has no place in a Japanese summary)."""
    if not sentence.rstrip("」』）)\"'").endswith(_ENDS):
        return False
    return lang is None or language_of(sentence, default="ja") == lang


def check_sentences(
    text: str, claims: Sequence[EvidencedClaim], *, lang: str | None = None, cut: bool = False
) -> tuple[list[str], list[str]]:
    """Split ``text`` into sentences and return (kept, removed) by the rules in the module docstring.

    Only claims with supporting citations count. List markers are stripped; fragments with no
    letters or digits (a lone "1.") are neither kept nor reported. A sentence that is cut (no end
    mark; the last one when the answer hit its token limit, ``cut``) or not in ``lang`` is removed.
    """
    evidence = [_evidence(c) for c in claims if c.supporting]
    kept: list[str] = []
    removed: list[str] = []
    pieces = [s for s in (_clean(p.text) for p in split_sentences(text)) if any(ch.isalnum() for ch in s)]
    for index, sentence in enumerate(pieces):
        whole = _whole(sentence, lang) and not (cut and index == len(pieces) - 1)
        (kept if whole and evidence and _supported(sentence, evidence) else removed).append(sentence)
    return kept, removed


@cache
def _system_prompt(path: Path = PROMPT_PATH) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ConfigError(
            f"summary prompt {path} is unreadable ({exc.strerror}); restore it from the repository"
        ) from exc


def _language_name(lang: str) -> str:
    return {"ja": "Japanese (日本語)", "en": "English"}.get(lang, lang)


def _claims_message(topic: str, claims: Sequence[EvidencedClaim], lang: str) -> str:
    listed = []
    for n, claim in enumerate(claims, 1):
        figures = ", ".join(claim.values) or "none"
        flag = "; DISPUTED" if claim.disputed else ""
        listed.append(
            f"{n}. {claim.text.strip()} [figures: {figures}; confidence {claim.confidence:.2f}; "
            f"independent sources {claim.independent_origins}{flag}]"
        )
    lines = [
        f"Language: {_language_name(lang)}",
        "",
        fence(topic, "TOPIC"),
        "",
        "Verified claims (text from the pages read):",
    ]
    return "\n".join([*lines, fence("\n".join(listed), "CLAIMS")])


def _join(sentences: Sequence[str], lang: str) -> str:
    """Sentences back into prose, closing any that lost their end mark (a bullet line, a heading)."""
    end = "。" if lang == "ja" else "."
    closed = [s if s.endswith(_ENDS) else s + end for s in sentences]
    return ("" if lang == "ja" else " ").join(closed)


def _fallback(
    topic: str, claims: Sequence[EvidencedClaim], note: str, removed: list[str], lang: str | None = None
) -> ExecutiveSummary:
    items, answer, picked = _answering(topic, claims, 5)
    earlier = _earlier(answer, _verified(claims)) if answer else None
    answers = [c.claim_id for _, c in items if c is not None] or ([answer.claim_id] if answer else [])
    used = list(dict.fromkeys([*answers, *(c.claim_id for c in picked)]))
    return ExecutiveSummary(
        text=_extractive(topic, picked, answer, earlier, items, "ja" if lang == "ja" else "en" if lang else None),
        written_by="extractive",
        answers=answers,
        sentences_kept=len(used),
        sentences_removed=removed,
        claims_used=used,
        note=note,
    )


async def write_summary(
    topic: str, claims: Sequence[EvidencedClaim], llm: LLMClient | None, *, lang: str = "ja"
) -> ExecutiveSummary:
    """The report's executive summary: LLM prose checked sentence by sentence, else the extractive list."""
    given = _verified(claims)[:MAX_LLM_CLAIMS]
    if llm is None:
        return _fallback(topic, claims, "no LLM given; extractive summary", [], lang)
    if not given:
        return _fallback(topic, claims, "no verified claims to summarise", [], lang)
    system = _system_prompt()  # outside the try: a missing prompt file is a setup error, not an LLM failure
    try:
        result = await generate(
            llm,
            system=system,
            messages=[Message(role="user", content=_claims_message(topic, given, lang))],
            temperature=0.0,
            max_tokens=MAX_TOKENS,
        )
    except MagiError as exc:
        log.warning("executive summary: LLM call failed (%s); using the extractive summary", first_line(exc))
        return _fallback(topic, claims, f"LLM call failed: {first_line(exc, 200)}; extractive summary used", [], lang)
    cut = result.response.stop_reason in ("max_tokens", "length")
    kept, removed = check_sentences(result.response.text, given, lang=lang, cut=cut)
    if not kept:
        log.warning("executive summary: no LLM sentence is supported by the verified claims; using the extractive one")
        note = (
            f"none of the {len(removed)} LLM sentence(s) is supported by the verified claims; extractive summary used"
            if removed
            else "the LLM returned no text; extractive summary used"
        )
        return _fallback(topic, claims, note, removed, lang)
    return ExecutiveSummary(
        text=_join(kept, lang),
        written_by="llm",
        sentences_kept=len(kept),
        sentences_removed=removed,
        claims_used=[c.claim_id for c in given],
        note=f"{len(removed)} unsupported sentence(s) removed" if removed else None,
    )


__all__ = [
    "MAX_LLM_CLAIMS",
    "MAX_TOKENS",
    "MIN_SHARED_TERMS",
    "PROMPT_PATH",
    "ExecutiveSummary",
    "check_sentences",
    "extractive_summary",
    "write_summary",
]
