"""The cluster-wide LLM limiter: peak concurrency under load, and what a permit costs per call.

Everything runs in one invocation, so the ratios compare like with like on this machine:
1. A simulated 3-node ``ray.cluster_utils.Cluster``; 20 caller actors spread over the nodes each
   make ``--calls`` LLM calls through ``make_llm`` with ``llm_max_concurrency=4``. The provider is
   this file (``python:benchmarks/llm_limiter.py:answer``): each call reports itself to a counting
   actor and works ``--work-ms``. The counter's peak must be exactly 4; the same load without the
   limiter shows what it prevents.
2. Overhead: one caller makes ``--overhead-calls`` sequential calls to a provider that does
   nothing, through the limiter and straight to the provider, with the Ray actor and with the
   in-process limiter: ms per call and the limited/unlimited ratio.

Prints JSON. Usage: .venv/bin/python benchmarks/llm_limiter.py [--calls N] [--work-ms MS] [--overhead-calls N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

import ray

from core.llm.base import LLMClient, LLMRequest, Message

COUNTER = "bench-llm-counter"
NAMESPACE = "magi-bench"
NODES = 3
CALLERS = 20
PERMITS = 4
PROVIDER = f"python:{Path(__file__).resolve()}:answer"
IDLE = f"python:{Path(__file__).resolve()}:idle"


async def answer(request: LLMRequest) -> str:
    """The provider under load: counted by the counter actor while it works."""
    counter = ray.get_actor(COUNTER, namespace=NAMESPACE)
    await counter.enter.remote()
    try:
        await asyncio.sleep(float(request.system))  # the work time travels in the system prompt
        return "ok"
    finally:
        await counter.leave.remote()


def idle(request: LLMRequest) -> str:
    """A provider that does nothing, to measure the limiter's own cost."""
    return "ok"


@ray.remote(num_cpus=0)
class Counter:
    def __init__(self) -> None:
        self.current = 0
        self.peak = 0
        self.calls = 0

    async def enter(self) -> None:
        self.current += 1
        self.calls += 1
        self.peak = max(self.peak, self.current)

    async def leave(self) -> None:
        self.current -= 1

    async def reset(self) -> None:
        self.current = self.peak = self.calls = 0

    async def stats(self) -> dict[str, int]:
        return {"peak": self.peak, "calls": self.calls}


@ray.remote(num_cpus=0)
class Caller:
    def __init__(self, limited: bool, permits: int) -> None:
        from core.llm import make_llm, provider_of
        from core.settings import load_settings

        client = make_llm(load_settings(overrides={"llm": {"provider": PROVIDER, "max_concurrency": permits}}).llm)
        assert client is not None
        self.client: LLMClient = client if limited else provider_of(client)

    def ready(self) -> str:
        return ray.get_runtime_context().get_node_id()

    async def run(self, calls: int, work_s: float) -> float:
        request = LLMRequest(system=str(work_s), messages=[Message(role="user", content="q")])
        started = time.perf_counter()
        for _ in range(calls):
            await self.client.complete(request)
        return time.perf_counter() - started


def load(limited: bool, calls: int, work_s: float, counter: Any) -> dict[str, Any]:
    ray.get(counter.reset.remote())
    actors = [
        Caller.options(resources={f"node{i % NODES}": 1}).remote(limited, PERMITS)  # type: ignore[attr-defined]
        for i in range(CALLERS)
    ]
    nodes = set(ray.get([a.ready.remote() for a in actors]))
    started = time.perf_counter()
    ray.get([a.run.remote(calls, work_s) for a in actors])
    elapsed = time.perf_counter() - started
    stats = ray.get(counter.stats.remote())
    for actor in actors:
        ray.kill(actor)
    ideal = CALLERS * calls * work_s / (PERMITS if limited else CALLERS)
    return {
        "peak_concurrent_calls": stats["peak"],
        "calls": stats["calls"],
        "nodes_used": len(nodes),
        "seconds": round(elapsed, 3),
        "ideal_seconds": round(ideal, 3),
        "efficiency": round(ideal / elapsed, 3),
    }


async def per_call_ms(client: LLMClient, calls: int) -> float:
    request = LLMRequest(system="", messages=[Message(role="user", content="q")])
    for _ in range(10):  # warm up: imports, the actor handle, the provider function
        await client.complete(request)
    started = time.perf_counter()
    for _ in range(calls):
        await client.complete(request)
    return (time.perf_counter() - started) * 1000 / calls


def overhead(calls: int) -> dict[str, float]:
    from core.llm import make_llm, provider_of
    from core.settings import load_settings

    client = make_llm(load_settings(overrides={"llm": {"provider": IDLE, "max_concurrency": PERMITS}}).llm)
    assert client is not None
    limited = asyncio.run(per_call_ms(client, calls))
    unlimited = asyncio.run(per_call_ms(provider_of(client), calls))
    return {
        "limited_ms_per_call": round(limited, 3),
        "unlimited_ms_per_call": round(unlimited, 3),
        "overhead_ms_per_call": round(limited - unlimited, 3),
        "ratio": round(limited / unlimited, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5, help="calls per caller under load")
    parser.add_argument("--work-ms", type=float, default=100.0, help="time one provider call takes")
    parser.add_argument("--overhead-calls", type=int, default=300)
    args = parser.parse_args()

    in_process = overhead(args.overhead_calls)  # before ray.init: the in-process limiter

    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "resources": {"node0": 100}})
    for n in range(1, NODES):
        cluster.add_node(num_cpus=1, resources={f"node{n}": 100})
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
    try:
        counter = Counter.options(name=COUNTER, namespace=NAMESPACE).remote()  # type: ignore[attr-defined]
        work_s = args.work_ms / 1000
        on_ray = overhead(args.overhead_calls)  # first, on a quiet cluster
        limited = load(True, args.calls, work_s, counter)
        unlimited = load(False, args.calls, work_s, counter)
    finally:
        ray.shutdown()
        cluster.shutdown()
    print(
        json.dumps(
            {
                "callers": CALLERS,
                "nodes": NODES,
                "llm_max_concurrency": PERMITS,
                "calls_per_caller": args.calls,
                "work_ms": args.work_ms,
                "cpus": os.cpu_count(),
                "limited": limited,
                "unlimited": unlimited,
                "peak_is_limit": limited["peak_concurrent_calls"] == PERMITS,
                "overhead_ray_actor": on_ray,
                "overhead_in_process": in_process,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
