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


class LeaseLost(MagiError):
    """This replica's lease on a run was taken over (it stalled past the lease): it must stop the run
    and write nothing more, since another replica runs it now."""

    def __init__(self, run_id: str) -> None:
        super().__init__(f"run {run_id} is now executed by another replica; this one stops it")
        self.run_id = run_id

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.run_id,))


__all__ = ["LeaseLost", "ResearchError"]
