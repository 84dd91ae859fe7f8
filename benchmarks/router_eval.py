"""Router quality on the labelled set (tests/data/router/*.jsonl): accuracy per field, per-class
precision and recall, confusion matrices and every miss, as JSON; ``perFile`` has each file's accuracy
on its own (the holdout, and the new phrasings written before the rules that route them).

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
    router = Router()
    report = evaluate(router, read_set(paths))
    report["perFile"] = {
        p.name: {"items": (r := evaluate(router, read_set([p])))["items"], **r["accuracy"]} for p in paths
    }
    report["files"] = [str(p) for p in paths]
    sys.stdout.write(dumps(report) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
