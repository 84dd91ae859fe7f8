import asyncio
import time

from core.events import ListSink, parse_event
from core.runtime import InProcessRuntime
from research.events import AgentCompleted, StageProgress


def test_events_round_trip_through_json() -> None:
    event = StageProgress(run_id="r", iteration=1, agent_id=2, stage="fetch", done=3, total=8)
    again = parse_event(event.model_dump(mode="json"))
    assert again == event and isinstance(again, StageProgress)
    assert again.ts.tzinfo is not None


class Worker:
    def __init__(self, name: str) -> None:
        self.name = name

    def hello(self, who: str) -> str:
        return f"{self.name} greets {who}"

    async def slow(self, seconds: float) -> str:
        await asyncio.sleep(seconds)
        return "late"

    def boom(self) -> None:
        raise ValueError("broken agent")


def test_in_process_runtime_gathers_values_errors_and_timeouts() -> None:
    runtime = InProcessRuntime()
    worker = runtime.spawn(Worker, "w1")
    calls = [runtime.call(worker, "hello", "you"), runtime.call(worker, "boom"), runtime.call(worker, "slow", 2.0)]
    started = time.perf_counter()
    ok, failed, late = runtime.gather(calls, timeout_s=0.5)
    assert time.perf_counter() - started < 1.5
    assert ok.ok and ok.value == "w1 greets you"
    assert isinstance(failed.error, ValueError) and not failed.timed_out
    assert late.timed_out and not late.ok
    runtime.shutdown()


def test_list_sink_keeps_order() -> None:
    sink = ListSink()
    for i in range(3):
        sink.emit(AgentCompleted(iteration=1, agent_id=i, duration_ms=1, success=True))
    assert [e.agent_id for e in sink.events if isinstance(e, AgentCompleted)] == [0, 1, 2]
