"""The critic on a real Ray: resident CriticWorker actors (one idea each at a time, reused by every run),
and `magi critic` as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.resources import data_path
from core.runtime import RayRuntime
from core.settings import load_settings
from core.store import open_store
from critic import repository
from critic.engine import WorkerPool, evaluate_ideas
from critic.models import CriticInput

REPO = Path(__file__).resolve().parents[2]
IDEAS = data_path("critic", "examples", "ideas.json")
FAULTS = REPO / "tests" / "unit" / "providers" / "critic_faults.py"

pytestmark = pytest.mark.usefixtures("ray_cluster")


async def test_five_ideas_on_five_worker_actors_reused_by_the_next_run() -> None:
    import ray
    from ray._private.state import actors  # the GCS table (the state API needs the dashboard)

    def workers() -> dict[str, dict[str, object]]:
        return {k: a for k, a in actors().items() if "CriticWorker" in str(a.get("ActorClassName"))}

    before = set(workers())  # other modules' workers (the Serve app's) are not this test's
    settings = load_settings(None, {"llm": {"provider": "python:critic.scripted:judge"}, "critic": {"samples": 2}})
    ideas = CriticInput.model_validate_json(IDEAS.read_text(encoding="utf-8"))
    store = open_store(settings)
    runtime = RayRuntime()
    pool = WorkerPool(runtime, settings.llm, 5)
    try:
        out = await evaluate_ideas(ideas, settings, runtime, store=store, run_id="on-ray", pool=pool)
        again = await evaluate_ideas(ideas, settings, runtime, run_id="again", pool=pool)  # no store: no cache
        alone = await evaluate_ideas(ideas, settings, runtime)  # a pool of its own, closed after the run
    finally:
        pool.close()
        await runtime.close()
    assert [e.status for e in out.evaluations] == ["ok"] * 5
    assert all(len(e.samples) == 2 for e in out.evaluations)
    assert len(repository.run_evaluations(store, "on-ray")) == 5
    mine = [a for k, a in workers().items() if k not in before]
    # 5 resident workers served all three runs (the lone run's pool too); they stay for the next
    assert len(mine) == 5, [a["State"] for a in mine]
    assert {a["State"] for a in mine} == {"ALIVE"}
    assert [e.total_score for e in again.evaluations] == [e.total_score for e in out.evaluations]
    assert [e.total_score for e in alone.evaluations] == [e.total_score for e in out.evaluations]
    assert ray.is_initialized()


def magi(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cli.main", "critic", *args],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO), **env},
    )


def test_magi_critic_prints_json_then_serves_the_cache_and_fails_in_one_line(tmp_path: Path) -> None:
    scripted = {"MAGI_LLM_PROVIDER": "python:critic.scripted:judge", "MAGI_DATA_DIR": str(tmp_path / "data")}
    first = magi(str(IDEAS), "--format", "json", "--weights", "60:40", cwd=tmp_path, env=scripted)
    assert first.returncode == 0, first.stderr
    out = json.loads(first.stdout)
    assert out["weights"] == {"market": 60.0, "synergy": 40.0}
    assert out["selectedIdea"]["id"] in {e["ideaId"] for e in out["evaluations"]}
    assert out["usage"]["llm"]["calls"] == 5

    again = magi(str(IDEAS), "--format", "json", "--weights", "60:40", cwd=tmp_path, env=scripted)
    cached = json.loads(again.stdout)
    assert cached["usage"]["llm"]["calls"] == 0 and all(e["cached"] for e in cached["evaluations"])
    assert cached["selectedIdea"] == out["selectedIdea"]

    ideas = tmp_path / "failing.json"
    ideas.write_text(
        json.dumps(
            {
                "ideas": [
                    {"id": "x", "title": "FAIL x", "description": "d"},
                    {"id": "y", "title": "FAIL y", "description": "d"},
                ]
            }
        ),
        encoding="utf-8",
    )
    failing = {**scripted, "MAGI_LLM_PROVIDER": f"python:{FAULTS}:judge", "MAGI_LLM_BACKOFF_INITIAL_S": "0.01"}
    failed = magi(str(ideas), cwd=tmp_path, env=failing)
    assert failed.returncode == 1
    err = failed.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("magi critic: error: no idea could be evaluated (2 failed)")
    assert "x: " in err[0] and "y: " in err[0] and "scripted outage" in err[0]


async def test_the_python_api_uses_the_running_ray_and_the_spec_names(monkeypatch: pytest.MonkeyPatch) -> None:
    from critic.api import acritique
    from critic.errors import CriticError

    monkeypatch.setenv("MAGI_LLM_PROVIDER", "python:critic.scripted:judge")
    raw = json.loads(IDEAS.read_text(encoding="utf-8"))
    out = await acritique(raw, market_weight=60, samples=1, use_cache=False)
    assert out.weights.label() == "60:40" and len(out.evaluations) == 5
    with pytest.raises(CriticError):
        monkeypatch.setenv("MAGI_LLM_PROVIDER", f"python:{FAULTS}:judge")
        monkeypatch.setenv("MAGI_LLM_BACKOFF_INITIAL_S", "0.01")
        await acritique({"ideas": [{"id": "z", "title": "FAIL z", "description": "d"}]})


async def test_on_ray_the_timeout_keeps_finished_ideas_and_stops_the_slow_one() -> None:
    """Workers are started first (a warm-up run with a generous timeout), so the short timeout of
    the run under test measures the slow judgement, not how fast a busy machine starts processes."""
    settings = load_settings(
        None, {"llm": {"provider": f"python:{FAULTS}:judge"}, "critic": {"cache": False, "min_total": 0}}
    )
    warm = [{"id": f"w{n}", "title": f"warm {n}", "description": "d"} for n in range(2)]
    two = [
        {"id": "quick", "title": "quick idea", "description": "d"},
        {"id": "slow", "title": "SLOW", "description": "d"},
    ]
    runtime = RayRuntime()
    pool = WorkerPool(runtime, settings.llm, 2)
    try:
        warmed = await evaluate_ideas(
            CriticInput.model_validate({"ideas": warm}),
            settings.updated({"critic": {"timeout_s": 300}}),
            runtime,
            pool=pool,
        )
        assert [e.status for e in warmed.evaluations] == ["ok", "ok"]
        out = await evaluate_ideas(
            CriticInput.model_validate({"ideas": two}),
            settings.updated({"critic": {"timeout_s": 3}}),
            runtime,
            pool=pool,
        )
    finally:
        pool.close()
        await runtime.close()
    by_id = {e.idea_id: e for e in out.evaluations}
    assert by_id["quick"].status == "ok" and by_id["slow"].status == "timeout"
    assert out.selected_idea is not None and out.selected_idea.id == "quick"


async def test_a_dead_worker_is_replaced_and_its_idea_judged_on_a_fresh_one() -> None:
    import ray

    settings = load_settings(None, {"llm": {"provider": "python:critic.scripted:judge"}, "critic": {"cache": False}})
    one = CriticInput.model_validate({"ideas": [{"id": "a", "title": "t", "description": "d"}]})
    runtime = RayRuntime()
    pool = WorkerPool(runtime, settings.llm, 1)
    try:
        await evaluate_ideas(one, settings, runtime, pool=pool)
        dead = pool.handles[0]
        ray.kill(dead.target, no_restart=True)
        out = await evaluate_ideas(one, settings, runtime, pool=pool)
        assert out.evaluations[0].status == "ok"
        assert pool.handles[0] is not dead
    finally:
        pool.close()
        await runtime.close()
