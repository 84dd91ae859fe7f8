"""The whole platform under load and faults: all five apps on one Ray, driven over HTTP at once.

One local Ray (or, with ``--nodes 3``, a ``ray.cluster_utils.Cluster`` of three one-CPU nodes with a
PostgreSQL store) runs the research, magi, critic, router and advisor apps, each on ``--replicas``
Serve replicas, with the shipped scripted models answering after ``--latency`` seconds. Bounded async
clients (a count per app, for ``--warmup`` + ``--duration`` seconds) drive them on 127.0.0.1:

- research: runs of 1 agent × 1 iteration on the bundled corpus, each followed to its end;
- magi: ``POST /magi/ask`` (1 round); critic: ``POST /critic/evaluate`` (one idea);
- router: conversations of ``--turns`` follow-ups (``POST /router/ask``), with a pause between turns;
- advisor: conversations that go to mode 2 (consent, tool calls, generated files) over SSE.

After the warm-up, the measured phase kills, one after the other, one Serve replica of each app, one
MAGI sage and one critic worker (SIGKILL of the process: a crash, not a shutdown), and watches each
come back. Prints JSON: per app requests, errors (those in flight on a killed component, and the
rest), p50/p99 ms of the answered requests; Ray worker processes and their total RSS at the start and
the end of the measured phase (both under load); the kills and how long each component took to be replaced; and the
checks: every accepted request answered (research runs finished), every acknowledged session turn
found in the session's stored history, and each advisor file listed.

Usage: .venv/bin/python benchmarks/platform_load.py [--duration 120] [--warmup 60] [--nodes 1|3]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import socket
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
APPS = ("research", "magi", "critic", "router", "advisor")
CLIENT_TIMEOUT_S = 120.0  # a request with no answer after this long counts as lost
RESEARCH_TOPIC = "中小企業の価格転嫁の現状"
MAGI_PROMPTS = (
    "新しい社内チャットツールを全社導入すべきか",
    "週4日勤務を試験導入すべきか",
    "在庫管理を外部委託すべきか",
)
ADVISOR_TURNS = ("事業承継で悩んでいます", "値上げの試算をしてグラフも作って", None, "申入書も作ってください")
# What each kill hits: errors of a request in flight at that moment are explained by it.
KILLS = (
    ("research", "research replica", "ray::ServeReplica:research:"),
    ("magi", "magi replica", "ray::ServeReplica:magi:"),
    ("router", "router replica", "ray::ServeReplica:router:"),
    ("advisor", "advisor replica", "ray::ServeReplica:advisor:"),
    ("critic", "critic replica", "ray::ServeReplica:critic:"),
    ("magi", "sage", "ray::Sage"),
    ("critic", "critic worker", "ray::CriticWorker"),
)


# -- processes ----------------------------------------------------------------------------------


def ray_workers() -> dict[int, tuple[str, int]]:
    """Ray worker processes (their title starts with ``ray::``): pid -> (title, RSS bytes)."""
    found: dict[int, tuple[str, int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            title = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
            if not title.startswith("ray::"):
                continue
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        rss = next((int(line.split()[1]) * 1024 for line in status.splitlines() if line.startswith("VmRSS:")), 0)
        found[int(entry)] = (title, rss)
    return found


def workers_summary() -> dict[str, Any]:
    workers = ray_workers()
    return {"processes": len(workers), "rss_mb": round(sum(r for _, r in workers.values()) / 2**20)}


def pids_titled(prefix: str) -> set[int]:
    return {pid for pid, (title, _) in ray_workers().items() if title.startswith(prefix)}


# -- calls and their outcome ---------------------------------------------------------------------


@dataclass
class Call:
    app: str
    started: float
    ended: float = 0.0
    ok: bool = False
    lost: bool = False  # accepted (or sent) and never answered
    error: str = ""


@dataclass
class Kill:
    app: str
    what: str
    at: float
    pid: int = 0
    replaced_after_s: float | None = None


@dataclass
class Ledger:
    calls: list[Call] = field(default_factory=list)
    turns: dict[tuple[str, str], list[str]] = field(default_factory=dict)  # (app, session) -> acknowledged texts
    files: dict[str, list[str]] = field(default_factory=dict)  # advisor session -> announced file names
    kills: list[Kill] = field(default_factory=list)

    def begin(self, app: str) -> Call:
        call = Call(app, time.monotonic())
        self.calls.append(call)
        return call


def finish(call: Call, ok: bool, error: str = "") -> None:
    call.ended, call.ok, call.error = time.monotonic(), ok, error


async def research_client(http: httpx.AsyncClient, ledger: Ledger, stop: float, grace: float, corpus: str) -> None:
    body = {"topic": RESEARCH_TOPIC, "agents": 1, "iterations": 1, "corpus": corpus}
    while time.monotonic() < stop:
        call = ledger.begin("research")
        try:
            answer = await http.post("/research", json=body)
        except httpx.HTTPError as exc:
            finish(call, False, f"POST {type(exc).__name__}")
            await asyncio.sleep(1)
            continue
        if answer.status_code != 202:
            finish(call, False, f"POST {answer.status_code}")
            await asyncio.sleep(1)
            continue
        run_id = answer.json()["runId"]
        status = "accepted"
        while time.monotonic() < grace:  # an accepted run must end, on whichever replica
            await asyncio.sleep(1)
            with contextlib.suppress(httpx.HTTPError, ValueError):  # a status read on a dying replica: ask again
                status = (await http.get(f"/research/{run_id}")).json()["status"]
            if status in ("completed", "failed"):
                break
        if status in ("completed", "failed"):
            finish(call, status == "completed", "" if status == "completed" else "run failed")
        else:
            call.ended, call.lost, call.error = time.monotonic(), True, f"run still {status}"


async def simple_client(http: httpx.AsyncClient, ledger: Ledger, app: str, stop: float, path: str, body: Any) -> None:
    n = 0
    while time.monotonic() < stop:
        n += 1
        call = ledger.begin(app)
        payload = body(n) if callable(body) else body
        try:
            answer = await http.post(path, json=payload)
            finish(call, answer.status_code == 200, "" if answer.status_code == 200 else f"HTTP {answer.status_code}")
        except httpx.TimeoutException:
            call.ended, call.lost, call.error = time.monotonic(), True, "no answer"
        except httpx.HTTPError as exc:
            finish(call, False, type(exc).__name__)
            await asyncio.sleep(0.2)


async def router_client(
    http: httpx.AsyncClient, ledger: Ledger, client: int, stop: float, queries: list[str], turns: int, pause: float
) -> None:
    session_no = 0
    while time.monotonic() < stop:
        session_no += 1
        session = f"load-c{client}-s{session_no}"
        acknowledged = ledger.turns.setdefault(("router", session), [])
        for turn in range(turns):
            if time.monotonic() >= stop:
                break
            query = f"{queries[(client * 31 + session_no * 7 + turn) % len(queries)]} #{client}.{session_no}.{turn}"
            call = ledger.begin("router")
            try:
                answer = await http.post("/router/ask", json={"query": query, "sessionId": session})
                finish(
                    call, answer.status_code == 200, "" if answer.status_code == 200 else f"HTTP {answer.status_code}"
                )
                if answer.status_code == 200:
                    acknowledged.append(query)
            except httpx.TimeoutException:
                call.ended, call.lost, call.error = time.monotonic(), True, "no answer"
            except httpx.HTTPError as exc:
                finish(call, False, type(exc).__name__)
            await asyncio.sleep(pause)


async def advisor_turn(http: httpx.AsyncClient, body: dict[str, Any]) -> tuple[list[dict[str, Any]], int]:
    events: list[dict[str, Any]] = []
    async with http.stream("POST", "/advisor/chat", json=body) as response:
        if response.status_code != 200:
            return events, response.status_code
        buffer = ""
        async for text in response.aiter_text():
            buffer += text
            *frames, buffer = buffer.split("\n\n")
            for frame in frames:
                data = [line[6:] for line in frame.splitlines() if line.startswith("data: ")]
                if data:
                    events.append(json.loads("\n".join(data)))
    return events, 200


async def advisor_client(http: httpx.AsyncClient, ledger: Ledger, client: int, stop: float) -> None:
    conversation = 0
    while time.monotonic() < stop:
        conversation += 1
        session: str | None = None
        for turn, message in enumerate(ADVISOR_TURNS):
            if time.monotonic() >= stop:
                break
            text = f"{message}（{client}-{conversation}-{turn}）" if message else None
            body: dict[str, Any] = {"message": text} if text else {"consent": "accept"}
            if session:
                body["sessionId"] = session
            call = ledger.begin("advisor")
            try:
                events, status = await advisor_turn(http, body)
            except httpx.TimeoutException:
                call.ended, call.lost, call.error = time.monotonic(), True, "no answer"
                break
            except httpx.HTTPError as exc:
                finish(call, False, type(exc).__name__)
                break
            done = any(e.get("type") == "done" for e in events)
            finish(call, done, "" if done else f"HTTP {status}, no done event")
            if not done:
                break  # the conversation's next step depends on this one
            session = session or next((e["sessionId"] for e in events if e.get("type") == "session"), None)
            if session is None:
                break
            acknowledged = ledger.turns.setdefault(("advisor", session), [])
            if text:
                acknowledged.append(text)
            names = [e["file"]["name"] for e in events if e.get("type") == "file"]
            ledger.files.setdefault(session, []).extend(names)


# -- faults ----------------------------------------------------------------------------------------


def kill_research_owner(store_url: str) -> bool:
    """Kill the research replica that holds a running run (Ray kill of the actor the lease names):
    its run must then be taken over. False when no run is running."""
    import ray

    from core.store import Store

    store = Store(store_url)
    try:
        rows = store.query("SELECT owner FROM research_runs WHERE status='running' AND owner IS NOT NULL")
    finally:
        store.close()
    for (owner,) in rows:
        with contextlib.suppress(ValueError):
            ray.kill(ray.get_actor(owner, namespace="serve"), no_restart=True)
            return True
    return False


async def kill_one(ledger: Ledger, app: str, what: str, prefix: str, store_url: str) -> None:
    """SIGKILL one process titled ``prefix`` (waiting up to 20 s for one to exist; for research the
    replica running a run), then note when a new process of that title appears: the component was
    replaced."""
    if app == "research":
        before = pids_titled(prefix)
        for _ in range(100):
            if await asyncio.to_thread(kill_research_owner, store_url):
                kill = Kill(app, what + " running a run", time.monotonic(), pid=-1)
                ledger.kills.append(kill)
                await watch_replacement(kill, prefix, before)
                return
            await asyncio.sleep(0.2)
    victims: set[int] = set()
    for _ in range(100):
        victims = pids_titled(prefix)
        if victims:
            break
        await asyncio.sleep(0.2)
    kill = Kill(app, what, time.monotonic())
    ledger.kills.append(kill)
    if not victims:
        return
    kill.pid = min(victims)
    os.kill(kill.pid, signal.SIGKILL)
    await watch_replacement(kill, prefix, victims)


async def watch_replacement(kill: Kill, prefix: str, before: set[int]) -> None:
    deadline = kill.at + 90
    while time.monotonic() < deadline:
        await asyncio.sleep(0.5)
        if pids_titled(prefix) - before:
            kill.replaced_after_s = round(time.monotonic() - kill.at, 1)
            return


async def faults(ledger: Ledger, start: float, duration: float, store_url: str) -> None:
    gap = duration / (len(KILLS) + 2)
    tasks = []
    for n, (app, what, prefix) in enumerate(KILLS, start=1):
        await asyncio.sleep(max(0.0, start + n * gap - time.monotonic()))
        tasks.append(asyncio.create_task(kill_one(ledger, app, what, prefix, store_url)))
    await asyncio.gather(*tasks)


# -- checks ----------------------------------------------------------------------------------------


async def check_turns(http: httpx.AsyncClient, ledger: Ledger) -> dict[str, Any]:
    """Every acknowledged turn is in its session's stored history; every announced file is listed."""
    missing_turns = 0
    missing_files = 0
    checked = 0
    for (app, session), texts in ledger.turns.items():
        if not texts:
            continue
        answer = await http.get(f"/{app}/sessions/{session}")
        stored = answer.json() if answer.status_code == 200 else {}
        history = " ".join(str(e.get("text", "")) for e in stored.get("history", []))
        checked += len(texts)
        missing_turns += sum(text not in history for text in texts)
        if app == "advisor":
            listed = {f["name"] for f in stored.get("files", [])}
            missing_files += sum(name not in listed for name in ledger.files.get(session, []))
    return {
        "acknowledged_turns": checked,
        "lost_turns": missing_turns,
        "files_announced": sum(len(v) for v in ledger.files.values()),
        "lost_files": missing_files,
    }


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 1)


