"""The one retry policy of the project: Retry-After parsing, capped exponential backoff, ``retry``.

Used by the LLM adapter, the page fetcher and the web search providers, so that every network
client waits the same way: a server's ``Retry-After`` wins (within a cap), otherwise the delay
doubles from ``base_s`` up to ``max_s`` and is shortened by a random jitter, which keeps parallel
callers that failed together from retrying in lockstep. The sleep and the randomness are
injectable, so tests run without waiting.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TypeVar

T = TypeVar("T")
Sleep = Callable[[float], Awaitable[None]]
DelayFor = Callable[[int, Exception], float]

DEFAULT_RETRY_AFTER_CAP_S = 60.0


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds in one ``Retry-After`` value (delta-seconds or an HTTP date), None if absent or unreadable.

    A date in the past means "now" (0.0).
    """
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    parsed = email.utils.parsedate_tz(text)
    if parsed is None:
        return None
    return max(0.0, email.utils.mktime_tz(parsed) - (time.time() if now is None else now))


def retry_after_s(headers: Mapping[str, str], *, cap_s: float | None = None) -> float | None:
    """Seconds a server asked to wait: ``retry-after-ms`` first, then ``retry-after``; capped at ``cap_s``."""
    asked: float | None = None
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            asked = max(0.0, float(millis) / 1000.0)
        except ValueError:
            asked = None
    if asked is None:
        asked = parse_retry_after(headers.get("retry-after"))
    if asked is None or cap_s is None:
        return asked
    return min(asked, cap_s)


def backoff_delay(
    retry: int, base_s: float, max_s: float, *, jitter: float = 0.5, rand: Callable[[], float] = random.random
) -> float:
    """Pause before retry number ``retry`` (0 = the first retry): ``base * 2**retry``, capped at ``max_s``,
    then multiplied by a random factor in ``[1 - jitter, 1]``."""
    base = min(base_s * 2.0**retry, max_s)
    return base * (1.0 - jitter * rand())


async def retry(
    call: Callable[[], Awaitable[T]],
    *,
    attempts: int,
    retryable: Callable[[Exception], bool],
    delay: DelayFor,
    sleep: Sleep = asyncio.sleep,
    on_retry: Callable[[int, Exception, float], None] | None = None,
) -> T:
    """Await ``call()`` up to ``attempts`` times.

    An exception for which ``retryable`` is false, or the one of the last attempt, propagates
    unchanged. ``delay(retry, exc)`` gives the pause before the next attempt (it may raise to give up
    early, e.g. when a deadline leaves no time); ``on_retry(retry, exc, seconds)`` is told before each pause.
    """
    if attempts < 1:
        raise ValueError(f"retry() needs at least one attempt, got attempts={attempts}")
    for attempt in range(attempts):
        try:
            return await call()
        except Exception as exc:
            if attempt + 1 >= attempts or not retryable(exc):
                raise
            seconds = delay(attempt, exc)
            if on_retry is not None:
                on_retry(attempt, exc, seconds)
            await sleep(seconds)
    raise AssertionError("unreachable")  # pragma: no cover


__all__ = [
    "DEFAULT_RETRY_AFTER_CAP_S",
    "DelayFor",
    "Sleep",
    "backoff_delay",
    "parse_retry_after",
    "retry",
    "retry_after_s",
]
