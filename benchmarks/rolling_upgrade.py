"""A rolling upgrade under load: every app on 2 replicas with traffic, redeployed in place with a changed code.

One local Ray runs the research, magi, critic, router and advisor apps, ``--replicas`` replicas each,
with the shipped scripted models answering after ``--latency`` seconds. They are deployed from a Serve
config, as an operator deploys ``deployments/serve.yaml``, each app's ``runtime_env`` naming a copy of
this checkout's code (version A). The clients of ``benchmarks/platform_load.py`` drive traffic: router
conversations, advisor conversations (mode 2, tools, files), council asks, critic evaluations and
research runs. After ``--warmup`` seconds the same config is deployed again with a second copy whose
code differs (version B: a changed file in ``core/``, so every code fingerprint changes): Serve's
in-place update of a code version, which rolls each app's replicas over while traffic goes on, and
``--after`` seconds beyond the end of the rollout.

Prints JSON:

- ``requests``, ``failed_requests`` (answered with an error, or never answered), per app;
- ``lost_turns``: session turns acknowledged to a client but missing from the session's stored history
  when read back after the upgrade;
- ``research_runs_failed``: accepted research runs that ended ``failed``, or never ended;
- ``upgrade_s``: from the redeploy until Serve reports every app running, every replica on version B;
- ``old_code_processes_after``: Ray worker processes started under version A (replicas, sages, critic
  workers, NLP workers, the LLM limiter, any other) still alive ``--after`` seconds after the rollout,
  by kind; also at the end of the rollout, for comparison;
- per app, the median latency of the requests answered during the rollout over that of those answered
  before it, in the same run (``during_over_before``): what the rollout costs the callers.

A process belongs to the version whose runtime environment started it: its working directory is that
version's code folder (``working_dir``), and agents a replica creates inherit its runtime environment.

Usage: .venv/bin/python benchmarks/rolling_upgrade.py [--warmup 45] [--after 60] [--replicas 2]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from platform_load import (
    APPS,
    CLIENT_TIMEOUT_S,
    Ledger,
    app_settings,
    check_turns,
    percentile,
    traffic,
)

ROOT = Path(__file__).resolve().parent.parent
CODE = ("core", "cli", "scrapers", "nlp", "actors", "research", "deployments", "jobs", "magi", "critic")
CODE += ("router", "sessions", "advisor", "data")
KINDS = (  # process title prefix -> kind, for the count of old processes
    ("ray::ServeReplica:", "replicas"),
    ("ray::SERVE_REPLICA::", "replicas"),  # a replica's title while it starts
    ("ray::Sage", "sages"),
    ("ray::CriticWorker", "critic_workers"),
    ("ray::NlpWorker", "nlp_workers"),
    ("ray::LimiterActor", "llm_limiter"),
)
LATENCY_VARIABLES = (
    "MAGI_SCRIPTED_LATENCY_S",
    "CRITIC_SCRIPTED_LATENCY_S",
    "MAGI_ADVISOR_SCRIPTED_LATENCY_S",
    "MAGI_ROUTER_SCRIPTED_LATENCY_S",
)


class MovableStop:
    """A stop time for platform_load's clients (they test ``time.monotonic() < stop`` and ``>= stop``),
    set only once the rollout has ended: Python asks this object when the float cannot answer."""

    def __init__(self) -> None:
        self.at = math.inf

    def __gt__(self, now: float) -> bool:  # now < stop
        return now < self.at

    def __le__(self, now: float) -> bool:  # now >= stop
        return self.at <= now


# -- the two code versions ----------------------------------------------------------------------------


def copy_code(target: Path, changed: bool) -> Path:
    """This checkout's code (its packages, data and pyproject.toml) in ``target``; ``changed`` alters one
    file of core/, as a new release would, so every resident agent's code fingerprint changes."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in CODE:
        shutil.copytree(ROOT / name, target / name, ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", target / "pyproject.toml")
    if changed:
        with (target / "core" / "version.py").open("a", encoding="utf-8") as source:
            source.write("\n# a changed code version, rolled in by benchmarks/rolling_upgrade.py\n")
    return target


def serve_config(code: Path, base: dict[str, Any], replicas: int, latency: float) -> Any:
    """The Serve config of the five apps (deployments/serve.yaml's entries) running the code in ``code``."""
    from ray.serve.schema import ServeDeploySchema

    from deployments.apps import load_serve_config

    env = dict.fromkeys(LATENCY_VARIABLES, str(latency))
    applications = [
        {
            "name": entry.name,
            "route_prefix": entry.route_prefix,
            "import_path": entry.import_path,
            "runtime_env": {"working_dir": f"local://{code}", "env_vars": env},  # a folder on this node
            "args": app_settings(entry.name, base, replicas),
        }
        for entry in load_serve_config().applications
        if entry.name in APPS
    ]
    return ServeDeploySchema.model_validate({"applications": applications})


# -- processes and the rollout ------------------------------------------------------------------------


def processes_of(code: Path) -> dict[int, str]:
    """Ray worker processes running the code in ``code`` (their working directory): pid -> title."""
    found: dict[int, str] = {}
    folder = str(code.resolve())
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            title = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
            if title.startswith("ray::") and os.readlink(f"/proc/{entry}/cwd") == folder:
                found[int(entry)] = title
        except OSError:
            continue
    return found


def by_kind(processes: dict[int, str]) -> dict[str, int]:
    counts = {kind: 0 for _, kind in KINDS} | {"other": 0}
    for title in processes.values():
        kind = next((k for prefix, k in KINDS if title.startswith(prefix)), "other")
        counts[kind] += 1
    return counts | {"total": len(processes)}


def rolled_to(code: Path, replicas: int) -> bool:
    """Every app running, every deployment healthy with ``replicas`` replicas, each running the code in
    ``code``, and nothing starting or stopping."""
    from ray.serve.context import _get_global_client

    details = _get_global_client().get_serve_details()
    new = set(processes_of(code))
    apps = details.get("applications", {})
    if set(APPS) - set(apps):
        return False
    for name in APPS:
        app = apps[name]
        if app["status"] != "RUNNING":
            return False
        for deployment in app["deployments"].values():
            members = deployment["replicas"]
            if deployment["status"] != "HEALTHY" or len(members) != replicas:
                return False
            if any(r["state"] != "RUNNING" or r.get("pid") not in new for r in members):
                return False
    return True


async def deploy(config: Any) -> None:
    from ray.serve.context import _get_global_client

    await asyncio.to_thread(_get_global_client().deploy_apps, config)


async def until_rolled(code: Path, replicas: int, limit_s: float) -> float:
    """Seconds until :func:`rolled_to` holds (polled); raises after ``limit_s``."""
    started = time.monotonic()
    while time.monotonic() - started < limit_s:
        if await asyncio.to_thread(rolled_to, code, replicas):
            return time.monotonic() - started
        await asyncio.sleep(1.0)
    raise TimeoutError(f"the apps were not all running the code in {code} after {limit_s:.0f} s")


# -- the run --------------------------------------------------------------------------------------------


async def drive(args: argparse.Namespace, port: int, base: dict[str, Any], codes: dict[str, Path]) -> dict[str, Any]:

    await deploy(serve_config(codes["A"], base, args.replicas, args.latency))
    await until_rolled(codes["A"], args.replicas, args.deploy_limit)
    ledger = Ledger()
    stop, grace = MovableStop(), MovableStop()
    limits = httpx.Limits(max_connections=64)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=CLIENT_TIMEOUT_S, limits=limits) as http:
        load = asyncio.gather(*traffic(http, ledger, stop, grace, None, args))
        await asyncio.sleep(args.warmup)
        old_before = by_kind(processes_of(codes["A"]))
        upgrading_at = time.monotonic()
        await deploy(serve_config(codes["B"], base, args.replicas, args.latency))
        upgrade_s = await until_rolled(codes["B"], args.replicas, args.deploy_limit)
        rolled_at = time.monotonic()
        old_at_rollout = by_kind(processes_of(codes["A"]))
        await asyncio.sleep(max(0.0, rolled_at + args.after - time.monotonic()))
        old_after = by_kind(processes_of(codes["A"]))
        stop.at = time.monotonic()
        grace.at = stop.at + args.grace
        await load
        turns = await check_turns(http, ledger)
    during = [c for c in ledger.calls if c.started <= rolled_at and (c.ended >= upgrading_at or c.lost)]
    before = [c for c in ledger.calls if c.ended < upgrading_at and not c.lost]
    research = [c for c in ledger.calls if c.app == "research"]
    return {
        "replicas": args.replicas,
        "latency_s": args.latency,
        "requests": len(ledger.calls),
        "failed_requests": sum(not c.ok for c in ledger.calls),
        "lost_turns": turns["lost_turns"],
        "research_runs_failed": sum(not c.ok and (c.lost or c.error == "run failed") for c in research),
        "upgrade_s": round(upgrade_s, 1),
        "old_code_processes_after": old_after["total"],
        "old_code_processes_after_by_kind": old_after,
        "old_code_processes_at_rollout_end": old_at_rollout,
        "old_code_processes_before_upgrade": old_before,
        "after_s": args.after,
        "requests_during_upgrade": len(during),
        "acknowledged_turns": turns["acknowledged_turns"],
        "files_announced": turns["files_announced"],
        "lost_files": turns["lost_files"],
        "apps": {app: app_figures(app, ledger.calls, before, during) for app in APPS},
    }


