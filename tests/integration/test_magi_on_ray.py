"""The council on Ray: one actor per sage, the same deliberation as in process, failures and timeouts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.runtime import InProcessRuntime, RayRuntime
from core.settings import Settings, load_settings
from magi.events import CouncilEvent, PhaseStarted
from magi.models import SageName
from magi.protocol import deliberate


def settings(**magi: Any) -> Settings:
    return load_settings(None, {"llm": {"provider": "python:magi.scripted:respond"}, "council": magi})


async def test_sages_are_ray_actors_and_the_result_matches_in_process(ray_cluster: None) -> None:
    import ray

    seen: list[set[str]] = []

    def on_event(event: CouncilEvent) -> None:
        if isinstance(event, PhaseStarted) and event.phase == "thinking":
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
        result = await deliberate(question, settings(rounds=0, timeout_s=5), runtime, seed=1)
    finally:
        await runtime.close()
    (failure,) = result.failures
    assert failure.sage is SageName.BALTHASAR and failure.kind == "timeout" and failure.phase == "voting"
    assert result.decision == "APPROVE" and result.exit_code == 0


async def test_sdd_review_by_sage_actors_on_ray(ray_cluster: None, tmp_path: Path) -> None:
    from magi.plugins import load_plugins
    from magi.sdd import spec_workflow
    from magi.settings import CouncilSettings

    specs = tmp_path / ".kiro" / "settings" / "templates" / "specs"
    specs.mkdir(parents=True)
    for name in ("requirements", "design", "tasks"):
        (specs / f"{name}.md").write_text(f"# {name}\n\n{{{{{name.upper()}_BODY}}}}\n", encoding="utf-8")
    (sdd,) = load_plugins(CouncilSettings())
    runtime = RayRuntime()
    try:
        result = await spec_workflow("Add an audit log", settings(), runtime, sdd, workdir=tmp_path)
    finally:
        await runtime.close()
    assert not result.installed  # templates present: the installer is not run
    assert [r.sage for r in result.reviews] == list(SageName) and not result.failures
    assert "Review notes addressed" in (tmp_path / ".kiro" / "specs" / "add-an-audit-log" / "design.md").read_text()
