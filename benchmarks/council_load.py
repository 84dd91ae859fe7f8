"""The council under load: concurrent ``POST /magi/ask`` cost no process each, and little more time than one.

One local Ray, the ``magi`` Serve app on 127.0.0.1 (``--replicas`` replicas), the shipped scripted
model answering every call after ``--latency`` seconds, ``--rounds`` debate rounds. In one run:

1. Warm-up: one ask (the three resident sages start here, once per cluster).
2. Baseline: ``--baseline`` asks one at a time: the median wall time and ``setupMs`` (opening its
   conversations on the sages) of one ask alone.
3. Load: ``--concurrency`` asks at once (a bounded async client): wall time, answers, ``setupMs``.
4. Runs: one ask with ``runs: --runs`` (that many deliberations at once on the same sages).

Ray worker processes (this process tree's ``default_worker.py`` processes, titled ``ray::...``
once they host something: replicas, sages, Serve's controller and proxy, idle workers) and their
resident memory are counted before and after 3 and 4: none may start per ask.
Prints JSON with ``wall_ratio_vs_one_ask`` (load wall time / one ask's; <= 2 expected), the warm
asks' ``setupMs`` and the conversations the sages hold at the end (0: none leaked).
Usage: .venv/bin/python benchmarks/council_load.py [--concurrency 20] [--latency 0.5] [--rounds 1]
[--replicas 1] [--runs 50] [--baseline 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import time
from pathlib import Path
from typing import Any

import httpx

from core.runtime import RayRuntime, start_ray, stop_ray
from core.settings import Settings, load_settings
from magi.scripted import LATENCY_ENV

QUESTION = (
    "Should the support team adopt a four-day work week?\n"
    "magi-script: melchior=APPROVE balthasar=DENY casper=CONDITIONAL,APPROVE"
)
WORKER_MARKS = (b"default_worker.py", b"ray::")  # an idle worker's command line; a busy one's title


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found += children.get(pid, [])
        todo += children.get(pid, [])
    return found


def ray_workers() -> dict[str, int]:
    """Ray worker processes under this process, and their summed resident memory (MB)."""
    count, rss = 0, 0
    for pid in _descendants(os.getpid()):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            if not cmdline.startswith(WORKER_MARKS[1]) and WORKER_MARKS[0] not in cmdline:
                continue
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        count += 1
        rss += next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
    return {"processes": count, "rss_mb": rss // 1024}


def settings(replicas: int, rounds: int, concurrency: int, runs: int) -> Settings:
    return load_settings(
        None,
        {
            # the cluster-wide LLM limit must not be what is measured: every sage call may run at once
            "llm": {"provider": "python:magi.scripted:respond", "max_concurrency": 4 * concurrency},
            "council": {"rounds": rounds, "early_stop": "off", "timeout_s": 600, "replicas": replicas},
            "serve": {"client_in_flight": concurrency + 1, "max_runs": runs},
        },
    )


async def ask(client: httpx.AsyncClient, **extra: Any) -> tuple[float, dict[str, Any]]:
    started = time.monotonic()
    answer = await client.post("/magi/ask", json={"prompt": QUESTION, **extra})
    elapsed = time.monotonic() - started
    answer.raise_for_status()
    body: dict[str, Any] = answer.json()
    return elapsed, body


async def drive(base_url: str, concurrency: int, runs: int, baseline: int) -> dict[str, Any]:
    limits = httpx.Limits(max_connections=concurrency + 4)
    async with httpx.AsyncClient(base_url=base_url, timeout=900, limits=limits) as client:
        warm_s, warm = await ask(client)
        alone = [await ask(client) for _ in range(baseline)]  # one at a time: the median is the baseline
        one_s = statistics.median(s for s, _ in alone)
        one_setup = statistics.median(body["timings"]["setupMs"] for _, body in alone)
        idle = ray_workers()
        started = time.monotonic()
        loaded = await asyncio.gather(*(ask(client) for _ in range(concurrency)))
        load_s = time.monotonic() - started
        after_load = ray_workers()
        runs_s, report = await ask(client, runs=runs)
        after_runs = ray_workers()
    setups = [body["timings"]["setupMs"] for _, body in loaded]
    return {
        "first_ask_s": round(warm_s, 3),
        "first_ask_setup_ms": warm["timings"]["setupMs"],
        "baseline_asks": baseline,
        "one_ask_s": round(one_s, 3),
        "one_ask_setup_ms": one_setup,
        "one_ask_setup_ms_max": max(body["timings"]["setupMs"] for _, body in alone),
        "concurrent_asks": concurrency,
        "concurrent_wall_s": round(load_s, 3),
        "wall_ratio_vs_one_ask": round(load_s / one_s, 2),
        "concurrent_answers": len(loaded),
        "concurrent_decisions": sorted({body["decision"] for _, body in loaded}),
        "concurrent_setup_ms": {"median": statistics.median(setups), "max": max(setups)},
        "ray_workers_before_load": idle,
        "ray_workers_after_load": after_load,
        "processes_started_by_load": after_load["processes"] - idle["processes"],
        "runs": runs,
        "runs_wall_s": round(runs_s, 3),
        "runs_deliberations": len(report["deliberations"]),
        "runs_failures": sum(len(d["failures"]) for d in report["deliberations"]),
        "ray_workers_after_runs": after_runs,
        "processes_started_by_runs": after_runs["processes"] - after_load["processes"],
    }


async def held() -> dict[str, int]:
    from magi.seats import held_conversations
    from magi.settings import CouncilSettings

    runtime = RayRuntime()
    try:
        return await held_conversations(runtime, CouncilSettings())
    finally:
        await runtime.close()


def measure(args: argparse.Namespace) -> dict[str, Any]:
    from ray import serve

    from deployments import proxy
    from deployments.magi import APP_NAME, ROUTE_PREFIX, build_app

    os.environ[LATENCY_ENV] = str(args.latency)  # before Ray starts: its workers inherit it
    config = settings(args.replicas, args.rounds, args.concurrency, args.runs)
    start_ray(config)
    port = _free_port()
    try:
        proxy.start_serve("127.0.0.1", port)
        serve.run(build_app(config), name=APP_NAME, route_prefix=ROUTE_PREFIX)
        result = asyncio.run(drive(f"http://127.0.0.1:{port}", args.concurrency, args.runs, args.baseline))
        result["conversations_held_at_end"] = asyncio.run(held())
        serve.shutdown()
    finally:
        stop_ray()
    return {"latency_s": args.latency, "rounds": args.rounds, "replicas": args.replicas, **result}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--concurrency", type=int, default=20, help="asks sent at once")
    parser.add_argument("--latency", type=float, default=0.5, help="seconds per scripted LLM call")
    parser.add_argument("--rounds", type=int, default=1, help="debate rounds")
    parser.add_argument("--replicas", type=int, default=1, help="replicas of the magi app (council.replicas)")
    parser.add_argument("--runs", type=int, default=50, help="deliberations of the one 'runs' ask")
    parser.add_argument("--baseline", type=int, default=5, help="asks sent one at a time for the baseline (median)")
    print(json.dumps(measure(parser.parse_args()), indent=2))


if __name__ == "__main__":
    main()
