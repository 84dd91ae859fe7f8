"""The router's conversation: the session changes one visitor message makes (route it, record it).

:class:`Turn` is a session change (``sessions/gateway.py``; the session's host runs it under the
session's lock), so reading the previous request type, routing and writing the result back happen as one step:
two messages of one session never route against the same stale context. ``advisor/conversation.py``
is the same thing for the advisor.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

from core.validation import clean_text
from router.answers import memory_answer, time_answer
from router.models import RouteResult
from router.route import Router
from sessions.models import HistoryEntry, SessionPolicy, SessionState

log = logging.getLogger(__name__)


@lru_cache(maxsize=8)
def shared_router(confidence_threshold: float) -> Router:
    """One router per process and threshold (rules and tokenizer loaded once)."""
    return Router(confidence_threshold=confidence_threshold)


def check_query(query: object, max_chars: int) -> str:
    """The query as the router reads it; an InputError (exit 2, HTTP 422) when it is not usable text."""
    return clean_text(query, "query", max_chars=max_chars, example="ask about Engineer Cafe, e.g. 営業時間は？")


CONTEXT_ENTRIES = 6
SESSION_NAMESPACE = "router"  # sessions.ids.session_key: the router's sessions meet no other system's


@dataclass(frozen=True)
class TurnOutcome:
    """What a turn returns across the actor boundary: the RouteResult as its JSON (cheap to ship and
    to answer with over HTTP), the router's own answer, and the context an LLM would need."""

    result_json: str
    answer: str | None  # set when the router can answer truthfully itself (memory, time)
    query: str = ""
    context: tuple[HistoryEntry, ...] = ()  # the latest entries before this turn (an LLM's context)

    @classmethod
    def of(
        cls, result: RouteResult, answer: str | None, query: str, context: tuple[HistoryEntry, ...] = ()
    ) -> TurnOutcome:
        return cls(result.model_dump_json(by_alias=True), answer, query, context)

    @property
    def result(self) -> RouteResult:
        return RouteResult.model_validate_json(self.result_json)


@dataclass(frozen=True)
class Turn:
    """Route ``query`` in a session and record it (and, with ``answer``, the router's own answer)."""

    query: str
    confidence_threshold: float
    policy: SessionPolicy
    answer: bool = False

    def __call__(self, state: SessionState, now: datetime) -> TurnOutcome:
        previous = state.previous_type(now, self.policy)
        if previous is None and state.previous_request_type is not None:
            log.info(
                "previous request type %s of session %s is too old to inherit",
                state.previous_request_type,
                state.session_id,
            )
        result = shared_router(self.confidence_threshold).route(self.query, previous)
        earlier = list(state.history)
        state.add(
            HistoryEntry(
                role="user",
                text=self.query,
                language=result.language,
                agent=result.agent,
                request_type=result.request_type,
                timestamp=now,
                metadata={"category": result.category, "confidence": result.confidence},
            ),
            self.policy,
        )
        if result.request_type is not None:
            state.remember_request_type(result.request_type, now)
        reply = None
        if self.answer:
            if result.agent == "MemoryAgent":
                reply = memory_answer(earlier, result.language)
            elif result.agent == "TimeAgent":
                reply = time_answer(now, result.language)
            if reply is not None:
                state.add(
                    HistoryEntry(
                        role="assistant", text=reply, language=result.language, agent=result.agent, timestamp=now
                    ),
                    self.policy,
                )
        context = tuple(earlier[-CONTEXT_ENTRIES:]) if self.answer else ()  # only /ask needs it (an LLM's context)
        return TurnOutcome.of(result, reply, self.query, context)


@dataclass(frozen=True)
class Reply:
    """Record an answer produced outside the session (an LLM's) in its history."""

    text: str
    language: str
    agent: str
    policy: SessionPolicy

    def __call__(self, state: SessionState, now: datetime) -> None:
        state.add(
            HistoryEntry(role="assistant", text=self.text, language=self.language, agent=self.agent, timestamp=now),
            self.policy,
        )


__all__ = ["CONTEXT_ENTRIES", "SESSION_NAMESPACE", "Reply", "Turn", "TurnOutcome", "check_query", "shared_router"]
