"""Router quality on the labelled set (tests/data/router/*.jsonl): accuracy per field, per-class
precision and recall, confusion matrices and every miss, as JSON.

    .venv/bin/python benchmarks/router_eval.py [FILE.jsonl ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

from router.evaluation import dumps, evaluate, read_set
from router.route import Router

SET_DIR = Path(__file__).resolve().parent.parent / "tests" / "data" / "router"


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or sorted(SET_DIR.glob("*.jsonl"))
    report = evaluate(Router(), read_set(paths))
    report["files"] = [str(p) for p in paths]
    sys.stdout.write(dumps(report) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
