"""What telemetry costs: ``router_load.py`` and ``magi_speedup.py`` with telemetry on and off, in one run.

Each benchmark runs as its own process (its own local Ray), alternately with ``MAGI_TELEMETRY_ENABLED``
true and false (every process of that Ray inherits it: no metrics recorded, no request context carried
into actor calls), ``--pairs`` times. Reported per benchmark: the headline figures of each side (the
best of the pairs) and on/off ratios: the router's p50 over the echo app's p50 measured in the same
rounds, at each concurrency (so a busy machine slows both sides alike; target <= 1.05), and the
council's overall deliberation time (target <= 1.05).

Prints JSON. Usage: .venv/bin/python benchmarks/telemetry_overhead.py [--pairs 2] [--router-args "..."]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def run(script: str, args: list[str], enabled: bool) -> dict[str, Any]:
    env = {**os.environ, "MAGI_TELEMETRY_ENABLED": "true" if enabled else "false"}
    for attempt in (1, 2):  # a local Ray that fails to start on a busy machine gets one more try
        done = subprocess.run([sys.executable, str(HERE / script), *args], env=env, capture_output=True, text=True)
        if done.returncode == 0:
            result: dict[str, Any] = json.loads(done.stdout)
            return result
        sys.stderr.write(f"{script} failed (attempt {attempt}):\n{done.stderr[-3000:]}\n")
    raise RuntimeError(f"{script} failed twice; see the errors above")


def router_figures(report: dict[str, Any]) -> dict[str, float]:
    """Router p50 over the echo app's p50 of the same rounds (the machine's load falls on both), per level."""
    return {
        f"router_over_echo_p50_c{lv['concurrency']}": lv["p50_ratio_router_over_echo"]
        for lv in report["http"]["levels"]
    }


def magi_figures(report: dict[str, Any]) -> dict[str, float]:
    return {"council_overall_ms": float(report["council_ms"]["overall"])}


def compare(runs: dict[bool, list[dict[str, float]]]) -> dict[str, Any]:
    best = {side: {k: min(r[k] for r in runs[side]) for k in runs[side][0]} for side in runs}
    return {
        "on": best[True],
        "off": best[False],
        "ratio_on_over_off": {k: round(best[True][k] / best[False][k], 3) for k in best[True]},
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--pairs", type=int, default=2, help="on/off pairs per benchmark")
    parser.add_argument("--router-args", default="--requests 300,1200,1500 --rounds 3", help="router_load.py options")
    parser.add_argument("--magi-args", default="", help="magi_speedup.py options")
    args = parser.parse_args(argv)
    report: dict[str, Any] = {}
    for name, script, extra, figures in (
        ("router_load", "router_load.py", args.router_args.split(), router_figures),
        ("magi_speedup", "magi_speedup.py", args.magi_args.split(), magi_figures),
    ):
        runs: dict[bool, list[dict[str, float]]] = {True: [], False: []}
        for _ in range(args.pairs):
            for enabled in (True, False):
                runs[enabled].append(figures(run(script, extra, enabled)))
        report[name] = compare(runs)
    sys.stdout.write(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
