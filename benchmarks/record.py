"""Runs one benchmark script and keeps its JSON as the latest result, with when, on what and where.

    .venv/bin/python benchmarks/record.py kb_eval.py
    .venv/bin/python benchmarks/record.py magi_speedup.py --latency 0.5 --rounds 2

The script's standard output must end with one JSON document (every script here prints one). It is
written to ``benchmarks/results/<script>.json`` together with the date (UTC), the commit (``-dirty``
when tracked files differ from it), the arguments, the wall time and the machine (CPUs, memory, load
when it started: a busy machine explains a slow figure). ``docs/generate.py`` then shows it on the
documentation's benchmark page; commit both.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULTS = HERE / "results"


def last_json_document(text: str) -> object:
    """The JSON document that ends ``text`` (a script may log lines before it)."""
    decoder = json.JSONDecoder()
    starts = [i for i, char in enumerate(text) if char in "{[" and (i == 0 or text[i - 1] == "\n")]
    for start in starts:
        try:
            value, end = decoder.raw_decode(text, start)
        except ValueError:
            continue
        if not text[end:].strip():
            return value
    raise ValueError("the script's output does not end with a JSON document")


def commit() -> str:
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True)
    changed = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!benchmarks/results"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    return head.stdout.strip() + ("-dirty" if changed.stdout.strip() else "")


def machine() -> dict[str, object]:
    lines = Path("/proc/meminfo").read_text().splitlines()
    memory_kb = next((int(line.split()[1]) for line in lines if line.startswith("MemTotal")), 0)
    load = round(os.getloadavg()[0], 2)
    return {"cpus": os.cpu_count(), "memory_gb": round(memory_kb / 1024 / 1024), "load_1m": load}


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    script = HERE / argv[0]
    if script.suffix != ".py" or not script.is_file() or script.parent != HERE or script.name == Path(__file__).name:
        print(f"record.py: {argv[0]!r} is not a script in benchmarks/ (e.g. kb_eval.py)", file=sys.stderr)
        return 2
    started = datetime.now(UTC)
    before = machine()
    clock = time.monotonic()
    run = subprocess.run([sys.executable, str(script), *argv[1:]], cwd=REPO, capture_output=True, text=True)
    seconds = round(time.monotonic() - clock, 1)
    if run.returncode != 0:
        sys.stderr.write(run.stderr[-4000:])
        print(f"record.py: {script.name} exited {run.returncode}; nothing recorded", file=sys.stderr)
        return 1
    try:
        result = last_json_document(run.stdout)
    except ValueError as exc:
        print(f"record.py: {script.name}: {exc}; nothing recorded", file=sys.stderr)
        return 1
    record = {
        "script": f"benchmarks/{script.name}",
        "args": argv[1:],
        "date": started.strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit(),
        "seconds": seconds,
        "machine": before,
        "result": result,
    }
    RESULTS.mkdir(exist_ok=True)
    target = RESULTS / f"{script.stem}.json"
    partial = target.with_suffix(".json.partial")
    partial.write_text(json.dumps(record, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    partial.replace(target)  # atomic: a reader never sees half a result
    print(f"recorded {target.relative_to(REPO)} ({seconds} s); run .venv/bin/python docs/generate.py to show it")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
