"""The in-process limiter (Ray not initialised): permits, a pause for all callers, release on error/cancel, expiry.

Time is a fake clock where a test needs to move it; the providers are the shipped FunctionClient and
ScriptedClient. The cluster-wide actor is tested in tests/integration/test_llm_limiter_cluster.py.
"""

from __future__ import annotations

import asyncio

import pytest

from core.errors import LLMError
from core.llm import LimitedClient, LLMRequest, LLMResponse, Message
from core.llm.limiter import LocalLimiter, PermitBook, report_rate_limit, shared_limiter
from core.llm.streaming import StreamEnd, stream
from core.llm.testing import FunctionClient, ScriptedClient

REQUEST = LLMRequest(system="s", messages=[Message(role="user", content="q")])


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class InFlight:
    """A provider that counts the calls inside it and remembers the most at once."""

    def __init__(self) -> None:
        self.current = 0
        self.peak = 0
        self.calls = 0

    async def __call__(self, request: LLMRequest) -> str:
        self.current += 1
        self.calls += 1
        self.peak = max(self.peak, self.current)
        try:
            for _ in range(5):
                await asyncio.sleep(0)
            return "ok"
        finally:
            self.current -= 1


async def settle(rounds: int = 20) -> None:
    for _ in range(rounds):
        await asyncio.sleep(0.001)


def test_permit_book_rules() -> None:
    clock = Clock()
    book = PermitBook(2, clock)
    assert book.try_acquire("a", 10) is None and book.try_acquire("b", 10) is None
    assert book.try_acquire("c", 10) == pytest.approx(10.0)  # full: the next expiry is 10 s away
    book.release("a")
    assert book.try_acquire("c", 10) is None and book.peak == 2
    book.pause(5)
    book.release("b")
    assert book.try_acquire("d", 10) == pytest.approx(5.0)  # paused although a permit is free
    clock.now += 5
    assert book.try_acquire("d", 10) is None
    clock.now += 10  # c and d were never renewed: both expire
    assert book.state()["in_use"] == 0 and book.expired == 2
    book.release("never-granted")  # a withdrawn request is refused when it comes in late
    assert book.try_acquire("never-granted", 10) == -1.0


async def test_at_most_the_permitted_calls_run_at_once() -> None:
    provider = InFlight()
    limiter = LocalLimiter(3)
    client = LimitedClient(FunctionClient(provider), 3, limiter)

    async def run() -> list[LLMResponse]:
        return await asyncio.gather(*(client.complete(REQUEST) for _ in range(12)))

    answers = await run()
    assert [a.text for a in answers] == ["ok"] * 12
    assert provider.peak == 3 and provider.calls == 12
    assert limiter.state()["in_use"] == 0 and limiter.book.granted == 12


async def test_a_rate_limit_pauses_every_caller_until_retry_after() -> None:
    clock = Clock()
    limiter = LocalLimiter(4, clock=clock)
    rate_limited = LLMError("HTTP 429", status_code=429, retry_after_s=30.0, retryable=True)
    first = LimitedClient(ScriptedClient(rate_limited), 4, limiter)
    provider = InFlight()
    others = LimitedClient(FunctionClient(provider), 4, limiter)

    async def run() -> None:
        with pytest.raises(LLMError):
            await first.complete(REQUEST)
        waiting = [asyncio.create_task(others.complete(REQUEST)) for _ in range(3)]
        await settle()
        assert provider.calls == 0  # nobody starts while the cluster is paused
        clock.now += 30
        await asyncio.gather(*waiting)
        assert provider.calls == 3

    await run()


async def test_a_rate_limit_reported_during_a_call_pauses_the_others() -> None:
    clock = Clock()
    limiter = LocalLimiter(4, clock=clock)

    def adapter_saw_529(request: LLMRequest) -> str:  # what the Anthropic adapter does on a 529 + retry-after
        report_rate_limit(12.0)
        return "retried fine"

    provider = InFlight()

    async def run() -> None:
        answer = await LimitedClient(FunctionClient(adapter_saw_529), 4, limiter).complete(REQUEST)
        assert answer.text == "retried fine"
        assert limiter.state()["paused_for_s"] == pytest.approx(12.0)
        task = asyncio.create_task(LimitedClient(FunctionClient(provider), 4, limiter).complete(REQUEST))
        await settle()
        assert provider.calls == 0
        clock.now += 12
        await task

    await run()


async def test_permits_come_back_after_errors_and_cancellation() -> None:
    limiter = LocalLimiter(1)
    started = asyncio.Event()

    async def hang(request: LLMRequest) -> str:
        started.set()
        await asyncio.Event().wait()
        return "never"

    async def run() -> None:
        with pytest.raises(ValueError, match="provider bug"):
            await LimitedClient(ScriptedClient(ValueError("provider bug")), 1, limiter).complete(REQUEST)
        assert limiter.state()["in_use"] == 0
        holder = asyncio.create_task(LimitedClient(FunctionClient(hang), 1, limiter).complete(REQUEST))
        await started.wait()
        waiter = asyncio.create_task(LimitedClient(ScriptedClient("x"), 1, limiter).complete(REQUEST))
        await settle()
        waiter.cancel()  # cancelled while waiting for a permit
        holder.cancel()  # cancelled while holding one
        for task in (waiter, holder):
            with pytest.raises(asyncio.CancelledError):
                await task
        assert limiter.state()["in_use"] == 0
        assert (await LimitedClient(ScriptedClient("free"), 1, limiter).complete(REQUEST)).text == "free"

    await run()


async def test_a_dead_callers_lease_expires() -> None:
    clock = Clock()
    limiter = LocalLimiter(1, ttl_s=20.0, clock=clock)

    async def run() -> None:
        await limiter.acquire("crashed-worker")  # never released, never renewed
        task = asyncio.create_task(LimitedClient(ScriptedClient("after expiry"), 1, limiter).complete(REQUEST))
        await settle()
        assert not task.done()
        clock.now += 20
        assert (await task).text == "after expiry"

    await run()


async def test_stream_holds_a_permit_until_it_ends() -> None:
    limiter = LocalLimiter(2)
    client = LimitedClient(ScriptedClient("streamed text", chunk_size=4), 2, limiter)

    async def run() -> None:
        seen = []
        async for event in stream(client, REQUEST):
            seen.append(limiter.state()["in_use"])
            if isinstance(event, StreamEnd):
                assert event.response.text == "streamed text"
        assert set(seen) == {1}
        assert limiter.state()["in_use"] == 0

    await run()


def test_without_ray_the_process_shares_one_local_limiter() -> None:
    first = shared_limiter(5)
    assert isinstance(first, LocalLimiter) and shared_limiter(2) is first
    assert first.book.permits == 2  # the latest configuration wins
