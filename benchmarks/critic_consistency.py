"""Consistency of the critic's scores on identical input, against the spec's ±5 points (prints JSON).

The 5 sample ideas are scored ``--runs`` times (cache off) with ``--samples`` judgements each, in
process. For every idea: each run's median total, the largest distance of a single judgement from
its run's median, and the largest difference between two runs' medians; ``within_spec`` says
whether all of them stay within ±5. With the configured LLM (``MAGI_LLM_PROVIDER``) this measures
that model; unset, it uses the shipped scripted judge, whose noise is by construction small (up to
4% of each range), so the figure then checks the pipeline, not a model.

Usage: .venv/bin/python benchmarks/critic_consistency.py [--runs 3] [--samples 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
from typing import Any

from core.resources import data_path
from core.runtime import InProcessRuntime
from core.settings import load_settings
from critic.engine import evaluate_ideas
from critic.models import CriticInput

SPEC_TOLERANCE = 5.0


async def measure(runs: int, samples: int) -> dict[str, Any]:
    ideas = CriticInput.model_validate_json(data_path("critic", "examples", "ideas.json").read_text(encoding="utf-8"))
    provider = os.environ.get("MAGI_LLM_PROVIDER") or "python:critic.scripted:judge"
    settings = load_settings(
        None,
        {
            "data_dir": tempfile.mkdtemp(prefix="critic-consistency-"),
            "llm": {"provider": provider},
            "critic": {"cache": False, "samples": samples, "timeout_s": 600},
        },
    )
    outputs = [await evaluate_ideas(ideas, settings, InProcessRuntime()) for _ in range(runs)]
    per_idea: dict[str, Any] = {}
    for idea in ideas.ideas:
        evaluations = [next(e for e in out.evaluations if e.idea_id == idea.id) for out in outputs]
        medians = [e.total_score or 0.0 for e in evaluations]
        sample_distance = max(abs(s.total_score - (e.total_score or 0.0)) for e in evaluations for s in e.samples)
        per_idea[idea.id] = {
            "medians": medians,
            "max_sample_distance_from_median": round(sample_distance, 2),
            "max_run_to_run_difference": round(max(medians) - min(medians), 2),
            "spreads": [e.spread for e in evaluations],
        }
    worst = max(max(v["max_sample_distance_from_median"], v["max_run_to_run_difference"]) for v in per_idea.values())
    return {
        "provider": provider,
        "runs": runs,
        "samples": samples,
        "spec_tolerance": SPEC_TOLERANCE,
        "worst_deviation": worst,
        "within_spec": worst <= SPEC_TOLERANCE,
        "selected": [out.selected_idea.id for out in outputs],
        "too_close_to_call": [out.too_close_to_call for out in outputs],
        "ideas": per_idea,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--samples", type=int, default=5)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(measure(args.runs, args.samples)), indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
