"""The runtime seam in process: calls by method reference, gather with timeouts, keyed agents, events."""

from __future__ import annotations

import asyncio

from core.events import ListSink, parse_event
from core.runtime import InProcessRuntime
from research.events import AgentCompleted, StageProgress


class Worker:
    def __init__(self, name: str) -> None:
        self.name = name
        self.cancelled = False
        self.count = 0

    def hello(self, who: str) -> str:
        return f"{self.name} greets {who}"

    async def slow(self, seconds: float) -> str:
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return "late"

    def boom(self) -> None:
        raise ValueError("broken agent")

    async def bump(self) -> int:
        self.count += 1
        return self.count


def test_events_round_trip_through_json() -> None:
    event = StageProgress(run_id="r", iteration=1, agent_id=2, stage="fetch", done=3, total=8)
    again = parse_event(event.model_dump(mode="json"))
    assert again == event and isinstance(again, StageProgress)
    assert again.ts.tzinfo is not None


def test_an_unknown_event_type_still_parses_as_a_plain_event() -> None:
    event = parse_event({"type": "somethingNew", "runId": "r"})
    assert type(event).__name__ == "Event" and event.type == "somethingNew" and event.run_id == "r"


async def test_gather_returns_values_errors_and_timeouts_and_cancels_the_late() -> None:
    runtime = InProcessRuntime()
    worker = runtime.spawn(Worker, "w1")
    calls = [worker.call(Worker.hello, "you"), worker.call(Worker.boom), runtime.call(worker, Worker.slow, 30.0)]
    ok, failed, late = await runtime.gather(calls, timeout_s=0.3)
    assert ok.ok and ok.value == "w1 greets you"
    assert isinstance(failed.error, ValueError) and not failed.timed_out
    assert late.timed_out and not late.ok and "timed out" in str(late.error)
    await asyncio.sleep(0)  # let the cancelled call see its CancelledError
    assert worker.target.cancelled
    await runtime.close()


async def test_keyed_agents_are_created_once_per_key_and_namespace() -> None:
    runtime = InProcessRuntime()
    first = await runtime.get_or_create(Worker, "a", key="session-1")
    again = await runtime.get_or_create(Worker, "ignored", key="session-1")  # args only count at creation
    other = await runtime.get_or_create(Worker, "b", key="session-2")
    elsewhere = await runtime.get_or_create(Worker, "c", key="session-1", namespace="tenant-2")
    assert await first.call(Worker.bump) == 1 and await again.call(Worker.bump) == 2
    assert again.target is first.target and again.target.name == "a"
    assert other.target is not first.target and elsewhere.target is not first.target
    runtime.kill(first)  # a killed keyed agent is created anew on the next get
    fresh = await runtime.get_or_create(Worker, "d", key="session-1")
    assert fresh.target is not first.target and await fresh.call(Worker.bump) == 1
    await runtime.close()


async def test_a_forgotten_resident_agent_is_made_anew_and_nothing_in_process_is_lost() -> None:
    runtime = InProcessRuntime()
    first = await runtime.get_or_create(Worker, "a", key="sage", detached=True)
    assert (await runtime.get_or_create(Worker, "b", key="sage", detached=True)) is first
    assert not runtime.lost(RuntimeError("an agent's own error"))  # an object here never dies under a call
    runtime.forget(first)
    fresh = await runtime.get_or_create(Worker, "c", key="sage", detached=True)
    assert fresh is not first and fresh.target.name == "c"
    await runtime.close()


async def test_concurrent_get_or_create_makes_one_agent() -> None:
    runtime = InProcessRuntime()
    handles = await asyncio.gather(*(runtime.get_or_create(Worker, str(i), key="k") for i in range(20)))
    assert len({id(h.target) for h in handles}) == 1
    await runtime.close()


def test_list_sink_keeps_order() -> None:
    sink = ListSink()
    for i in range(3):
        sink.emit(AgentCompleted(iteration=1, agent_id=i, duration_ms=1, success=True))
    assert [e.agent_id for e in sink.events if isinstance(e, AgentCompleted)] == [0, 1, 2]
