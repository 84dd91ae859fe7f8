"""Quality (not speed): the router on the labelled set meets the issue's accuracy thresholds."""

from __future__ import annotations

from pathlib import Path

from router.evaluation import evaluate, read_set
from router.route import Router

SET_DIR = Path(__file__).resolve().parent.parent / "data" / "router"


def test_accuracy_on_the_labelled_set() -> None:
    paths = sorted(SET_DIR.glob("*.jsonl"))
    items = read_set(paths)
    assert len(items) >= 200
    languages = {item.language for item in items}
    assert languages == {"ja", "en"}
    report = evaluate(Router(), items)
    misses = [(e["query"], e["wrong"]) for e in report["errors"]]
    assert report["accuracy"]["agent"] >= 0.97, misses
    assert report["accuracy"]["requestType"] >= 0.95, misses
