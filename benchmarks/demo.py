"""The demo research (``magi research`` on the bundled corpus): wall time and process-tree memory.

Runs the real CLI twice on a fresh data directory: cold (nothing cached) and warm (page and
analysis caches filled by the first run), and reports the ratio. Memory is the peak resident
size of the CLI's whole process tree (driver, Ray's GCS and raylet, every actor), sampled from
/proc every 0.2 s: ``/usr/bin/time -v`` only reports the largest single process.
Usage: .venv/bin/python benchmarks/demo.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TOPIC = "中小企業の価格転嫁の現状"


def tree_rss_mb(root: int) -> float:
    """Resident memory of ``root`` and every descendant, from /proc (Linux)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
        rss[int(entry.name)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        total += rss.get(pid, 0)
        stack.extend(children.get(pid, []))
    return total / 1e6


def run_demo(data_dir: Path, out: Path) -> dict[str, float]:
    env = {**os.environ, "MAGI_DATA_DIR": str(data_dir)}
    command = [
        sys.executable,
        "-m",
        "cli.main",
        "research",
        TOPIC,
        "--out",
        str(out),
        "--format",
        "json",
        "--no-progress",
    ]
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = 0.0
    while process.poll() is None:
        peak = max(peak, tree_rss_mb(process.pid))
        time.sleep(0.2)
    stdout, stderr = process.communicate()
    if process.returncode != 0:
        raise SystemExit(f"magi research failed: {stderr.strip()}")
    summary = json.loads(stdout)
    return {
        "wall_s": round(time.perf_counter() - started, 2),
        "engine_s": summary["durationMs"] / 1000,
        "peak_tree_rss_mb": round(peak),
        "sources": summary["sources"],
    }


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cold = run_demo(Path(tmp) / "data", Path(tmp) / "cold")
        warm = run_demo(Path(tmp) / "data", Path(tmp) / "warm")
    print(
        json.dumps(
            {
                "cold": cold,
                "warm": warm,
                "cpus": os.cpu_count(),
                "warm_speedup_vs_cold": round(cold["wall_s"] / warm["wall_s"], 2),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
