"""Errors of the critic: one for a run in which no idea could be judged."""

from __future__ import annotations

from typing import Any

from core.errors import MagiError


class CriticError(MagiError):
    """Every idea failed or timed out; ``failures`` maps each idea id to its error (one line each)."""

    def __init__(self, message: str, failures: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.failures = dict(failures or {})

    @classmethod
    def all_failed(cls, failures: dict[str, str]) -> CriticError:
        named = "; ".join(f"{idea}: {error}" for idea, error in failures.items())
        return cls(
            f"no idea could be evaluated ({len(failures)} failed): {named}; check the LLM settings "
            "(magi doctor --llm) or raise --timeout",
            failures,
        )

    def __reduce__(self) -> tuple[Any, ...]:  # keeps ``failures`` across processes (Ray)
        return (type(self), (str(self), self.failures))


__all__ = ["CriticError"]
