"""Serve autoscaling on the research queue: replicas follow the runs waiting, not open HTTP requests.

Serve's default policy counts ongoing requests, but a POST returns at once and an open event stream
is only a reader: the work is the runs each replica holds (waiting + running), which replicas report
as the custom metric ``queued_runs`` (``record_autoscaling_stats``). Serve applies min/max replicas
and the up/down delays around :class:`QueuedRunsPolicy`. Kept free of heavy imports: Serve pickles
this module by value into its controller.
"""

from __future__ import annotations

import math
from typing import Any

QUEUE_METRIC = "queued_runs"
POLICY_PATH = "deployments.autoscaling:QueuedRunsPolicy"


class QueuedRunsPolicy:
    """Enough replicas that each holds about ``target_queued_runs`` runs (``serve.target_queued_runs``)."""

    def __init__(self, target_queued_runs: int = 5) -> None:
        self.target = max(1, int(target_queued_runs))

    def __call__(self, ctx: Any) -> tuple[int, dict[str, Any]]:
        per_replica = (ctx.aggregated_metrics or {}).get(QUEUE_METRIC) or {}
        total = float(sum(per_replica.values()))
        if not per_replica:  # no report yet: stay where we are
            return int(ctx.current_num_replicas), {}
        return max(1, math.ceil(total / self.target)), {}


def autoscaling_config(min_replicas: int, max_replicas: int, target_queued_runs: int) -> dict[str, Any]:
    """The ``autoscaling_config`` of a deployment that reports ``queued_runs``."""
    return {
        "min_replicas": min_replicas,
        "max_replicas": max(min_replicas, max_replicas),
        "policy": {"policy_function": POLICY_PATH, "policy_kwargs": {"target_queued_runs": target_queued_runs}},
    }


__all__ = ["POLICY_PATH", "QUEUE_METRIC", "QueuedRunsPolicy", "autoscaling_config"]
