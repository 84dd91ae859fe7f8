"""The critic's headline figures, against baselines measured in the same run (prints JSON).

1. Parallel vs sequential: the 5 sample ideas through ``evaluate_ideas`` on a local Ray (one
   CriticWorker actor per idea, cache off) against the same 5 judgements made one after another
   in this process. Reported warm (a kept WorkerPool, as the Serve app runs) and cold (the first
   run, which also starts the 5 worker processes: ~2 s on 2 cores). The LLM is the shipped scripted judge with a fixed
   latency (``--latency``, via ``CRITIC_SCRIPTED_LATENCY_S``), so the ratio shows the parallelism,
   not a model's speed. Target: >= 3.5x.
2. Peak memory per worker actor: 5 workers on Ray judge one idea each and report their process's
   peak RSS. Target: <= 512 MB.
3. 100 consecutive evaluations: one long-lived worker actor judges an idea 100 times (after 100
   calls that do nothing, as a baseline of what Ray's own bookkeeping costs), and the driver runs
   the whole engine (in process) 100 times; resident memory after each, and the least-squares
   slope in KB per evaluation, also over the second half (a leak keeps growing; warm-up does not),
   and the growth of live Python objects (tracemalloc) per engine evaluation.

Usage: .venv/bin/python benchmarks/critic_speedup.py [--latency 2.0] [--repeat 100]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import tempfile
import time
import tracemalloc
from typing import Any

from core.resources import data_path
from core.runtime import InProcessRuntime, RayRuntime, start_ray, stop_ray
from core.settings import Settings, load_settings
from critic.engine import WorkerPool, evaluate_ideas
from critic.models import CriticInput, JudgeRequest
from critic.profile import load_profile
from critic.prompt import messages_for, system_prompt
from critic.scripted import LATENCY_ENV
from critic.worker import CriticWorker, current_rss_bytes

MB = 1024 * 1024


def slope(values: list[float]) -> float:
    """Least-squares slope of ``values`` over their index."""
    n = len(values)
    mean_x, mean_y = (n - 1) / 2, statistics.fmean(values)
    num = sum((i - mean_x) * (v - mean_y) for i, v in enumerate(values))
    den = sum((i - mean_x) ** 2 for i in range(n))
    return num / den if den else 0.0


def request_for(ideas: CriticInput, index: int, settings: Settings) -> JudgeRequest:
    return JudgeRequest(
        idea_id=ideas.ideas[index].id,
        system=system_prompt(load_profile()),
        messages=[messages_for(ideas.ideas[index], 1)],
        temperature=0.4,
        max_tokens=900,
    )


async def parallel_vs_sequential(ideas: CriticInput, settings: Settings) -> dict[str, Any]:
    runtime = RayRuntime()
    pool = WorkerPool(runtime, settings.llm, len(ideas.ideas))
    try:
        started = time.perf_counter()
        await evaluate_ideas(ideas, settings, runtime, pool=pool)  # cold: starts the 5 worker processes
        cold_s = time.perf_counter() - started
        started = time.perf_counter()
        out = await evaluate_ideas(ideas, settings, runtime, pool=pool)  # warm: as a long-lived service runs
        parallel_s = time.perf_counter() - started
    finally:
        pool.close()
        await runtime.close()
    worker = CriticWorker()
    started = time.perf_counter()
    for index in range(len(ideas.ideas)):
        await worker.judge(request_for(ideas, index, settings), settings.llm)
    sequential_s = time.perf_counter() - started
    return {
        "ideas": len(ideas.ideas),
        "ok": sum(e.status == "ok" for e in out.evaluations),
        "parallel_warm_s": round(parallel_s, 2),
        "parallel_cold_s": round(cold_s, 2),
        "sequential_s": round(sequential_s, 2),
        "speedup_vs_sequential": round(sequential_s / parallel_s, 2),
        "speedup_cold_vs_sequential": round(sequential_s / cold_s, 2),
        "target": ">= 3.5",
    }


async def worker_memory(ideas: CriticInput, settings: Settings) -> dict[str, Any]:
    runtime = RayRuntime()
    handles = [runtime.spawn(CriticWorker, num_cpus=0) for _ in ideas.ideas]
    try:
        results = await asyncio.gather(
            *(h.call(CriticWorker.judge, request_for(ideas, i, settings), settings.llm) for i, h in enumerate(handles))
        )
        peaks = [r.peak_rss_bytes / MB for r in results]
    finally:
        for handle in handles:
            runtime.kill(handle)
        await runtime.close()
    return {
        "workers": len(peaks),
        "peak_rss_mb_max": round(max(peaks), 1),
        "peak_rss_mb": [round(p, 1) for p in peaks],
        "target_mb": 512,
    }


async def consecutive(ideas: CriticInput, settings: Settings, repeat: int) -> dict[str, Any]:
    runtime = RayRuntime()
    handle = runtime.spawn(CriticWorker, num_cpus=0)
    worker_rss: list[float] = []
    idle_rss: list[float] = []
    try:
        for _ in range(repeat):  # baseline: the same number of actor calls that do no judging
            idle_rss.append((await handle.call(CriticWorker.memory))["rss_bytes"] / 1024)
        for n in range(repeat):
            await handle.call(CriticWorker.judge, request_for(ideas, n % len(ideas.ideas), settings), settings.llm)
            worker_rss.append((await handle.call(CriticWorker.memory))["rss_bytes"] / 1024)
    finally:
        runtime.kill(handle)
        await runtime.close()
    driver_rss: list[float] = []
    one = CriticInput(ideas=ideas.ideas[:1])
    for _ in range(10):  # warm-up: imports, caches, first allocations
        await evaluate_ideas(one, settings, InProcessRuntime())
    gc.collect()
    tracemalloc.start()
    heap_before = tracemalloc.get_traced_memory()[0]
    for _ in range(repeat):
        await evaluate_ideas(one, settings, InProcessRuntime())
        driver_rss.append(current_rss_bytes() / 1024)
    gc.collect()
    heap_growth = tracemalloc.get_traced_memory()[0] - heap_before
    tracemalloc.stop()
    half = repeat // 2
    return {
        "evaluations": repeat,
        "worker_rss_mb_first_last": [round(worker_rss[0] / 1024, 1), round(worker_rss[-1] / 1024, 1)],
        "worker_slope_kb_per_evaluation": round(slope(worker_rss), 2),
        "worker_slope_second_half_kb_per_evaluation": round(slope(worker_rss[half:]), 2),
        "baseline_idle_calls_slope_kb_per_call": round(slope(idle_rss), 2),
        "engine_rss_mb_first_last": [round(driver_rss[0] / 1024, 1), round(driver_rss[-1] / 1024, 1)],
        "engine_slope_kb_per_evaluation": round(slope(driver_rss), 2),
        "engine_slope_second_half_kb_per_evaluation": round(slope(driver_rss[half:]), 2),
        "engine_python_heap_growth_kb_per_evaluation": round(heap_growth / 1024 / repeat, 3),
    }


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    ideas = CriticInput.model_validate_json(data_path("critic", "examples", "ideas.json").read_text(encoding="utf-8"))
    data_dir = tempfile.mkdtemp(prefix="critic-bench-")
    settings = load_settings(
        None, {"data_dir": data_dir, "llm": {"provider": "python:critic.scripted:judge"}, "critic": {"cache": False}}
    )
    os.environ[LATENCY_ENV] = str(args.latency)  # before Ray starts: its workers inherit it
    start_ray(settings)
    try:
        speed = await parallel_vs_sequential(ideas, settings)
        memory = await worker_memory(ideas, settings)
    finally:
        stop_ray()
    os.environ[LATENCY_ENV] = "0"  # the 100 runs measure memory, not time: a fresh Ray without the latency
    start_ray(settings)
    try:
        leak = await consecutive(ideas, settings, args.repeat)
    finally:
        stop_ray()
    return {"latency_s": args.latency, "parallel": speed, "worker_memory": memory, "consecutive": leak}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=2.0, help="scripted LLM latency per call (s)")
    parser.add_argument("--repeat", type=int, default=100, help="consecutive evaluations for the memory slope")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main_async(args)), indent=2))


if __name__ == "__main__":
    main()
