"""Errors of consensus research: a run that produced no report (with what it did produce)."""

from __future__ import annotations

from typing import Any

from core.errors import MagiError


class ResearchError(MagiError):
    """A research run could not produce a report; ``partial`` holds what it did produce (JSON-ready)."""

    def __init__(self, message: str, partial: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.partial = partial

    def __reduce__(self) -> tuple[Any, ...]:  # keeps ``partial`` when the error crosses processes
        return (type(self), (str(self), self.partial))


__all__ = ["ResearchError"]