def per_app(ledger: Ledger, since: float) -> dict[str, Any]:
    report: dict[str, Any] = {}
    for app in APPS:
        calls = [c for c in ledger.calls if c.app == app and (c.ended >= since or c.lost)]  # ended in the phase
        answered = [c.ended - c.started for c in calls if c.ok]
        failed = [c for c in calls if not c.ok and not c.lost]
        kills = [k.at for k in ledger.kills if k.app == app]
        at_kill = [c for c in failed if any(c.started <= at <= c.ended for at in kills)]
        report[app] = {
            "requests": len(calls),
            "answered": len(answered),
            "errors": len(failed),
            "errors_in_flight_at_a_kill": len(at_kill),
            "errors_other": len(failed) - len(at_kill),
            "error_kinds": sorted({c.error for c in failed}),
            "lost": sum(c.lost for c in calls),
            "p50_ms": percentile(answered, 0.5),
            "p99_ms": percentile(answered, 0.99),
            "mean_ms": round(statistics.fmean(answered) * 1000, 1) if answered else None,
        }
    return report


# -- the platform ------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def app_settings(app: str, base: dict[str, Any], replicas: int) -> dict[str, Any]:
    """Each app's settings: its scripted model and ``replicas`` replicas."""
    scripted = {
        "magi": "python:magi.scripted:respond",
        "critic": "python:critic.scripted:judge",
        "router": "python:router.scripted:answer",
        "advisor": "python:advisor.scripted:respond",
    }
    overrides = {**base, "serve": {**base.get("serve", {}), "min_replicas": replicas, "max_replicas": replicas}}
    if app in scripted:
        overrides["llm"] = {"provider": scripted[app], "max_concurrency": 16}
    if app == "research":
        overrides |= {"search": {"provider": "local"}, "nlp": {"workers": 1}}
        overrides["serve"] |= {"run_lease_s": 10, "target_queued_runs": 1}
    if app in ("router", "advisor"):
        overrides[app] = {"replicas": replicas}
    if app == "magi":
        overrides["council"] = {"replicas": replicas}
    if app == "critic":
        overrides["critic"] = {"max_workers": 2, "replicas": replicas}
    return overrides


