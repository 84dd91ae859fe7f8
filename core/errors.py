"""One exception hierarchy for the whole project: its base, and the errors of core itself.

Each system and layer subclasses :class:`MagiError` in its own package (``scrapers/errors.py``,
``research/errors.py``, ``critic/errors.py``), so core names no system.

Every error carries a message meant for a person: what went wrong, where, and what to do.
The CLI prints ``str(error)`` on one line and exits with ``exit_code``.
"""

from __future__ import annotations

from typing import Any


def first_line(exc: BaseException, limit: int | None = None) -> str:
    """The first line of an error's message (its type name when empty), for one-line reports."""
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:limit]


class MagiError(Exception):
    """Base class of every error the project raises on purpose."""

    exit_code: int = 1


class ConfigError(MagiError):
    """A setting, flag, YAML file or environment variable has a bad value."""

    exit_code = 2


class InputError(MagiError):
    """A user-supplied input (path, topic, file) cannot be used."""

    exit_code = 2


class LLMNotConfiguredError(MagiError):
    """A command needs an LLM but no provider is configured (or the one configured cannot answer it).

    One exit code for every command (``magi ask``, ``critic``, ``advisor``...): 5, which no command
    uses for a result (``magi ask`` exits 0-4 with its decision)."""

    exit_code = 5


class LLMError(MagiError):
    """The LLM provider failed, or its answer could not be used.

    ``status_code`` is the HTTP status when there was one, ``model`` the model asked, ``retryable``
    whether the same call may succeed later (rate limits, overload, timeouts), ``retry_after_s``
    how long the server asked to wait.
    """

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        model: str | None = None,
        retryable: bool = False,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.model = model
        self.retryable = retryable
        self.retry_after_s = retry_after_s

    def __reduce__(self) -> tuple[Any, ...]:  # keeps the fields when the error crosses processes (Ray)
        return (type(self), (str(self),), dict(self.__dict__))


class LLMOutputError(LLMError):
    """The LLM answered, but its structured output did not validate (even after repair)."""


class CassetteMissError(LLMError):
    """The replay provider has no recorded response for a request."""


class RuntimeSetupError(MagiError):
    """Ray could not be started or attached to."""


__all__ = [
    "CassetteMissError",
    "ConfigError",
    "InputError",
    "LLMError",
    "LLMNotConfiguredError",
    "LLMOutputError",
    "MagiError",
    "RuntimeSetupError",
    "first_line",
]
