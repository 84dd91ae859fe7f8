"""The council on Ray: one actor per sage, the same deliberation as in process, failures and timeouts."""

from __future__ import annotations

from typing import Any

from core.runtime import InProcessRuntime, RayRuntime
from core.settings import Settings, load_settings
from magi.models import SageName
from magi.protocol import deliberate


def settings(**magi: Any) -> Settings:
    return load_settings(None, {"llm": {"provider": "python:magi.scripted:respond"}, "magi": magi})


async def test_sages_are_ray_actors_and_the_result_matches_in_process(ray_cluster: None) -> None:
    import ray

    seen: list[set[str]] = []

    def on_event(event: dict[str, Any]) -> None:
        if event["type"] == "phase" and event["phase"] == "thinking":
            names = {a["name"] for a in ray.util.list_named_actors(all_namespaces=True) if a["namespace"] == "magi"}
            seen.append({n for n in names if n.startswith("Sage:")})

    question = "Adopt trunk-based development?"
    runtime = RayRuntime()
    try:
        on_ray = await deliberate(question, settings(rounds=2), runtime, seed=5, on_event=on_event)
    finally:
        await runtime.close()
    in_process = await deliberate(question, settings(rounds=2), InProcessRuntime(), seed=5)
    assert len(seen[0]) == 3  # one named actor per sage, keyed by deliberation
    assert on_ray.decision == in_process.decision
    assert [v.final for v in on_ray.votes] == [v.final for v in in_process.votes]
    assert on_ray.rounds_run == in_process.rounds_run
    names = {a["name"] for a in ray.util.list_named_actors(all_namespaces=True) if a["namespace"] == "magi"}
    assert not {n for n in names if n.startswith("Sage:")}  # killed after the deliberation


async def test_a_slow_sage_times_out_on_ray_and_the_others_decide(ray_cluster: None) -> None:
    question = "Go?\nmagi-script: melchior=APPROVE balthasar=DENY,slow@voting casper=APPROVE"
    runtime = RayRuntime()
    try:
        result = await deliberate(question, settings(rounds=0, timeout_s=2), runtime, seed=1)
    finally:
        await runtime.close()
    (failure,) = result.failures
    assert failure.sage is SageName.BALTHASAR and failure.kind == "timeout" and failure.phase == "voting"
    assert result.decision == "APPROVE" and result.exit_code == 0
