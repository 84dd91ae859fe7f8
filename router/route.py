"""Routing one query: the spec's sequence, with the rules that decide each step written down.

1. **Language** (router/language.py); failure -> ``ja``.
2. **Memory question**: the weights of the memory cues found add up to the threshold, and the query
   names no topic of its own (the exclusion lists, and any request type, event, cafe or Engineer Cafe
   word): 「さっき何を聞いたか覚えてる？」 is one, 「料金について前に聞いたけど…」 and "before 6pm" are not.
3. **Classification**: the current time (TimeAgent); events and calendar (an event's time, place and
   fee belong to the event: EventAgent); then the cafe: Saino named -> ``saino-cafe``; a cafe, or food
   and drink, with neither Saino nor Engineer Cafe named -> ``cafe-clarification-needed``.
4. **Request type**: every request type found is ranked - an interrogative of an aspect (何時まで,
   いくら, where) 3, an aspect's keyword (営業時間, 料金, open) 2, a thing (wifi, facility) 1.5, a place
   (basement, meeting-room) 1; the highest wins (**the question word decides**: 「Wi-Fiは何時まで
   使えますか」 asks for hours). Ties: Japanese keeps the last (the predicate ends the sentence), English
   the first (the wh-word opens it). A meeting room in the basement is the basement; a meeting room
   with no floor named (and no basement) is ambiguous: ``meeting-room-clarification-needed``.
5. **Follow-up**: no request type of its own, a follow-up pattern matches, and no content word
   beyond the follow-up vocabulary (a new topic) -> the session's previous request type.
6. **Agent**: ``data/router/agents.yaml``; an unknown category goes to the fallback.
7. **Abstention**: confidence below ``router.confidence_threshold`` -> ClarificationAgent when the query
   is about Engineer Cafe (a request type, a cafe, the name), else GeneralKnowledgeAgent.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Literal

from router.language import detect_language
from router.models import Classification, DebugInfo, LanguageDetection, RouteResult
from router.rules import RouterRules, TypeRule, default_rules
from router.text import Hit, TermSet, Token, find, find_by_reading, normalise, tokenize

log = logging.getLogger(__name__)

RANK_QUESTION = 3.0
RANK_ASPECT = 2.0
RANK = {"aspect": RANK_ASPECT, "thing": 1.5, "place": 1.0}
TYPE_LABEL = {
    "hours": "Hours",
    "price": "Price",
    "location": "Location",
    "wifi": "Wi-Fi",
    "facility": "Facility",
    "basement": "Basement",
    "meeting-room": "Meeting room",
    "event": "Event",
}
_CONTENT_POS = ("名詞/普通名詞", "名詞/固有名詞", "動詞/一般", "形容詞/一般")


@dataclass(frozen=True)
class Candidate:
    name: str
    rank: float
    start: int
    word: str
    fuzzy: bool


def _hits(tokens: tuple[Token, ...], terms: TermSet, *, by_reading: bool = True) -> list[Hit]:
    found = find(tokens, terms)
    if not found and by_reading:
        found = find_by_reading(tokens, terms)
    return found


class Router:
    """The pure router: ``route(query, previous_request_type)``; sessions are the caller's business."""

    def __init__(self, rules: RouterRules | None = None, *, confidence_threshold: float = 0.5) -> None:
        self.rules = rules or default_rules()
        self.confidence_threshold = confidence_threshold

    # -- steps ------------------------------------------------------------------------------------

    def memory_score(self, tokens: tuple[Token, ...]) -> tuple[float, list[str]]:
        """Sum of the weights of the distinct memory cues in ``tokens``, and those cues."""
        score = 0.0
        words: list[str] = []
        for weight, terms in self.rules.memory_cues:
            for hit in {h.term.text: h for h in find(tokens, terms, fuzzy=False)}.values():
                score += weight
                words.append(hit.term.text)
        return score, words

    def _candidates(self, normalised: str, tokens: tuple[Token, ...]) -> list[Candidate]:
        out: list[Candidate] = []
        for rule in self.rules.types:
            out.extend(self._rule_candidates(rule, normalised, tokens))
        return out

    def _rule_candidates(self, rule: TypeRule, normalised: str, tokens: tuple[Token, ...]) -> list[Candidate]:
        # Interrogatives are short common words: one slip makes another word (here/where), so no typos.
        asked = find(tokens, rule.questions, fuzzy=False)
        out = [Candidate(rule.name, RANK_QUESTION, h.start, h.term.text, h.fuzzy) for h in asked]
        rank = RANK[rule.kind]
        out += [Candidate(rule.name, rank, h.start, h.term.text, h.fuzzy) for h in _hits(tokens, rule.keywords)]
        for pattern in rule.patterns:
            for m in pattern.finditer(normalised):
                out.append(Candidate(rule.name, rank, m.start(), m.group(), False))
        return out

    def _new_topic(self, tokens: tuple[Token, ...]) -> list[str]:
        """Content words of a follow-up candidate that neither the follow-up vocabulary nor any rule knows."""
        known: set[int] = set()
        for hit in find(tokens, self.rules.topic_vocabulary, fuzzy=False):
            known.update(range(hit.index, hit.index + hit.length))
        unknown = []
        for i, tok in enumerate(tokens):
            if i in known:
                continue
            if tok.latin:
                if len(tok.surface) > 2 and not tok.surface.isdigit():
                    unknown.append(tok.surface)
            elif tok.pos in _CONTENT_POS:
                unknown.append(tok.surface)
        return unknown

    # -- the sequence -----------------------------------------------------------------------------

    def route(self, query: str, previous_request_type: str | None = None) -> RouteResult:
        """Route ``query``; ``previous_request_type`` is the session's (None: none, or too old)."""
        normalised = normalise(query)
        tokens = tokenize(normalised)
        language = detect_language(normalised)
        lang = language.detected_language
        r = self.rules

        candidates = self._candidates(normalised, tokens)
        events = find(tokens, r.events)
        calendar = find(tokens, r.calendar)
        saino = _hits(tokens, r.saino)
        engineer_cafe = find(tokens, r.engineer_cafe)
        membership = find(tokens, r.membership)
        purpose = next((hit.group() for p in r.purpose if (hit := p.search(normalised)) is not None), None)
        if purpose is not None:  # what the place is for, not where: only a location question word decides
            candidates = [c for c in candidates if c.name != "location" or c.rank == RANK_QUESTION]
        cafe = find(tokens, r.generic_cafe) + find(tokens, r.cafe_items)

        # 2. memory
        score, cues = self.memory_score(tokens)
        if score >= r.memory.threshold:
            excluded = [h.term.text for h in find(tokens, r.memory_exclusions, fuzzy=False)]
            excluded += [c.word for c in candidates] + [h.term.text for h in events + saino + engineer_cafe + cafe]
            excluded += [h.term.text for h in membership] + ([purpose] if purpose else [])
            if not excluded:
                confidence = min(0.95, 0.8 + 0.1 * (score - r.memory.threshold))
                return self._result(
                    "memory",
                    None,
                    language,
                    confidence,
                    Classification(
                        rule="memory",
                        reason="Memory question: conversation cues " + ", ".join(cues),
                        matched=cues,
                        memory_score=score,
                    ),
                )
            log.debug("memory cues %s in %r, but it names a topic of its own: %s", cues, query, excluded)

        # 3. classification
        for pattern in r.current_time:
            if (hit := pattern.search(normalised)) is not None:
                return self._result(
                    "current-time",
                    None,
                    language,
                    0.95,
                    Classification(
                        rule="time", reason="Current time question", matched=[hit.group()], memory_score=score
                    ),
                )
        if not (saino or cafe):  # calendar words are generic ("what's on") and yield to a named cafe
            events = events or calendar
        if events:
            words = [h.term.text for h in events]
            category = "calendar" if all(h.term in r.calendar for h in events) else "events"
            return self._result(
                category,
                "event",
                language,
                0.9,
                Classification(
                    rule="events", reason=f"Event keywords detected ({category})", matched=words, memory_score=score
                ),
            )
        if cafe and not saino and not engineer_cafe:
            return self._result(
                "cafe-clarification-needed",
                None,
                language,
                0.7,
                Classification(
                    rule="ambiguous_cafe",
                    reason="Ambiguous cafe query: neither Engineer Cafe nor Saino named",
                    matched=[h.term.text for h in cafe],
                    memory_score=score,
                ),
            )

        # 4. request type
        names = {c.name for c in candidates}
        if "basement" in names:
            candidates = [c for c in candidates if c.name != "meeting-room"]
        elif "meeting-room" in names and not saino:
            qualifiers = find(tokens, r.type_rule("meeting-room").qualifiers)
            if not qualifiers:
                return self._result(
                    "meeting-room-clarification-needed",
                    None,
                    language,
                    0.7,
                    Classification(
                        rule="ambiguous_room",
                        reason="Ambiguous meeting room: no floor named and not the basement",
                        matched=[c.word for c in candidates if c.name == "meeting-room"],
                        memory_score=score,
                    ),
                )
        best = self._best(candidates, lang)
        brand = "saino-cafe" if saino else "facility-info"
        if best is not None:
            others = sorted({c.name for c in candidates} - {best.name})
            why = "question word" if best.rank == RANK_QUESTION else "keywords"
            reason = f"{TYPE_LABEL[best.name]} {why} detected"
            if others:
                reason += f" (also {', '.join(others)}: the question word decides)"
            confidence = 0.95 if best.rank == RANK_QUESTION else 0.9 if best.rank >= RANK_ASPECT else 0.85
            if best.fuzzy:
                confidence -= 0.15
            return self._result(
                brand,
                best.name,
                language,
                confidence,
                Classification(
                    rule="question_word" if best.rank == RANK_QUESTION else "keywords",
                    reason=reason,
                    matched=[c.word for c in candidates],
                    subject=others[0] if others else None,
                    fuzzy=best.fuzzy,
                    memory_score=score,
                ),
            )

        # 5. follow-up
        followup = next((hit.group() for p in r.followups if (hit := p.search(normalised)) is not None), None)
        if followup is not None:
            new_words = self._new_topic(tokens)
            if new_words:
                log.debug("follow-up pattern %s in %r, but new topic words %s", followup, query, new_words)
            elif previous_request_type is not None:
                log.info("[RouterAgent] Context inheritance: %s -> %s", query, previous_request_type)
                category = "events" if previous_request_type == "event" else brand
                return self._result(
                    category,
                    previous_request_type,
                    language,
                    0.8,
                    Classification(
                        rule="follow_up",
                        reason=f"Follow-up: inherits the previous request type {previous_request_type}",
                        matched=[followup],
                        inherited=True,
                        memory_score=score,
                    ),
                )
            elif not saino and not engineer_cafe:
                return self._result(
                    "general",
                    None,
                    language,
                    0.4,
                    Classification(
                        rule="follow_up_alone",
                        reason="Follow-up with no previous request type in the session",
                        matched=[followup],
                        memory_score=score,
                    ),
                )
        if saino or engineer_cafe or membership or purpose:
            if saino:
                rule, reason = "saino", "Saino named, no request type"
            elif engineer_cafe:
                rule, reason = "engineer_cafe", "Engineer Cafe named, no request type"
            elif membership:
                rule, reason = "membership", "Membership or registration question"
            else:
                rule, reason = "purpose", "Question about what the place is for"
            matched = [h.term.text for h in saino + engineer_cafe + membership] + ([purpose] if purpose else [])
            return self._result(
                brand,
                None,
                language,
                0.6,
                Classification(rule=rule, reason=reason, matched=matched, memory_score=score),
            )
        return self._result(
            "general",
            None,
            language,
            0.6,
            Classification(rule="no_topic", reason="No Engineer Cafe topic detected", memory_score=score),
        )

    def _best(self, candidates: list[Candidate], lang: Literal["ja", "en"]) -> Candidate | None:
        if not candidates:
            return None
        top = max(c.rank for c in candidates)
        tied = [c for c in candidates if c.rank == top]
        exact = [c for c in tied if not c.fuzzy] or tied
        return max(exact, key=lambda c: c.start) if lang == "ja" else min(exact, key=lambda c: c.start)

    def _result(
        self,
        category: str,
        request_type: str | None,
        language: LanguageDetection,
        confidence: float,
        classification: Classification,
    ) -> RouteResult:
        mapping = self.rules.agents
        agent = mapping.categories.get(category, mapping.fallback)
        if request_type is not None and category in ("facility-info", "events"):
            agent = mapping.request_types.get(request_type, agent)
        if language.failed:
            confidence *= 0.9
        confidence = round(max(0.0, min(1.0, confidence)), 3)
        if confidence < self.confidence_threshold:
            domain = request_type is not None or category not in ("general",)
            agent = mapping.abstain_domain if domain else mapping.abstain_general
            classification = classification.model_copy(
                update={
                    "abstained": True,
                    "reason": f"{classification.reason}; confidence {confidence} is below the threshold "
                    f"{self.confidence_threshold}: {agent}",
                }
            )
        return RouteResult.model_validate(
            {
                "agent": agent,
                "category": category,
                "request_type": request_type,
                "language": language.detected_language,
                "confidence": confidence,
                "debug_info": DebugInfo(language_detection=language, classification=classification),
            }
        )


__all__ = ["RANK", "RANK_ASPECT", "RANK_QUESTION", "Candidate", "Router"]
