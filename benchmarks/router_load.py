"""Load on the ``router`` Serve app over loopback, beside a trivial echo app, in the same run.

1. In process: every query of the evaluation set routed ``--inprocess-rounds`` times by the pure
   router: p50/p99 per query (target p99 <= 1 ms).
2. Over HTTP on 127.0.0.1 (one local Ray, one Serve): the ``router`` app (``POST /router/route``,
   sessions hosted in its replica, each turn written through the store before the answer; every
   request names its session in the ``serve_multiplexed_model_id`` header, as clients do) and an
   ``echo`` app (FastAPI, returns the body it gets: the floor any Serve app pays) are driven by
   async httpx at concurrency 1, 16 and 64, each level bounded by a request count and a time limit
   and run in ``--rounds`` rounds in which the apps take turns (a slow spell of the machine then
   falls on all of them). Queries come from the evaluation set, spread over ``--sessions`` sessions.
   A third app routes the same queries without sessions (``stateless_router``): the share of the
   cost that is the session (its turn's store write).

``session_update`` (one turn routed and written through the store in process, at a full history)
explains the gap between the router and the echo.

Prints JSON: per level and app, requests, errors, throughput (req/s), p50/p99 (ms), and the ratio
router p50 / echo p50 (target <= 1.25), plus the total errors (target 0 in 10,000 router requests).
Usage: .venv/bin/python benchmarks/router_load.py [--requests 1000,4000,5000] [--sessions 8]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI, Request  # module level: FastAPI resolves the handler's annotations here
from fastapi.responses import JSONResponse, Response

SET_DIR = Path(__file__).resolve().parent.parent / "tests" / "data" / "router"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _queries() -> list[str]:
    return [json.loads(line)["query"] for path in sorted(SET_DIR.glob("*.jsonl")) for line in path.open()]


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def in_process(queries: list[str], rounds: int) -> dict[str, Any]:
    from router.route import Router

    router = Router()
    for q in queries:  # warm: rules, tokenizer, caches
        router.route(q, "hours")
    times = []
    for _ in range(rounds):
        for q in queries:
            start = time.perf_counter()
            router.route(q, "hours")
            times.append((time.perf_counter() - start) * 1000)
    return {
        "routes": len(times),
        "p50_ms": round(_percentile(times, 0.5), 4),
        "p99_ms": round(_percentile(times, 0.99), 4),
        "max_ms": round(max(times), 4),
        "mean_ms": round(statistics.fmean(times), 4),
    }


def session_update(rounds: int, history_limit: int = 200) -> dict[str, Any]:
    """p50 of one turn (route + store write) on a session whose history is full, SQLite in a temp dir."""
    from core.settings import load_settings
    from core.store import open_store
    from router.conversation import Turn
    from sessions.models import SessionPolicy
    from sessions.store import SessionRepository, update_session

    repo = SessionRepository(open_store(load_settings(overrides={"data_dir": Path(tempfile.mkdtemp())})))
    policy = SessionPolicy(history_limit=history_limit)
    queries = ("Wi-Fiは何時まで使えますか", "what about Saturday?")
    state, times = None, []
    for i in range(history_limit + rounds):
        start = time.perf_counter()
        _, state = update_session(repo, "bench", "", Turn(queries[i % 2], 0.5, policy), policy, cached=state)
        if i >= history_limit:  # measured once the history is full (each turn then also trims)
            times.append((time.perf_counter() - start) * 1000)
    return {"history_entries": history_limit, "turns": rounds, "p50_ms": round(_percentile(times, 0.5), 3)}


def echo_app() -> Any:
    """A FastAPI app on Serve that validates the same body and returns it: Serve's own cost. Deployed as
    the router is (its code on the replica's main loop: deployments/base.py), so the two differ only
    in what their handlers do."""
    from ray import serve

    from deployments.base import main_loop_actor_options
    from deployments.router import RouteBody

    api = FastAPI()

    async def echo(request: Request) -> JSONResponse:
        body = RouteBody.model_validate(await request.json())
        return JSONResponse(body.model_dump(by_alias=True))

    api.add_api_route("/route", echo, methods=["POST"])

    @serve.deployment(
        name="Echo", num_replicas=1, ray_actor_options=main_loop_actor_options(), max_ongoing_requests=256
    )
    @serve.ingress(api)
    class Echo:
        """Serve's own cost: the ingress above is the whole app."""

    return Echo.bind()  # type: ignore[attr-defined]


def stateless_app() -> Any:
    """The same routing in a Serve app without sessions: how much of the router's cost is the session."""
    from ray import serve

    from deployments.base import main_loop_actor_options
    from deployments.router import RouteBody
    from router.conversation import shared_router

    api = FastAPI()

    async def route(request: Request) -> Response:
        body = RouteBody.model_validate(await request.json())
        return Response(
            shared_router(0.5).route(body.query).model_dump_json(by_alias=True), media_type="application/json"
        )

    api.add_api_route("/route", route, methods=["POST"])

    @serve.deployment(
        name="Stateless", num_replicas=1, ray_actor_options=main_loop_actor_options(), max_ongoing_requests=256
    )
    @serve.ingress(api)
    class Stateless:
        """Routing without sessions: the ingress above is the whole app."""

    return Stateless.bind()  # type: ignore[attr-defined]


class Sample:
    """Requests one app answered over one or more rounds: latencies and errors pooled."""

    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.errors: dict[str, int] = {}
        self.issued = 0
        self.seconds = 0.0

    def report(self) -> dict[str, Any]:
        ok = len(self.latencies)
        return {
            "requests": self.issued,
            "ok": ok,
            "errors": sum(self.errors.values()),
            "errorKinds": self.errors,
            "seconds": round(self.seconds, 3),
            "throughput_rps": round(ok / self.seconds, 1) if self.seconds else None,
            "p50_ms": round(_percentile(self.latencies, 0.5), 3),
            "p99_ms": round(_percentile(self.latencies, 0.99), 3),
        }


async def drive(
    url: str, queries: list[str], sessions: int, concurrency: int, count: int, limit_s: float, tag: str, sample: Sample
) -> None:
    """``count`` requests (at most ``limit_s`` seconds) from ``concurrency`` workers, added to ``sample``;
    each names its session in the header clients send (deployments/affinity.py)."""
    from deployments.affinity import session_headers

    issued = 0
    deadline = time.monotonic() + limit_s
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)

    async with httpx.AsyncClient(timeout=30, limits=limits) as client:

        async def worker(wid: int) -> None:
            nonlocal issued
            while issued < count and time.monotonic() < deadline:
                i = issued
                issued += 1
                session = f"{tag}-{(wid + i) % sessions}"
                body = {"query": queries[i % len(queries)], "sessionId": session}
                start = time.perf_counter()
                try:
                    response = await client.post(url, json=body, headers=session_headers(session))
                    if response.status_code != 200:
                        sample.errors[str(response.status_code)] = sample.errors.get(str(response.status_code), 0) + 1
                        continue
                except httpx.HTTPError as exc:
                    sample.errors[type(exc).__name__] = sample.errors.get(type(exc).__name__, 0) + 1
                    continue
                sample.latencies.append((time.perf_counter() - start) * 1000)

        started = time.perf_counter()
        await asyncio.gather(*(worker(w) for w in range(concurrency)))
        sample.seconds += time.perf_counter() - started
    sample.issued += issued


