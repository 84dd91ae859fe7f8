"""core.retry: Retry-After parsing, capped jittered backoff, and the async retry loop."""

from __future__ import annotations

import email.utils

import pytest

from core.retry import backoff_delay, parse_retry_after, retry, retry_after_s


class Sleeps(list[float]):
    async def __call__(self, seconds: float) -> None:
        self.append(seconds)


def test_retry_after_forms() -> None:
    now = 1_700_000_000.0
    assert parse_retry_after("7") == 7.0 and parse_retry_after("1.5") == 1.5
    assert parse_retry_after(email.utils.formatdate(now + 30, usegmt=True), now=now) == pytest.approx(30.0)
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past: now
    assert parse_retry_after("-3") == 0.0
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None and parse_retry_after(" ") is None


def test_retry_after_headers_prefer_milliseconds_and_cap() -> None:
    assert retry_after_s({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after_s({"retry-after-ms": "x", "retry-after": "9"}) == 9.0
    assert retry_after_s({"retry-after": "600"}, cap_s=60.0) == 60.0
    assert retry_after_s({}) is None


def test_backoff_doubles_caps_and_jitters_within_bounds() -> None:
    assert [backoff_delay(n, 1.0, 10.0, rand=lambda: 0.0) for n in range(6)] == [1, 2, 4, 8, 10, 10]
    assert [backoff_delay(n, 1.0, 10.0, jitter=0.5, rand=lambda: 1.0) for n in range(3)] == [0.5, 1.0, 2.0]
    assert all(0.75 <= backoff_delay(0, 1.0, 10.0, jitter=0.25) <= 1.0 for _ in range(200))


async def test_retry_until_success_with_injected_sleep() -> None:
    calls: list[int] = []
    seen: list[tuple[int, str, float]] = []

    async def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionError(f"try {len(calls)}")
        return "ok"

    sleeps = Sleeps()
    result = await retry(
        flaky,
        attempts=3,
        retryable=lambda e: isinstance(e, ConnectionError),
        delay=lambda n, _e: backoff_delay(n, 0.1, 1.0, rand=lambda: 0.0),
        sleep=sleeps,
        on_retry=lambda n, e, s: seen.append((n, str(e), s)),
    )
    assert result == "ok" and len(calls) == 3
    assert sleeps == pytest.approx([0.1, 0.2])
    assert seen == [(0, "try 1", pytest.approx(0.1)), (1, "try 2", pytest.approx(0.2))]


async def test_last_error_and_non_retryable_errors_propagate_unchanged() -> None:
    async def fail() -> None:
        raise ConnectionError("down")

    sleeps = Sleeps()
    with pytest.raises(ConnectionError, match="down"):
        await retry(fail, attempts=3, retryable=lambda e: True, delay=lambda n, e: 0.5, sleep=sleeps)
    assert sleeps == [0.5, 0.5]

    async def wrong() -> None:
        raise ValueError("bad request")

    sleeps.clear()
    with pytest.raises(ValueError, match="bad request"):
        await retry(
            wrong,
            attempts=3,
            retryable=lambda e: isinstance(e, ConnectionError),
            delay=lambda n, e: 0.5,
            sleep=sleeps,
        )
    assert sleeps == []


async def test_delay_may_give_up_early_and_attempts_must_be_positive() -> None:
    async def fail() -> None:
        raise ConnectionError("down")

    def too_long(_n: int, _e: Exception) -> float:
        raise TimeoutError("no time left before the deadline")

    with pytest.raises(TimeoutError, match="deadline"):
        await retry(fail, attempts=5, retryable=lambda e: True, delay=too_long, sleep=Sleeps())
    with pytest.raises(ValueError, match="at least one attempt"):
        await retry(fail, attempts=0, retryable=lambda e: True, delay=lambda n, e: 0.0)
