"""The demo research (``magi research`` on the bundled corpus): wall time and process-tree memory.

Runs the real CLI twice on a fresh data directory: cold (nothing cached) and warm (page and
analysis caches filled by the first run), and reports the ratio. Memory is the peak resident
size of the CLI's whole process tree (driver, Ray's GCS and raylet, every actor), sampled from
/proc every 0.2 s: ``/usr/bin/time -v`` only reports the largest single process.

``--baseline DIR`` also runs the same demo from another checkout (``git worktree add DIR COMMIT``)
with ``--baseline-python`` (default: this venv's; a checkout whose settings or entry points differ
needs its own install, e.g. a copy of this venv with ``pip install --no-deps -e DIR``), in turns
with this one (``--rounds`` pairs, cold then warm each), and reports the median research time of
each and their ratio (this / baseline): the engine's own time (``durationMs``), without the process
and Ray start-up both pay alike.
Usage: .venv/bin/python benchmarks/demo.py [--baseline DIR [--baseline-python PY] [--rounds 3]]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
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


ROOT = Path(__file__).resolve().parents[1]


def run_demo(data_dir: Path, out: Path, tree: Path = ROOT, python: str = sys.executable) -> dict[str, float]:
    """One ``magi research`` of the demo topic, its code taken from ``tree`` (the working directory
    comes first on the module path, so ``-m cli.main`` imports that checkout)."""
    env = {**os.environ, "MAGI_DATA_DIR": str(data_dir), "PYTHONPATH": str(tree)}
    command = [
        python,
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
    process = subprocess.Popen(command, env=env, cwd=tree, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
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


def cold_and_warm(tree: Path, scratch: Path, python: str = sys.executable) -> dict[str, dict[str, float]]:
    """The demo twice on one fresh data directory: nothing cached, then pages and analyses cached."""
    return {
        "cold": run_demo(scratch / "data", scratch / "cold", tree, python),
        "warm": run_demo(scratch / "data", scratch / "warm", tree, python),
    }


def compare(baseline: Path, python: str, rounds: int) -> dict[str, object]:
    """This checkout and ``baseline`` in turns; medians of the engine's time and their ratios."""
    runs: dict[str, list[dict[str, dict[str, float]]]] = {"this": [], "baseline": []}
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(rounds):
            for name, tree, exe in (("this", ROOT, sys.executable), ("baseline", baseline.resolve(), python)):
                runs[name].append(cold_and_warm(tree, Path(tmp) / f"{name}-{n}", exe))

    def median(name: str, phase: str) -> float:
        return round(statistics.median(r[phase]["engine_s"] for r in runs[name]), 2)

    report: dict[str, object] = {"rounds": rounds, "baseline": str(baseline), "cpus": os.cpu_count()}
    for phase in ("cold", "warm"):
        this, base = median("this", phase), median("baseline", phase)
        report[phase] = {"this_engine_s": this, "baseline_engine_s": base, "ratio": round(this / base, 3)}
    report["runs"] = runs
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="a checkout of the commit to compare with")
    parser.add_argument("--baseline-python", default=sys.executable, help="the Python that runs the baseline")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.baseline:
        print(json.dumps(compare(args.baseline, args.baseline_python, args.rounds), indent=2))
        return
    with tempfile.TemporaryDirectory() as tmp:
        both = cold_and_warm(ROOT, Path(tmp))
    speedup = round(both["cold"]["wall_s"] / both["warm"]["wall_s"], 2)
    print(json.dumps({**both, "cpus": os.cpu_count(), "warm_speedup_vs_cold": speedup}, indent=2))


if __name__ == "__main__":
    main()
