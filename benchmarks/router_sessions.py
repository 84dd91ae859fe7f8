"""Many router sessions at once: what 1,000 live conversations cost the cluster.

One local Ray, the ``router`` Serve app on ``--replicas`` replicas (SQLite store in a temp folder).
1. Idle: after one warm-up request, the Ray worker processes (``ray::...`` in this process tree) and
   the tree's total RSS: the baseline of the same run.
2. Load: a bounded async client on 127.0.0.1 opens ``--sessions`` sessions (``--turns`` turns each, a
   first question then follow-ups; ``--concurrency`` at once, ``--limit-s`` at most), every request
   naming its session in the ``serve_multiplexed_model_id`` header as clients do.
3. After: processes and RSS again, the sessions each replica holds active (its ``/healthz`` part,
   asked through the session affinity of a session the replica hosts) and the sessions in the store.

Also, in process: the memory one idle session costs a session host (tracemalloc, the same turns).

Prints JSON: seconds to open every session, requests, errors (by kind), p50/p99 (ms), worker
processes and RSS idle and after, their differences (targets: processes unchanged, RSS growth
<= 300 MB, 0 errors, all sessions active within 60 s), RSS growth per session, and ``ratio_rss``
(after / idle).
Usage: .venv/bin/python benchmarks/router_sessions.py [--sessions 1000] [--turns 2] [--replicas 2]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import socket
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import httpx

QUESTIONS = ("エンジニアカフェの営業時間は？", "日曜日は？", "What about Saturday?", "料金はいくら？")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def ray_processes(root: int) -> dict[str, Any]:
    """Processes under ``root`` (this driver: a local Ray's processes are its descendants): how many are
    Ray workers (``ray::`` titles: actors, replicas, idle workers) and the RSS of the whole tree."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                stat = Path(f"/proc/{entry}/stat").read_text()
                children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
    workers, rss, todo = [], 0, list(children.get(root, []))
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        with contextlib.suppress(OSError):
            title = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
            if title.startswith("ray::"):
                workers.append(title)
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    rss += int(line.split()[1]) * 1024
    return {"workers": len(workers), "worker_titles": sorted(workers), "rss_mb": round(rss / 2**20, 1)}


async def open_sessions(base: str, args: argparse.Namespace) -> dict[str, Any]:
    """Every session's turns, at most ``concurrency`` requests at once, within ``limit_s``."""
    from deployments.affinity import session_headers

    latencies: list[float] = []
    errors: dict[str, int] = {}
    pending = [(f"visitor-{s}", t) for t in range(args.turns) for s in range(args.sessions)]
    pending.reverse()  # every session's first turn before any follow-up
    deadline = time.monotonic() + args.limit_s
    limits = httpx.Limits(max_connections=args.concurrency, max_keepalive_connections=args.concurrency)
    async with httpx.AsyncClient(base_url=base, timeout=60, limits=limits) as client:

        async def worker() -> None:
            while pending and time.monotonic() < deadline:
                session, turn = pending.pop()
                body = {"query": QUESTIONS[turn % len(QUESTIONS)], "sessionId": session}
                start = time.perf_counter()
                try:
                    answer = await client.post("/router/route", json=body, headers=session_headers(session))
                except httpx.HTTPError as exc:
                    errors[type(exc).__name__] = errors.get(type(exc).__name__, 0) + 1
                    continue
                if answer.status_code != 200:
                    errors[str(answer.status_code)] = errors.get(str(answer.status_code), 0) + 1
                    continue
                latencies.append((time.perf_counter() - start) * 1000)

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(args.concurrency)))
        seconds = time.perf_counter() - started
    return {
        "seconds": round(seconds, 2),
        "requests": len(latencies) + sum(errors.values()),
        "unsent": len(pending),
        "errors": sum(errors.values()) + len(pending),
        "error_kinds": errors,
        "p50_ms": round(_percentile(latencies, 0.5), 2),
        "p99_ms": round(_percentile(latencies, 0.99), 2),
    }


