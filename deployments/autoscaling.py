"""Serve autoscaling on the research queue: replicas follow the runs, not open HTTP requests.

Serve's default policy counts ongoing requests, but a POST returns at once and an open event stream
is only a reader: the work is the runs. Every replica reports two custom metrics
(``record_autoscaling_stats``): the run it runs (0 or 1) and the runs waiting in the store, which
all replicas share (research/run_queue.py), so every replica sees the same waiting count. The policy
wants enough replicas for the running runs plus the waiting ones, ``target_queued_runs`` each.
Serve applies min/max replicas and the delays: up quickly (a run lasts minutes, a waiting one is
worth a replica now), down after Serve's default delay. Kept free of heavy imports: Serve pickles
this module by value into its controller.
"""

from __future__ import annotations

import math
from typing import Any

RUNNING_METRIC = "running_runs"
WAITING_METRIC = "waiting_runs"
POLICY_PATH = "deployments.autoscaling:QueuedRunsPolicy"
UPSCALE_DELAY_S = 2.0
LOOK_BACK_S = 12.0  # the window Serve averages reports over (it must exceed its 10 s metrics interval)
METRICS_PUSH_S = "2"  # RAY_SERVE_REPLICA_AUTOSCALING_METRIC_PUSH_INTERVAL_S for the replicas (default 10)


class QueuedRunsPolicy:
    """Enough replicas that each holds about ``target_queued_runs`` runs (``serve.target_queued_runs``)."""

    def __init__(self, target_queued_runs: int = 5) -> None:
        self.target = max(1, int(target_queued_runs))

    def __call__(self, ctx: Any) -> tuple[int, dict[str, Any]]:
        metrics = ctx.aggregated_metrics or {}
        running = metrics.get(RUNNING_METRIC) or {}
        waiting = metrics.get(WAITING_METRIC) or {}
        if not running and not waiting:  # no report yet: stay where we are
            return int(ctx.current_num_replicas), {}
        held = float(sum(running.values())) + float(max(waiting.values(), default=0.0))
        return max(1, math.ceil(held / self.target)), {}


def autoscaling_config(min_replicas: int, max_replicas: int, target_queued_runs: int) -> dict[str, Any]:
    """The ``autoscaling_config`` of a deployment that reports the two run metrics."""
    return {
        "min_replicas": min_replicas,
        "max_replicas": max(min_replicas, max_replicas),
        "upscale_delay_s": UPSCALE_DELAY_S,
        "look_back_period_s": LOOK_BACK_S,
        "policy": {"policy_function": POLICY_PATH, "policy_kwargs": {"target_queued_runs": target_queued_runs}},
    }


def replica_env() -> dict[str, str]:
    """Environment of the replicas: report the metrics often enough for :data:`UPSCALE_DELAY_S` to
    mean something (with Serve's default, a waiting run was not seen to add a replica in two minutes)."""
    return {"RAY_SERVE_REPLICA_AUTOSCALING_METRIC_PUSH_INTERVAL_S": METRICS_PUSH_S}


__all__ = [
    "LOOK_BACK_S",
    "METRICS_PUSH_S",
    "POLICY_PATH",
    "RUNNING_METRIC",
    "UPSCALE_DELAY_S",
    "WAITING_METRIC",
    "QueuedRunsPolicy",
    "autoscaling_config",
    "replica_env",
]
