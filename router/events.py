"""Router events: one decision per routed question (which agent, why, how sure), written by the HTTP
app as a JSON log line; the question itself is not in it."""

from __future__ import annotations

from typing import Literal

from core.events import Event
from router.models import RouteResult


class RouteDecided(Event):
    type: Literal["routeDecided"] = "routeDecided"
    session_id: str
    agent: str
    category: str
    request_type: str | None = None
    language: str
    confidence: float

    @classmethod
    def of(cls, result: RouteResult, session_id: str) -> RouteDecided:
        return cls(
            session_id=session_id,
            agent=result.agent,
            category=result.category,
            request_type=result.request_type,
            language=result.language,
            confidence=result.confidence,
        )


__all__ = ["RouteDecided"]