async def active_per_replica(base: str) -> dict[str, str]:
    """Each replica's own count of active sessions: its /healthz, reached through the affinity of a
    session id that ranks that replica first."""
    import ray

    from deployments.affinity import affinity_rank, session_headers

    prefix = "SERVE_REPLICA::router#RouterService#"
    names = [a["name"] for a in ray.util.list_named_actors(all_namespaces=True) if a["name"].startswith(prefix)]
    replicas = [name.removeprefix(prefix) for name in names]
    report = {}
    async with httpx.AsyncClient(base_url=base, timeout=30) as client:
        for replica in replicas:
            probe = next(f"probe-{i}" for i in range(10_000) if affinity_rank(f"probe-{i}", replicas)[0] == replica)
            health = (await client.get("/router/healthz", headers=session_headers(probe))).json()
            report[replica] = health["parts"]["sessions"]["detail"]
    return report


def host_memory(sessions: int, turns: int) -> dict[str, Any]:
    """Bytes a session host keeps per idle session after ``turns`` routed turns (tracemalloc, in process)."""
    from core.store import Store
    from router.conversation import Turn
    from sessions.gateway import SessionHost
    from sessions.models import SessionPolicy
    from sessions.store import SessionRepository

    async def run() -> float:
        policy = SessionPolicy()
        host = SessionHost(SessionRepository(Store(f"sqlite:///{tempfile.mkdtemp()}/s.sqlite3")), policy)
        await host.update("warm", "", Turn(QUESTIONS[0], 0.5, policy))
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        for turn in range(turns):
            for s in range(sessions):
                await host.update(f"s{s}", "", Turn(QUESTIONS[turn % len(QUESTIONS)], 0.5, policy))
        gc.collect()
        used = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        return used / sessions

    return {"sessions": sessions, "turns_each": turns, "kib_per_idle_session": round(asyncio.run(run()) / 1024, 2)}


async def over_http(args: argparse.Namespace) -> dict[str, Any]:
    import ray
    from ray import serve

    from core.settings import load_settings
    from deployments import proxy
    from deployments.router import build_app

    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    overrides = {
        "data_dir": Path(tempfile.mkdtemp(prefix="router-sessions-")),
        "router": {"replicas": args.replicas},
        "sessions": {"max_per_client": args.sessions + 10},
    }
    try:
        proxy.start_serve("127.0.0.1", port)
        serve.run(build_app(load_settings(overrides=overrides)), name="router", route_prefix="/router")
        async with httpx.AsyncClient(base_url=base, timeout=60) as client:
            for i in range(4):  # every replica routes once: rules and dictionary loaded
                await client.post("/router/route", json={"query": QUESTIONS[0], "sessionId": f"warm-{i}"})
        await asyncio.sleep(args.settle_s)
        idle = ray_processes(os.getpid())
        load = await open_sessions(base, args)
        await asyncio.sleep(args.settle_s)
        after = ray_processes(os.getpid())
        active = await active_per_replica(base)
        from core.store import open_store

        store = open_store(load_settings(overrides=overrides))
        stored = store.query("SELECT COUNT(*) FROM sessions WHERE session_id LIKE 'router-%'")[0][0]
        growth = after["rss_mb"] - idle["rss_mb"]
        return {
            "replicas": args.replicas,
            "load": load,
            "idle": idle,
            "after": after,
            "active_per_replica": active,
            "sessions_in_store": int(stored),
            "worker_processes_added": after["workers"] - idle["workers"],
            "rss_growth_mb": round(growth, 1),
            "rss_growth_kib_per_session": round(growth * 1024 / args.sessions, 1),
            "ratio_rss": round(after["rss_mb"] / idle["rss_mb"], 3),
            "within_limit_s": load["seconds"] <= args.limit_s and load["unsent"] == 0,
        }
    finally:
        serve.shutdown()
        ray.shutdown()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=2, help="turns per session (a first question, follow-ups)")
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--limit-s", type=float, default=60.0, help="time allowed to open every session")
    parser.add_argument("--settle-s", type=float, default=3.0, help="pause before each measurement")
    args = parser.parse_args(argv)
    report: dict[str, Any] = {"in_process": host_memory(min(args.sessions, 1000), args.turns)}
    with contextlib.redirect_stdout(sys.stderr):  # Ray's own messages stay off the JSON
        report["http"] = asyncio.run(over_http(args))
    sys.stdout.write(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
