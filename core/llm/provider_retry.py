"""One retry policy for every vendor's SDK call: the SDKs differ only in their error classes.

A retryable error is tried again after the server's ``retry-after`` (capped), else capped exponential
backoff with jitter; a rate limit that names its wait pauses every caller of the cluster's limiter.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from core.llm.limiter import report_rate_limit
from core.retry import backoff_delay, retry, retry_after_s
from core.settings import LLMSettings

PAUSE_STATUSES = frozenset({429, 529})
RETRY_AFTER_CAP_S = 60.0


def provider_retry_delay(
    attempt: int, exc: Exception | None, *, llm: LLMSettings, status_error: type[Any], jitter: Callable[[], float]
) -> float:
    """Delay before retry ``attempt + 1``: the server's retry-after, else capped exponential with jitter."""
    if isinstance(exc, status_error):
        asked = retry_after_s(exc.response.headers, cap_s=RETRY_AFTER_CAP_S)
        if asked is not None:
            return asked
    return backoff_delay(attempt, llm.backoff_initial_s, llm.backoff_max_s, jitter=0.25, rand=jitter)


async def with_provider_retries(
    call: Callable[[], Awaitable[Any]],
    *,
    llm: LLMSettings,
    status_error: type[Any],
    api_error: type[Exception],
    is_retryable: Callable[[Exception], bool],
    delay: Callable[[int, Exception | None], float],
    sleep: Callable[[float], Awaitable[None]],
) -> Any:
    """``call`` with the configured retries."""

    def on_retry(_retry: int, exc: Exception, seconds: float) -> None:
        if not isinstance(exc, status_error) or exc.status_code not in PAUSE_STATUSES:
            return
        if retry_after_s(exc.response.headers) is not None:
            report_rate_limit(seconds)

    def retryable(exc: Exception) -> bool:
        return isinstance(exc, api_error | TimeoutError) and is_retryable(exc)

    return await retry(
        call, attempts=llm.max_retries + 1, retryable=retryable, delay=delay, sleep=sleep, on_retry=on_retry
    )


__all__ = ["PAUSE_STATUSES", "RETRY_AFTER_CAP_S", "provider_retry_delay", "with_provider_retries"]