def app_figures(app: str, calls: list[Any], before: list[Any], during: list[Any]) -> dict[str, Any]:
    """One app's requests and failures, and its median latency before the upgrade and during it."""

    def answered(some: list[Any]) -> list[float]:
        return [c.ended - c.started for c in some if c.app == app and c.ok]

    p50_before, p50_during = percentile(answered(before), 0.5), percentile(answered(during), 0.5)
    return {
        "requests": sum(c.app == app for c in calls),
        "failed": sum(c.app == app and not c.ok for c in calls),
        "error_kinds": sorted({c.error for c in calls if c.app == app and not c.ok}),
        "p50_ms": percentile(answered(calls), 0.5),
        "p99_ms": percentile(answered(calls), 0.99),
        "p50_ms_before": p50_before,
        "p50_ms_during": p50_during,
        "during_over_before": round(p50_during / p50_before, 2) if p50_before and p50_during else None,
    }


@contextlib.contextmanager
def platform(tmp: Path) -> Any:
    """A local Ray started from a folder holding none of the project's packages (so the code a worker
    runs is the one its runtime environment names), with Serve on a free loopback port."""
    import ray
    from ray import serve

    from deployments import proxy
    from tests.ports import free_port

    before = Path.cwd()
    os.chdir(tmp)
    try:
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
        port = free_port()
        proxy.start_serve("127.0.0.1", port)
        yield port
    finally:
        with contextlib.suppress(Exception):
            serve.shutdown()  # type: ignore[no-untyped-call]
        ray.shutdown()
        os.chdir(before)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--warmup", type=float, default=45.0, help="seconds of traffic on version A")
    parser.add_argument("--after", type=float, default=60.0, help="seconds after the rollout before counting")
    parser.add_argument("--grace", type=float, default=180.0, help="seconds accepted research runs may take to end")
    parser.add_argument("--deploy-limit", type=float, default=900.0, help="most seconds a deployment may take")
    parser.add_argument("--replicas", type=int, default=2, help="Serve replicas of each app")
    parser.add_argument("--latency", type=float, default=0.5, help="seconds per scripted LLM call")
    parser.add_argument("--research-clients", type=int, default=1)
    parser.add_argument("--magi-clients", type=int, default=2)
    parser.add_argument("--critic-clients", type=int, default=1)
    parser.add_argument("--router-clients", type=int, default=2)
    parser.add_argument("--advisor-clients", type=int, default=2)
    parser.add_argument("--turns", type=int, default=20, help="router turns per conversation (a new session after)")
    parser.add_argument("--pause", type=float, default=0.5, help="seconds a router client waits between turns")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory(prefix="rolling-upgrade-") as tmp:
        folder = Path(tmp)
        codes = {"A": copy_code(folder / "code-a", False), "B": copy_code(folder / "code-b", True)}
        (folder / "run").mkdir()
        base: dict[str, Any] = {"data_dir": str(folder / "data")}
        with platform(folder / "run") as port:
            result = asyncio.run(drive(args, port, base, codes))
    print(json.dumps(result, ensure_ascii=False, indent=2))


if __name__ == "__main__":
    main()