def deploy(base: dict[str, Any], replicas: int) -> None:
    import importlib

    from ray import serve

    from core.settings import load_settings
    from deployments.apps import load_serve_config

    for entry in load_serve_config().applications:
        if entry.name not in APPS:
            continue
        settings = load_settings(overrides=app_settings(entry.name, base, replicas))
        module = importlib.import_module(entry.import_path.partition(":")[0])
        serve.run(module.build_app(settings), name=entry.name, route_prefix=entry.route_prefix)


@contextlib.contextmanager
def platform(nodes: int, latency: float) -> Any:
    """Ray (one node, or a three-node Cluster with PostgreSQL) with Serve on a loopback port."""
    import ray
    from ray import serve

    for variable in ("MAGI_SCRIPTED_LATENCY_S", "CRITIC_SCRIPTED_LATENCY_S", "MAGI_ADVISOR_SCRIPTED_LATENCY_S"):
        os.environ[variable] = str(latency)  # before Ray starts: its workers inherit them
    os.environ["MAGI_ROUTER_SCRIPTED_LATENCY_S"] = str(latency)
    with tempfile.TemporaryDirectory(prefix="platform-load-") as tmp:
        base: dict[str, Any] = {"data_dir": str(Path(tmp) / "data")}
        postgres = cluster = None
        try:
            if nodes > 1:
                sys.path.insert(0, str(ROOT))
                from ray.cluster_utils import Cluster

                from tests.postgres import PostgresServer

                pg_root = Path(tmp) / "pg"
                pg_root.mkdir()
                os.chmod(tmp, 0o755)
                if os.geteuid() == 0:
                    os.chown(pg_root, *_postgres_ids())
                postgres = PostgresServer(pg_root)
                postgres.start()
                base["store_url"] = postgres.create_database()
                cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
                for _ in range(nodes - 1):
                    cluster.add_node(num_cpus=1)
                cluster.wait_for_nodes()
                ray.init(address=cluster.address, log_to_driver=False)
            else:
                ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
            port = _free_port()
            serve.start(http_options={"host": "127.0.0.1", "port": port})
            yield port, base
        finally:
            with contextlib.suppress(Exception):
                serve.shutdown()  # type: ignore[no-untyped-call]
            ray.shutdown()
            if cluster is not None:
                cluster.shutdown()  # type: ignore[no-untyped-call]
            if postgres is not None:
                postgres.stop()


