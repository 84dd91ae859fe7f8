"""The council on Ray: three resident sage actors shared by every deliberation, the same deliberation as in
process, a killed sage started again, failures and timeouts."""

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


def sage_actors() -> dict[str, str]:
    """The resident sages' Ray actors now: name -> actor id."""
    import ray

    found = ray.util.list_named_actors(all_namespaces=True)
    names = [a["name"] for a in found if a["namespace"] == "magi" and a["name"].startswith("Sage:")]
    return {n: ray.get_actor(n, namespace="magi")._actor_id.hex() for n in names}


def name_of(sage: SageName) -> str:
    from magi.seats import sage_key

    return f"Sage:{sage_key(sage, 0)}"  # its slot and the fingerprint of the code it runs


async def test_sages_are_resident_actors_reused_by_every_deliberation_and_keep_no_history(ray_cluster: None) -> None:
    from magi.seats import held_conversations
    from magi.settings import CouncilSettings

    question = "Adopt trunk-based development?"
    runtime = RayRuntime()
    try:
        on_ray = await deliberate(question, settings(rounds=2), runtime, seed=5)
        first = sage_actors()
        for seed in range(3):  # more asks: the same three actors, and no history left behind by any
            again = await deliberate(question, settings(rounds=1), runtime, seed=seed)
            assert again.timings.setup_ms < on_ray.timings.setup_ms or on_ray.timings.setup_ms < 100
        held = await held_conversations(runtime, CouncilSettings.of(settings()))
    finally:
        await runtime.close()
    in_process = await deliberate(question, settings(rounds=2), InProcessRuntime(), seed=5)
    assert sorted(first) == sorted(name_of(s) for s in SageName)
    assert sage_actors() == first  # reused: not one actor started per deliberation
    assert held == {"melchior-0": 0, "balthasar-0": 0, "casper-0": 0}
    assert on_ray.decision == in_process.decision
    assert [v.final for v in on_ray.votes] == [v.final for v in in_process.votes]
    assert on_ray.rounds_run == in_process.rounds_run
    assert set(on_ray.transcripts) == {"melchior", "balthasar", "casper"} and all(on_ray.transcripts.values())


async def test_a_killed_sage_is_recreated_its_phase_fails_and_the_next_deliberation_works(ray_cluster: None) -> None:
    import ray

    question = "Go?\nmagi-script: melchior=APPROVE balthasar=APPROVE casper=APPROVE"

    def kill_melchior(event: CouncilEvent) -> None:
        if isinstance(event, PhaseStarted) and event.phase == "voting":
            ray.kill(ray.get_actor(name_of(SageName.MELCHIOR), namespace="magi"), no_restart=True)

    runtime = RayRuntime()
    try:
        await deliberate(question, settings(rounds=0), runtime, seed=1)  # the sages exist now
        before = sage_actors()
        hit = await deliberate(question, settings(rounds=0), runtime, seed=2, on_event=kill_melchior)
        after = await deliberate(question, settings(rounds=0), runtime, seed=3)
    finally:
        await runtime.close()
    (failure,) = hit.failures  # the phase whose call met the dead actor, as any sage failure
    assert failure.sage is SageName.MELCHIOR and failure.phase == "voting" and failure.kind == "exception"
    assert hit.decision == "APPROVE"  # the two others still decide
    now = sage_actors()
    melchior, casper = name_of(SageName.MELCHIOR), name_of(SageName.CASPER)
    assert now[melchior] != before[melchior]  # started again, under the same name
    assert now[casper] == before[casper]
    assert not after.failures and after.decision == "APPROVE"


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
