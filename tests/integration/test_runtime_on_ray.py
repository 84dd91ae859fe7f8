"""The runtime seam on Ray: the same semantics as in process (tests/unit/test_runtime.py), across processes."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

from core.events import ListSink
from core.runtime import Handle, RayRuntime
from research.events import StageProgress


class Counter:
    def __init__(self, start: int, sink: object | None = None) -> None:
        self.value = start
        self.sink = sink

    async def bump(self) -> int:
        self.value += 1
        if self.sink is not None:
            self.sink.emit(StageProgress(iteration=1, agent_id=self.value, stage="count", done=1, total=1))  # type: ignore[attr-defined]
        return self.value

    def pid(self) -> int:
        return os.getpid()

    async def nap(self, seconds: float) -> str:
        await asyncio.sleep(seconds)
        return "awake"

    async def ask(self, other: Handle[Counter]) -> int:
        """An agent calling another agent through a handle it was given."""
        return await other.call(Counter.bump)


async def test_keyed_actor_is_created_once_and_found_again(ray_cluster: None) -> None:
    runtime = RayRuntime()
    first = await runtime.get_or_create(Counter, 10, key="session-a")
    again = await runtime.get_or_create(Counter, 99, key="session-a")  # args only count at creation
    other = await runtime.get_or_create(Counter, 0, key="session-b")
    assert await first.call(Counter.bump) == 11 and await again.call(Counter.bump) == 12
    assert await other.call(Counter.bump) == 1
    assert await first.call(Counter.pid) == await again.call(Counter.pid) != os.getpid()
    many = await asyncio.gather(*(runtime.get_or_create(Counter, 0, key="session-c") for _ in range(8)))
    assert len({await h.call(Counter.pid) for h in many}) == 1  # concurrent gets: one actor
    for handle in (first, other, many[0]):
        runtime.kill(handle)
    fresh = await runtime.get_or_create(Counter, 5, key="session-a")
    assert await fresh.call(Counter.bump) == 6  # killed: the next get creates it anew
    runtime.kill(fresh)
    await runtime.close()


async def test_gather_times_out_and_handles_pass_between_agents(ray_cluster: None) -> None:
    runtime = RayRuntime()
    events = ListSink()
    a = runtime.spawn(Counter, 0, runtime.event_sink(events), num_cpus=0)
    b = runtime.spawn(Counter, 100, num_cpus=0)
    await asyncio.gather(a.call(Counter.pid), b.call(Counter.pid))  # both processes up before the timed part
    fast, slow = await runtime.gather([a.call(Counter.nap, 0.0), a.call(Counter.nap, 60.0)], timeout_s=5)
    assert fast.value == "awake" and slow.timed_out
    assert await a.call(Counter.ask, b) == 101  # a calls b by method reference, across processes
    await a.call(Counter.bump)
    await runtime.flush_events()
    assert [e.agent_id for e in events.events if isinstance(e, StageProgress)] == [1]
    runtime.kill(a)
    runtime.kill(b)
    await runtime.close()


class Survivor:
    """An agent whose state can be rebuilt: it says whether it is a restarted one."""

    def __init__(self, payload: bytes) -> None:
        self.size = len(payload)

    def pid(self) -> int:
        return os.getpid()

    def restarted(self) -> bool:
        from core.runtime import restarted_actor

        return restarted_actor()

    async def slow_size(self, started: str) -> int:
        Path(started).touch()  # the caller waits for this, then kills the process
        await asyncio.sleep(3600)
        return self.size


async def test_a_restartable_agent_comes_back_and_its_call_is_sent_again(ray_cluster: None, tmp_path: Path) -> None:
    """What a lost node does to a restartable agent (an NLP worker, the collector): its process dies in the
    middle of a call; Ray starts it again from its constructor arguments (a large one: kept by the runtime
    in the object store) and sends the call again, so the caller sees an answer, not an error."""
    runtime = RayRuntime()
    agent = runtime.spawn(Survivor, b"x" * 300_000, num_cpus=0, restarts=1)
    first = await agent.call(Survivor.pid)
    assert not await agent.call(Survivor.restarted)
    started = tmp_path / "started"
    call = agent.call(Survivor.slow_size, str(started))
    while not started.exists():  # the call is running in the agent: now it dies
        await asyncio.sleep(0.05)
    started.unlink()
    os.kill(first, signal.SIGKILL)
    while not started.exists():  # sent again to the restarted agent
        await asyncio.sleep(0.05)
    assert await agent.call(Survivor.restarted) and await agent.call(Survivor.pid) != first
    call.cancel()
    runtime.kill(agent)
    await runtime.close()