def _postgres_ids() -> tuple[int, int]:
    import pwd

    entry = pwd.getpwnam("postgres")
    return entry.pw_uid, entry.pw_gid


def critic_body(ideas: list[dict[str, Any]], n: int) -> dict[str, Any]:
    """One idea per request, judged afresh (no cache), so the critic's workers do the work."""
    return {"ideas": [ideas[n % len(ideas)]], "samples": 1, "noCache": True}


def router_queries() -> list[str]:
    folder = ROOT / "tests" / "data" / "router"
    return [json.loads(line)["query"] for path in sorted(folder.glob("*.jsonl")) for line in path.open()]


async def drive(args: argparse.Namespace, port: int, store_url: str) -> dict[str, Any]:
    from core.resources import data_path

    ideas = json.loads(data_path("critic", "examples", "ideas.json").read_text(encoding="utf-8"))["ideas"]
    corpus = str(data_path("corpus"))
    queries = router_queries()
    ledger = Ledger()
    limits = httpx.Limits(max_connections=64)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=CLIENT_TIMEOUT_S, limits=limits) as http:
        begin = time.monotonic()
        measured_from = begin + args.warmup
        stop = measured_from + args.duration
        grace = stop + args.grace
        clients = [research_client(http, ledger, stop, grace, corpus) for _ in range(args.research_clients)]
        clients += [
            simple_client(
                http, ledger, "magi", stop, "/magi/ask", lambda n: {"prompt": MAGI_PROMPTS[n % 3], "rounds": 1}
            )
            for _ in range(args.magi_clients)
        ]
        clients += [
            simple_client(http, ledger, "critic", stop, "/critic/evaluate", lambda n: critic_body(ideas, n))
            for _ in range(args.critic_clients)
        ]
        clients += [
            router_client(http, ledger, n, stop, queries, args.turns, args.pause) for n in range(args.router_clients)
        ]
        clients += [advisor_client(http, ledger, n, stop) for n in range(args.advisor_clients)]
        load = asyncio.gather(*clients)
        await asyncio.sleep(max(0.0, measured_from - time.monotonic()))
        at_start = workers_summary()
        await faults(ledger, measured_from, args.duration, store_url)
        await asyncio.sleep(max(0.0, stop - 2 - time.monotonic()))
        at_end = workers_summary()  # still under load, like the start
        await load
        await asyncio.sleep(args.settle)
        replicas_at_end = {app: len(pids_titled(f"ray::ServeReplica:{app}:")) for app in APPS}
        checks = await check_turns(http, ledger)
    report = per_app(ledger, measured_from)
    checks["lost_requests"] = sum(c.lost for c in ledger.calls)  # warm-up included
    checks["errors_other"] = sum(r["errors_other"] for r in report.values())
    checks["every_kill_replaced"] = all(k.replaced_after_s is not None for k in ledger.kills)
    checks["replicas_at_end"] = replicas_at_end
    rss_ratio = at_end["rss_mb"] / at_start["rss_mb"] if at_start["rss_mb"] else None
    return {
        "duration_s": args.duration,
        "warmup_s": args.warmup,
        "nodes": args.nodes,
        "replicas": args.replicas,
        "latency_s": args.latency,
        "apps": report,
        "workers_at_start": at_start,
        "workers_at_end": at_end,
        "worker_rss_end_over_start": round(rss_ratio, 3) if rss_ratio else None,
        "kills": [
            {"app": k.app, "component": k.what, "at_s": round(k.at - measured_from, 1), "pid": k.pid}
            | {"replaced_after_s": k.replaced_after_s}
            for k in ledger.kills
        ],
        "checks": checks,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=120.0, help="measured seconds (the kills happen in them)")
    parser.add_argument("--warmup", type=float, default=60.0, help="seconds of load before measuring")
    parser.add_argument("--grace", type=float, default=180.0, help="seconds accepted research runs may take to end")
    parser.add_argument("--settle", type=float, default=5.0, help="seconds between the load's end and the checks")
    parser.add_argument("--nodes", type=int, choices=(1, 3), default=1, help="3: a Cluster of 3 nodes, PostgreSQL")
    parser.add_argument("--replicas", type=int, default=2, help="Serve replicas of each app")
    parser.add_argument("--latency", type=float, default=0.5, help="seconds per scripted LLM call")
    parser.add_argument("--research-clients", type=int, default=1)
    parser.add_argument("--magi-clients", type=int, default=2)
    parser.add_argument("--critic-clients", type=int, default=2)
    parser.add_argument("--router-clients", type=int, default=2)
    parser.add_argument("--advisor-clients", type=int, default=2)
    parser.add_argument("--turns", type=int, default=20, help="router turns per conversation (a new session after)")
    parser.add_argument("--pause", type=float, default=0.5, help="seconds a router client waits between turns")
    args = parser.parse_args()
    with platform(args.nodes, args.latency) as (port, base):
        deploy(base, args.replicas)
        store_url = base.get("store_url") or f"sqlite:///{Path(base['data_dir']) / 'magi.sqlite3'}"
        result = asyncio.run(drive(args, port, store_url))
    print(json.dumps(result, ensure_ascii=False, indent=2))


if __name__ == "__main__":
    main()
