"""The MAGI council: each phase should take about one LLM latency, not three; and early stop saves calls.

The shipped scripted LLM (magi/scripted.py) answers every call after a fixed ``--latency`` (seconds,
``MAGI_SCRIPTED_LATENCY_S``), so time is dominated by LLM waits, as with a real model. In one run,
on a local Ray (the three resident sage actors):

1. the council as built (the three sages in parallel in every phase), and
2. the sequential baseline: the same deliberation with the sages asked one after the other (what
   the origin's loop does), same prompts, same answers.

Per phase (Thinking, each Debate round, Voting) and overall: baseline time / council time (>= 2.5
expected). Then the LLM calls early stop saves: a question whose blind votes are unanimous, with
``--rounds`` debate rounds, with early stop on and off.

Prints JSON. Usage: .venv/bin/python benchmarks/magi_speedup.py [--latency S] [--rounds N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from core.runtime import ray_runtime
from core.settings import Settings, load_settings
from core.telemetry import request_scope
from magi.models import Deliberation
from magi.protocol import deliberate
from magi.scripted import LATENCY_ENV

QUESTION = (
    "Should the support team adopt a four-day work week?\n"
    "magi-script: melchior=APPROVE balthasar=DENY casper=CONDITIONAL,APPROVE"
)
UNANIMOUS = "Should we keep nightly backups?\nmagi-script: melchior=APPROVE balthasar=APPROVE casper=APPROVE"


def settings(rounds: int, early_stop: str) -> Settings:
    return load_settings(
        None,
        {
            "llm": {"provider": "python:magi.scripted:respond", "max_concurrency": 16},
            "council": {"rounds": rounds, "early_stop": early_stop, "timeout_s": 600},
        },
    )


def phases(d: Deliberation) -> dict[str, int]:
    found = {"thinking": d.timings.thinking_ms}
    found.update({f"debate_round_{i}": ms for i, ms in enumerate(d.timings.debate_ms, start=1)})
    found["voting"] = d.timings.voting_ms
    found["overall"] = d.timings.total_ms - d.timings.setup_ms  # opening the conversations is not deliberation
    return found


@asynccontextmanager
async def as_request() -> AsyncIterator[None]:
    with request_scope():
        yield


async def measure(latency: float, rounds: int) -> dict[str, Any]:
    os.environ[LATENCY_ENV] = str(latency)  # before Ray starts: its workers inherit it
    config = settings(rounds, "off")
    # under one request id, as `magi council` runs: the id and its context go with every sage call
    async with ray_runtime(config) as runtime, as_request():
        await deliberate("warm-up", settings(0, "off"), runtime, seed=0)  # the sages start here, once
        parallel = await deliberate(QUESTION, config, runtime, seed=1)
        sequential = await deliberate(QUESTION, config, runtime, seed=1, sequential=True)
        stopped = await deliberate(UNANIMOUS, settings(rounds, "both"), runtime, seed=1)
        full = await deliberate(UNANIMOUS, settings(rounds, "off"), runtime, seed=1)
    par, seq = phases(parallel), phases(sequential)
    ratios = {name: round(seq[name] / max(par[name], 1), 2) for name in par}
    return {
        "latency_s": latency,
        "rounds": rounds,
        "same_decision": parallel.decision == sequential.decision,
        "council_ms": par,
        "actor_setup_ms": {"council": parallel.timings.setup_ms, "sequential": sequential.timings.setup_ms},
        "sequential_ms": seq,
        "phase_ms_per_latency": {
            name: round(ms / (latency * 1000), 2) for name, ms in par.items() if name != "overall"
        },
        "speedup_vs_sequential": ratios,
        "min_phase_speedup": min(v for k, v in ratios.items() if k != "overall"),
        "early_stop": {
            "question": "blind votes unanimous",
            "rounds_configured": rounds,
            "llm_calls_with_early_stop": stopped.usage_total.calls,
            "llm_calls_without": full.usage_total.calls,
            "llm_calls_saved": full.usage_total.calls - stopped.usage_total.calls,
            "reported_saved": stopped.llm_calls_saved,
            "time_ms_with": stopped.timings.total_ms,
            "time_ms_without": full.timings.total_ms,
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--latency", type=float, default=0.5, help="seconds per scripted LLM call")
    parser.add_argument("--rounds", type=int, default=2, help="debate rounds")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(measure(args.latency, args.rounds)), indent=2))


if __name__ == "__main__":
    main()
