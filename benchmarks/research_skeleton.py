"""Walking-skeleton research: 3 agents as Ray actors vs the same agents one after another.

Prints JSON: wall seconds of each, the speedup (sequential / parallel), and the peak memory of
the whole process tree (driver + Ray + actors), sampled from /proc while each run is in flight.
Usage: .venv/bin/python benchmarks/research_skeleton.py [--topic TOPIC] [--agents N]
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from pathlib import Path

from core.events import ListSink
from core.runtime import InProcessRuntime, RayRuntime, start_ray, stop_ray
from core.settings import load_settings
from research.engine import run_research


def tree_rss_mb(root: int) -> float:
    """Resident memory of ``root`` and every descendant, from /proc (Linux)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(entry.name))
            rss[int(entry.name)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            continue
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        total += rss.get(pid, 0)
        stack.extend(children.get(pid, []))
    return total / 1e6


class PeakSampler:
    def __init__(self) -> None:
        self.peak_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak_mb = max(self.peak_mb, tree_rss_mb(os.getpid()))
            time.sleep(0.2)

    def __enter__(self) -> PeakSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--topic", default="中小企業の価格転嫁の現状")
    parser.add_argument("--agents", type=int, default=3)
    args = parser.parse_args()
    settings = load_settings(research_agents=args.agents)

    with PeakSampler() as sequential_peak:
        started = time.perf_counter()
        runtime = InProcessRuntime(max_workers=1)  # the baseline: agents one after another, one process
        sequential = run_research(args.topic, settings, runtime, ListSink())
        sequential_s = time.perf_counter() - started
        runtime.shutdown()

    with PeakSampler() as ray_peak:
        started = time.perf_counter()
        start_ray(settings)
        ray_started_s = time.perf_counter() - started
        ray_runtime = RayRuntime()
        parallel = run_research(args.topic, settings, ray_runtime, ListSink())
        ray_runtime.close()
        parallel_s = time.perf_counter() - started
        stop_ray()

    print(json.dumps({
        "agents": args.agents,
        "cpus": os.cpu_count(),
        "sequential_in_process_s": round(sequential_s, 2),
        "ray_parallel_s_including_ray_start": round(parallel_s, 2),
        "ray_start_s": round(ray_started_s, 2),
        "speedup_vs_sequential": round(sequential_s / parallel_s, 2),
        "speedup_excluding_ray_start": round(sequential_s / (parallel_s - ray_started_s), 2),
        "distinct_sources": {"sequential": len(sequential.sources), "ray": len(parallel.sources)},
        "peak_tree_rss_mb": {"sequential": round(sequential_peak.peak_mb), "ray": round(ray_peak.peak_mb)},
    }, indent=2))


if __name__ == "__main__":
    main()
