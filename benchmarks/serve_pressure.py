"""Back-pressure of the ``research`` Serve app: a burst of POSTs against one replica with a bounded queue.

Everything runs in one invocation on a local Ray, so the figures compare like with like:
1. Baseline: ``--baseline`` tiny runs (1 agent, 1 iteration, the bundled corpus) POSTed one after
   the other, each followed to its end: seconds per run when nothing waits.
2. Pressure: ``--burst`` POSTs at once against a replica whose queue holds ``--queue`` runs; the
   accepted ones are followed to their end (bounded by ``--deadline`` seconds).

Prints JSON: accepted, refused (429, each with Retry-After), other answers, completed, failed, lost
(accepted but never finished, or missing: must be 0), peak memory (RSS) of this process tree (Ray's
processes are its children), and ``seconds_per_run_ratio``: seconds per run under pressure / baseline.
Usage: .venv/bin/python benchmarks/serve_pressure.py [--burst 100] [--queue 10] [--baseline 10]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from core.resources import data_path
from core.settings import load_settings

TOPIC = "中小企業の価格転嫁の現状"
TERMINAL = {"completed", "failed"}


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(parent, []).append(int(entry))
    return tree


def tree_rss_bytes(root: int) -> int:
    """Resident memory of ``root`` and all its descendants, from /proc (Linux)."""
    tree = _children()
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo += tree.get(pid, [])
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            continue
    return total


class PeakMemory:
    """Samples the process tree's RSS in a thread until stopped; keeps the peak."""

    def __init__(self, interval_s: float = 0.5) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(interval_s,), daemon=True)

    def _run(self, interval_s: float) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, tree_rss_bytes(os.getpid()))
            self._stop.wait(interval_s)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


async def _wait_finished(client: httpx.AsyncClient, run_ids: list[str], deadline: float) -> dict[str, str]:
    """Final status of each run, polled until every one is finished or the deadline passes."""
    status: dict[str, str] = {}
    while time.monotonic() < deadline:
        for run_id in run_ids:
            if status.get(run_id) in TERMINAL:
                continue
            answer = await client.get(f"/research/{run_id}")
            status[run_id] = answer.json()["status"] if answer.status_code == 200 else f"http {answer.status_code}"
        if all(status.get(r) in TERMINAL for r in run_ids):
            break
        await asyncio.sleep(0.5)
    return status


async def measure(base: str, args: argparse.Namespace) -> dict[str, Any]:
    body = {"topic": TOPIC, "agents": 1, "iterations": 1, "corpus": str(data_path("corpus"))}
    async with httpx.AsyncClient(base_url=base, timeout=120) as client:
        started = time.monotonic()
        for _ in range(args.baseline):
            answer = await client.post("/research", json=body)
            answer.raise_for_status()
            await _wait_finished(client, [answer.json()["runId"]], time.monotonic() + args.deadline)
        baseline_s = (time.monotonic() - started) / max(args.baseline, 1)

        with PeakMemory() as memory:
            started = time.monotonic()
            answers = await asyncio.gather(*(client.post("/research", json=body) for _ in range(args.burst)))
            accepted = [a.json()["runId"] for a in answers if a.status_code == 202]
            refused = [a for a in answers if a.status_code == 429]
            final = await _wait_finished(client, accepted, started + args.deadline)
            burst_s = time.monotonic() - started
    completed = sum(1 for s in final.values() if s == "completed")
    failed = sum(1 for s in final.values() if s == "failed")
    per_run = burst_s / max(completed + failed, 1)
    return {
        "burst": args.burst,
        "queue_size": args.queue,
        "accepted": len(accepted),
        "refused_429": len(refused),
        "refused_with_retry_after": sum(1 for a in refused if a.headers.get("Retry-After")),
        "other_answers": len(answers) - len(accepted) - len(refused),
        "completed": completed,
        "failed": failed,
        "lost": len(accepted) - completed - failed,
        "burst_seconds": round(burst_s, 2),
        "baseline_runs": args.baseline,
        "baseline_seconds_per_run": round(baseline_s, 2),
        "seconds_per_run_under_pressure": round(per_run, 2),
        "seconds_per_run_ratio": round(per_run / baseline_s, 3) if baseline_s else None,
        "peak_memory_mb": round(memory.peak / 2**20, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--burst", type=int, default=100, help="POSTs sent at once")
    parser.add_argument("--queue", type=int, default=10, help="serve.queue_size of the replica")
    parser.add_argument("--baseline", type=int, default=10, help="sequential runs of the baseline")
    parser.add_argument("--deadline", type=float, default=900.0, help="seconds the burst may take in all")
    parser.add_argument("--cpus", type=int, default=2, help="CPUs of the local Ray")
    args = parser.parse_args()

    import ray
    from ray import serve

    from deployments import proxy
    from deployments.research import APP_NAME, ROUTE_PREFIX, build_app

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    with tempfile.TemporaryDirectory(prefix="magi-pressure-") as tmp:
        # one client bursts here: its share of the queue is the whole queue (serve.client_queue)
        bounds = {"queue_size": args.queue, "client_queue": args.queue}
        settings = load_settings(overrides={"data_dir": tmp, "serve": bounds})
        ray.init(address="local", num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
        try:
            proxy.start_serve("127.0.0.1", port)
            serve.run(build_app(settings), name=APP_NAME, route_prefix=ROUTE_PREFIX)
            result = asyncio.run(measure(f"http://127.0.0.1:{port}", args))
        finally:
            serve.shutdown()  # type: ignore[no-untyped-call]
            ray.shutdown()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