async def over_http(args: argparse.Namespace, queries: list[str]) -> dict[str, Any]:
    import ray
    from ray import serve

    from core.settings import load_settings
    from deployments import proxy
    from deployments.router import build_app

    counts = [int(c) for c in args.requests.split(",")]
    concurrencies = [int(c) for c in args.levels.split(",")]
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    port = _free_port()
    data_dir = Path(tempfile.mkdtemp(prefix="router-load-"))
    try:
        proxy.start_serve("127.0.0.1", port)
        serve.run(build_app(load_settings(overrides={"data_dir": data_dir})), name="router", route_prefix="/router")
        serve.run(echo_app(), name="echo", route_prefix="/echo")
        serve.run(stateless_app(), name="stateless", route_prefix="/stateless")
        base = f"http://127.0.0.1:{port}"
        apps = {"router": "r", "echo": "e", "stateless_router": "s"}
        paths = {"router": "/router/route", "echo": "/echo/route", "stateless_router": "/stateless/route"}
        for app, tag in apps.items():  # warm every app (and its sessions) before measuring
            await drive(base + paths[app], queries, args.sessions, args.sessions, 4 * args.sessions, 120, tag, Sample())
        levels = []
        for concurrency, count in zip(concurrencies, counts, strict=True):
            # The apps take turns in rounds, so a slow spell of the machine falls on all of them alike.
            samples = {app: Sample() for app in apps}
            for _ in range(args.rounds):
                for app, tag in apps.items():
                    share = count // args.rounds
                    await drive(
                        base + paths[app], queries, args.sessions, concurrency, share, args.limit_s, tag, samples[app]
                    )
            reports = {app: sample.report() for app, sample in samples.items()}
            echo_p50 = reports["echo"]["p50_ms"]
            levels.append(
                {
                    "concurrency": concurrency,
                    **reports,
                    "p50_ratio_router_over_echo": round(reports["router"]["p50_ms"] / echo_p50, 3),
                    "p50_ratio_stateless_over_echo": round(reports["stateless_router"]["p50_ms"] / echo_p50, 3),
                }
            )
        return {
            "levels": levels,
            "router_requests": sum(level["router"]["requests"] for level in levels),
            "router_errors": sum(level["router"]["errors"] for level in levels),
            "echo_errors": sum(level["echo"]["errors"] for level in levels),
        }
    finally:
        serve.shutdown()
        ray.shutdown()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--levels", default="1,16,64", help="concurrency levels")
    parser.add_argument("--requests", default="1000,4000,5000", help="requests per level, in the order of --levels")
    parser.add_argument("--sessions", type=int, default=8, help="sessions the requests are spread over")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per level; the apps take turns in each")
    parser.add_argument("--limit-s", type=float, default=60.0, help="time limit of one round of one app")
    parser.add_argument("--inprocess-rounds", type=int, default=20)
    args = parser.parse_args(argv)
    queries = _queries()
    report: dict[str, Any] = {"queries": len(queries), "in_process": in_process(queries, args.inprocess_rounds)}
    report["session_update"] = session_update(args.inprocess_rounds * 50)
    with contextlib.redirect_stdout(sys.stderr):  # Ray's own messages (raylet, Serve) stay off the JSON
        report["http"] = asyncio.run(over_http(args, queries))
    sys.stdout.write(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
