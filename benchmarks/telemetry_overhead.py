"""What telemetry costs: the router over HTTP and the MAGI council, with telemetry on and off, in one run.

``telemetry.enabled`` is read by every process at start from ``MAGI_TELEMETRY_ENABLED``: off, no metric
is recorded and no request context is carried into actor calls.

1. Router (the ``router_load.py`` traffic): one local Ray and one Serve host two router apps, identical
   but for the replica's environment (``MAGI_TELEMETRY_ENABLED`` true in one, false in the other), and
   the echo app. At each concurrency the three take turns in ``--rounds`` rounds, so a slow spell of
   the machine falls on both sides alike. Reported: p50 of each, and on/off p50 ratios (target <= 1.05);
   then, from Ray's Prometheus endpoint, the requests each side counted (the on side: all it was
   sent; the off side: none, proof that the switch took in its replica).
2. Council (``magi_speedup.py``): run as its own process (its own local Ray) alternately with
   telemetry on and off, ``--pairs`` times; the council's overall deliberation time, best of the
   pairs, on/off ratio (target <= 1.05).

Prints JSON. Usage: .venv/bin/python benchmarks/telemetry_overhead.py [--pairs 2] [--levels 1,16,64]
    [--requests 600,2400,3000] [--rounds 3] [--skip-magi]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import router_load  # noqa: E402  (the traffic and the echo app of the router benchmark)

ENV = "MAGI_TELEMETRY_ENABLED"


async def router_on_off(levels: list[int], counts: list[int], rounds: int, sessions: int) -> dict[str, Any]:
    import ray
    from ray import serve

    from core.settings import load_settings
    from deployments import proxy
    from deployments.affinity import affinity_options
    from deployments.base import bind, main_loop_actor_options
    from deployments.router import APP_NAME, RouterService

    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    port = router_load._free_port()
    settings = load_settings(overrides={"data_dir": Path(tempfile.mkdtemp(prefix="telemetry-overhead-"))})
    try:
        proxy.start_serve("127.0.0.1", port)
        for side, enabled in (("on", "true"), ("off", "false")):
            options = main_loop_actor_options({ENV: enabled})  # as the router app deploys it, plus the switch
            app = bind(RouterService, settings, ray_actor_options=options, **affinity_options())
            serve.run(app, name=f"{APP_NAME}_{side}", route_prefix=f"/{side}")
        serve.run(router_load.echo_app(), name="echo", route_prefix="/echo")
        base = f"http://127.0.0.1:{port}"
        paths = {"on": "/on/route", "off": "/off/route", "echo": "/echo/route"}
        queries = router_load._queries()
        for app, path in paths.items():  # warm every app and its sessions
            await router_load.drive(
                base + path, queries, sessions, sessions, 4 * sessions, 120, app, router_load.Sample()
            )
        sent = {app: 4 * sessions for app in paths}
        report: list[dict[str, Any]] = []
        for concurrency, count in zip(levels, counts, strict=True):
            samples = {app: router_load.Sample() for app in paths}
            for _ in range(rounds):
                for app, path in paths.items():
                    await router_load.drive(
                        base + path, queries, sessions, concurrency, count // rounds, 60, app, samples[app]
                    )
            got = {app: sample.report() for app, sample in samples.items()}
            for app in paths:
                sent[app] += got[app]["requests"]
            report.append(
                {
                    "concurrency": concurrency,
                    "p50_ms": {app: got[app]["p50_ms"] for app in paths},
                    "errors": {app: got[app]["errors"] for app in paths},
                    "ratio_on_over_off": round(got["on"]["p50_ms"] / got["off"]["p50_ms"], 3),
                    "router_over_echo": {
                        side: round(got[side]["p50_ms"] / got["echo"]["p50_ms"], 3) for side in ("on", "off")
                    },
                }
            )
        return {
            "levels": report,
            "requests_sent_on": sent["on"],
            "requests_counted": await counted_requests(sent["on"]),
        }
    finally:
        serve.shutdown()
        ray.shutdown()


async def counted_requests(sent_on: int, wait_s: float = 60) -> dict[str, float]:
    """``magi_http_requests`` of each router app as Ray exports them: the on side counts every request
    it was sent (``sent_on``), the off side none (the switch took in its replica)."""
    import time

    from core.telemetry.scrape import cluster_metric_urls, scrape

    deadline = time.monotonic() + wait_s
    while True:
        samples = scrape(cluster_metric_urls())
        counts = {
            app: sum(
                v
                for (family, labels), v in samples.items()
                if family == "ray_magi_http_requests_total" and ("app", f"router_{app}") in labels
            )
            for app in ("on", "off")
        }
        if counts["on"] >= sent_on or time.monotonic() > deadline:
            return counts
        await asyncio.sleep(2)


def council_once(args: list[str], enabled: bool) -> float:
    env = {**os.environ, ENV: "true" if enabled else "false"}
    for attempt in (1, 2):  # a local Ray that fails to start on a busy machine gets one more try
        done = subprocess.run(
            [sys.executable, str(HERE / "magi_speedup.py"), *args], env=env, capture_output=True, text=True
        )
        if done.returncode == 0:
            return float(json.loads(done.stdout)["council_ms"]["overall"])
        sys.stderr.write(f"magi_speedup.py failed (attempt {attempt}):\n{done.stderr[-3000:]}\n")
    raise RuntimeError("magi_speedup.py failed twice; see the errors above")


def council_on_off(pairs: int, args: list[str]) -> dict[str, Any]:
    times: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(pairs):
        for enabled in (True, False):
            times[enabled].append(council_once(args, enabled))
    on, off = min(times[True]), min(times[False])
    return {"council_overall_ms": {"on": on, "off": off}, "ratio_on_over_off": round(on / off, 3)}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--levels", default="1,16,64", help="router concurrency levels")
    parser.add_argument("--requests", default="600,2400,3000", help="router requests per app and level")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per level; the apps take turns in each")
    parser.add_argument("--sessions", type=int, default=8, help="sessions the router requests are spread over")
    parser.add_argument("--pairs", type=int, default=2, help="council on/off pairs")
    parser.add_argument("--magi-args", default="", help="magi_speedup.py options")
    parser.add_argument("--skip-magi", action="store_true", help="measure the router only")
    args = parser.parse_args(argv)
    levels = [int(c) for c in args.levels.split(",")]
    counts = [int(c) for c in args.requests.split(",")]
    report: dict[str, Any] = {}
    with contextlib.redirect_stdout(sys.stderr):  # Ray's own messages stay off the JSON
        report["router"] = asyncio.run(router_on_off(levels, counts, args.rounds, args.sessions))
    if not args.skip_magi:
        report["magi_speedup"] = council_on_off(args.pairs, args.magi_args.split())
    sys.stdout.write(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
