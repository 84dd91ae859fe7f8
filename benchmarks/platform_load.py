"""The whole platform under load and faults: all five apps on one Ray, driven over HTTP at once.

One local Ray (or, with ``--nodes 3``, a ``ray.cluster_utils.Cluster`` of three one-CPU nodes with a
PostgreSQL store) runs the research, magi, critic, router and advisor apps, each on ``--replicas``
Serve replicas, with the shipped scripted models answering after ``--latency`` seconds. Bounded async
clients (a count per app, for ``--warmup`` + ``--duration`` seconds) drive them on 127.0.0.1:

- research: runs of 1 agent × 1 iteration on the bundled corpus, each followed to its end (two
  clients by default, one per replica);
- magi: ``POST /magi/ask`` (1 round); critic: ``POST /critic/evaluate`` (one idea);
- router: conversations of ``--turns`` follow-ups (``POST /router/ask``), with a pause between turns;
- advisor: conversations that go to mode 2 (consent, tool calls, generated files) over SSE.

After the warm-up, the measured phase kills, one after the other, one Serve replica of each app, one
MAGI sage and one critic worker (SIGKILL of the process: a crash, not a shutdown), and watches each
come back. With ``--kill-node`` (three nodes) it instead removes one whole worker node (its raylet and
every process on it at once: replicas, agents, NLP workers, the Serve proxy there), choosing the one
whose research replica holds a running run, else the one hosting most replicas, and reports what it
hosted and how long until every app had its replicas again (``node_kills``). With ``--restart-store``
it stops PostgreSQL as a crash would, waits ``--store-down`` seconds and starts it again, and reports
what clients were answered meanwhile and how long until every app's ``/healthz`` was green again
(``store_restarts``). ``--kill-processes`` adds the process kills to those two.

Prints JSON: per app requests, errors (those in flight on a killed component, and the rest), p50/p99
ms of the answered requests; Ray worker processes and their total RSS at the start and the end of the
measured phase (both under load); the kills and how long each component took to be replaced; the
research runs the store holds as failed; and the checks: every accepted request answered (research
runs finished), every acknowledged session turn found in the session's stored history, and each
advisor file listed.

Errors are split by cause: in flight at a kill (a request on the killed process or node), a 503 while
the store was down (the answer asked for), and any other (which should be none).

Usage: .venv/bin/python benchmarks/platform_load.py [--duration 120] [--warmup 60] [--nodes 1|3]
       [--kill-node] [--restart-store] [--kill-processes]
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
from collections import Counter
from collections.abc import Coroutine
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
# How soon the cluster notices a lost node (Ray's defaults: a health check every 3 s, 5 missed), as an
# operator would tune it (docs/operations/cluster.md): every check is 1 s apart, 3 missed mark it dead.
NODE_HEALTH_CHECKS = {"health_check_period_ms": 1000, "health_check_failure_threshold": 3}
# Each node's CPUs as Ray counts them on this machine when not told (its cores). Fewer would also cap
# how many worker processes a node starts at once (Ray's startup concurrency is min(cores, CPUs)): at
# 1, the replacements after a node loss start one process at a time per node (45-59 s each here).
NODE_CPUS = os.cpu_count() or 1
HEALTH = {app: ("/healthz" if app == "research" else f"/{app}/healthz") for app in APPS}
STORE_DOWN = 503  # what a request that needs the store is answered while it is down


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
    status: int = 0  # the HTTP status of a refused request (0: no answer, or an answer without one)
    detail: str = ""  # the start of a refusal's body (what the service said)


@dataclass
class Kill:
    app: str
    what: str
    at: float
    pid: int = 0
    replaced_after_s: float | None = None


@dataclass
class NodeKill:
    node: str
    components: list[str]  # what it hosted: "router replica", "NlpWorker", ...
    at: float
    done_at: float = 0.0  # when every process of the node was gone (removing them takes a moment)
    research_run: str | None = None  # the run its research replica held when it went
    replaced_after_s: float | None = None


@dataclass
class StoreRestart:
    at: float  # stopped
    back_at: float | None = None  # started again
    healthy_at: float | None = None  # every app's /healthz answered 200 again
    app_healthy_at: dict[str, float] = field(default_factory=dict)  # each app's first 200 after the start

    def window(self) -> tuple[float, float]:
        return self.at, self.healthy_at or self.back_at or time.monotonic()


@dataclass
class Ledger:
    calls: list[Call] = field(default_factory=list)
    turns: dict[tuple[str, str], list[str]] = field(default_factory=dict)  # (app, session) -> acknowledged texts
    files: dict[str, list[str]] = field(default_factory=dict)  # advisor session -> announced file names
    kills: list[Kill] = field(default_factory=list)
    node_kills: list[NodeKill] = field(default_factory=list)
    store_restarts: list[StoreRestart] = field(default_factory=list)

    def begin(self, app: str) -> Call:
        call = Call(app, time.monotonic())
        self.calls.append(call)
        return call


def finish(call: Call, ok: bool, error: str = "", status: int = 0, detail: str = "") -> None:
    call.ended, call.ok, call.error, call.status, call.detail = time.monotonic(), ok, error, status, detail[:160]


async def refused(answer: httpx.Response) -> None:
    """A client told to come back later (429, 503) waits as long as it was asked, at most 2 s."""
    wait = answer.headers.get("retry-after", "1")
    await asyncio.sleep(min(2.0, float(wait)) if wait.isdigit() else 1.0)


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
            finish(call, False, f"POST {answer.status_code}", answer.status_code)
            await refused(answer)
            continue
        run_id = answer.json()["runId"]
        status = "accepted"
        while time.monotonic() < grace:  # an accepted run must end, on whichever replica
            await asyncio.sleep(1)
            # a status read on a dying replica, or while the store is down (a 503): ask again
            with contextlib.suppress(httpx.HTTPError, ValueError, KeyError):
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
            ok = answer.status_code == 200
            finish(call, ok, "" if ok else f"HTTP {answer.status_code}", answer.status_code, "" if ok else answer.text)
            if not ok:
                await refused(answer)
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
                ok = answer.status_code == 200
                finish(call, ok, "" if ok else f"HTTP {answer.status_code}", answer.status_code, answer.text)
                if ok:
                    acknowledged.append(query)
                else:
                    await refused(answer)
            except httpx.TimeoutException:
                call.ended, call.lost, call.error = time.monotonic(), True, "no answer"
            except httpx.HTTPError as exc:
                finish(call, False, type(exc).__name__)
            await asyncio.sleep(pause)


async def advisor_turn(http: httpx.AsyncClient, body: dict[str, Any]) -> tuple[list[dict[str, Any]], int]:
    events: list[dict[str, Any]] = []
    async with http.stream("POST", "/advisor/chat", json=body) as response:
        if response.status_code != 200:
            await response.aread()
            return [{"type": "error", "message": response.text}], response.status_code
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
            said = " ".join(str(e.get("message", "")) for e in events if e.get("type") == "error")
            finish(call, done, "" if done else f"HTTP {status}, no done event", 0 if done else status, said)
            if not done:
                await asyncio.sleep(1.0)
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


async def process_kills(ledger: Ledger, start: float, duration: float, store_url: str) -> None:
    gap = duration / (len(KILLS) + 2)
    tasks = []
    for n, (app, what, prefix) in enumerate(KILLS, start=1):
        await asyncio.sleep(max(0.0, start + n * gap - time.monotonic()))
        tasks.append(asyncio.create_task(kill_one(ledger, app, what, prefix, store_url)))
    await asyncio.gather(*tasks)


def node_processes(node: Any) -> set[int]:
    """The pids of every process of a ``Cluster`` node: its own (raylet, log monitor...) and the workers
    its raylet started (Serve's proxy and replicas, agents), which outlive the raylet by a moment."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
    found = {info.process.pid for infos in node.all_processes.values() for info in infos}
    while grown := {pid for pid, parent in parents.items() if parent in found} - found:
        found |= grown
    return found


def wait_gone(pids: set[int], timeout_s: float) -> None:
    """Until none of ``pids`` runs (a zombie counts as gone), or ``timeout_s`` passed."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        running = set()
        for pid in pids:
            with contextlib.suppress(OSError, IndexError):
                if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                    running.add(pid)
        if not running:
            return
        time.sleep(0.1)


def alive_actors() -> list[dict[str, Any]]:
    """The cluster's live actors from the GCS's actor table (no dashboard needed): name, class, node."""
    from ray._private import state

    return [a for a in state.actors().values() if a.get("State") == "ALIVE"]


def component(actor: dict[str, Any]) -> str:
    """What an actor is, for the report: ``router replica``, ``NlpWorker``, ``Sage``..."""
    name = str(actor.get("Name") or "")
    if name.startswith("SERVE_REPLICA::"):
        return f"{name.split('::', 1)[1].split('#')[0]} replica"
    return str(actor.get("ActorClassName") or "actor")


def replicas_outside(node_id: str) -> Counter[str]:
    """Live Serve replicas per app on every node but ``node_id``."""
    counts: Counter[str] = Counter()
    for actor in alive_actors():
        name = str(actor.get("Name") or "")
        if name.startswith("SERVE_REPLICA::") and actor["Address"]["NodeID"] != node_id:
            counts[name.split("::", 1)[1].split("#")[0]] += 1
    return counts


def running_replicas() -> Counter[str]:
    """Replicas per app that Serve's controller counts as running."""
    from ray import serve

    counts: Counter[str] = Counter()
    for app, status in serve.status().applications.items():
        for deployment in status.deployments.values():
            counts[app] += sum(
                n for state, n in deployment.replica_states.items() if getattr(state, "value", state) == "RUNNING"
            )
    return counts


def choose_node(cluster: Any, store_url: str) -> tuple[Any, str | None]:
    """The worker node to remove: the one whose research replica holds a running run, else the one
    hosting most Serve replicas. Returns it and that run's id (None if no worker node held one)."""
    from core.store import Store

    store = Store(store_url)
    try:
        rows = store.query("SELECT owner, run_id FROM research_runs WHERE status='running' AND owner IS NOT NULL")
        owners = {str(owner): str(run_id) for owner, run_id in rows}
    finally:
        store.close()
    workers = {node.node_id: node for node in cluster.worker_nodes}
    replicas: Counter[str] = Counter()
    for actor in alive_actors():
        node_id = actor["Address"]["NodeID"]
        if node_id not in workers:
            continue
        if actor.get("Name") in owners:
            return workers[node_id], str(owners[actor["Name"]])
        replicas[node_id] += component(actor).endswith(" replica")
    return workers[max(workers, key=lambda n: replicas[n])], None


async def kill_node(ledger: Ledger, cluster: Any, store_url: str, replicas: int, wait_s: float) -> None:
    """Remove a whole worker node (raylet and every process on it, no grace), preferring one whose
    research replica runs a run (waiting up to ``wait_s`` for one); then note when every app has
    ``replicas`` running replicas again, none of them on the dead node."""
    deadline = time.monotonic() + wait_s
    while True:
        node, run_id = await asyncio.to_thread(choose_node, cluster, store_url)
        if run_id is not None or time.monotonic() >= deadline:
            break
        await asyncio.sleep(0.5)
    hosted = sorted(
        component(a) for a in await asyncio.to_thread(alive_actors) if a["Address"]["NodeID"] == node.node_id
    )
    kill = NodeKill(node.node_id[:12], hosted, time.monotonic(), research_run=run_id)
    ledger.node_kills.append(kill)
    family = node_processes(node)
    await asyncio.to_thread(cluster.remove_node, node, False)
    await asyncio.to_thread(wait_gone, family, 60)  # its workers exit once they miss their raylet
    kill.done_at = time.monotonic()
    while time.monotonic() < kill.at + 180:
        await asyncio.sleep(0.5)
        outside = await asyncio.to_thread(replicas_outside, node.node_id)
        running = await asyncio.to_thread(running_replicas)
        if all(outside[app] >= replicas and running[app] >= replicas for app in APPS):
            kill.replaced_after_s = round(time.monotonic() - kill.at, 1)
            return


async def restart_store(ledger: Ledger, postgres: Any, down_s: float, http: httpx.AsyncClient) -> None:
    """Stop PostgreSQL as a crash would, keep it down ``down_s`` (the fault itself), start it again, then
    note when every app's ``/healthz`` answers 200 (its connection pool re-established by itself)."""
    restart = StoreRestart(time.monotonic())
    ledger.store_restarts.append(restart)
    await asyncio.to_thread(postgres.stop)
    await asyncio.sleep(down_s)
    await asyncio.to_thread(postgres.resume)
    restart.back_at = time.monotonic()
    while time.monotonic() < restart.back_at + 120:
        for app, path in HEALTH.items():
            if app not in restart.app_healthy_at:
                with contextlib.suppress(httpx.HTTPError):
                    if (await http.get(path, timeout=10)).status_code == 200:
                        restart.app_healthy_at[app] = time.monotonic()
        if len(restart.app_healthy_at) == len(HEALTH):
            restart.healthy_at = max(restart.app_healthy_at.values())
            return
        await asyncio.sleep(0.5)


async def faults(
    ledger: Ledger, args: argparse.Namespace, env: Platform, start: float, http: httpx.AsyncClient
) -> None:
    """The measured phase's faults: a node early (its replicas have time to come back), the store in
    the second half; the process kills spread over the phase when asked (or when nothing else is)."""
    tasks = []
    if args.kill_node:
        await asyncio.sleep(max(0.0, start + 0.05 * args.duration - time.monotonic()))
        tasks.append(asyncio.create_task(kill_node(ledger, env.cluster, env.store_url, args.replicas, 20.0)))
    if args.restart_store:
        await asyncio.sleep(max(0.0, start + 0.55 * args.duration - time.monotonic()))
        tasks.append(asyncio.create_task(restart_store(ledger, env.postgres, args.store_down, http)))
    if args.kill_processes or not (args.kill_node or args.restart_store):
        tasks.append(asyncio.create_task(process_kills(ledger, start, args.duration, env.store_url)))
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


def explained(ledger: Ledger, call: Call) -> str | None:
    """Why a failed call failed, when a fault explains it: in flight at a kill (of one of its app's
    processes, or of a node), or a 503 while the store was down; None otherwise."""
    kills = [(k.at, k.at) for k in ledger.kills if k.app == call.app]
    kills += [(k.at, k.done_at or time.monotonic()) for k in ledger.node_kills]  # its processes die over a moment
    if any(call.started <= end and begin <= call.ended for begin, end in kills):
        return "kill"
    outages = [r.window() for r in ledger.store_restarts]
    if call.status == STORE_DOWN and any(call.started <= end and call.ended >= begin for begin, end in outages):
        return "store"
    return None


def unexplained(ledger: Ledger) -> list[Call]:
    return [c for c in ledger.calls if not c.ok and not c.lost and explained(ledger, c) is None]


def per_app(ledger: Ledger, since: float) -> dict[str, Any]:
    report: dict[str, Any] = {}
    for app in APPS:
        calls = [c for c in ledger.calls if c.app == app and (c.ended >= since or c.lost)]  # ended in the phase
        answered = [c.ended - c.started for c in calls if c.ok]
        failed = [c for c in calls if not c.ok and not c.lost]
        at_kill = [c for c in failed if explained(ledger, c) == "kill"]  # a node kill counts for every app
        store_down = [c for c in failed if explained(ledger, c) == "store"]
        report[app] = {
            "requests": len(calls),
            "answered": len(answered),
            "errors": len(failed),
            "errors_in_flight_at_a_kill": len(at_kill),
            "errors_503_while_store_down": len(store_down),
            "errors_other": len(failed) - len(at_kill) - len(store_down),
            "error_kinds": sorted({c.error for c in failed}),
            "said_in_other_errors": sorted({c.detail for c in failed if c not in at_kill and c not in store_down})[:5],
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


@dataclass
class Platform:
    port: int
    base: dict[str, Any]  # the settings every app shares (data_dir, store_url)
    cluster: Any = None  # the three-node ray.cluster_utils.Cluster
    postgres: Any = None  # its PostgreSQL server (tests/postgres.py)

    @property
    def store_url(self) -> str:
        return str(self.base.get("store_url") or f"sqlite:///{Path(self.base['data_dir']) / 'magi.sqlite3'}")


@contextlib.contextmanager
def platform(nodes: int, latency: float) -> Any:
    """Ray (one node, or a three-node Cluster with PostgreSQL) with Serve on a loopback port."""
    import ray
    from ray import serve

    from deployments import proxy

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
                head = {"num_cpus": NODE_CPUS, "include_dashboard": False, "_system_config": NODE_HEALTH_CHECKS}

                def three_nodes() -> Any:
                    made = Cluster(initialize_head=True, head_node_args=head)
                    try:
                        for _ in range(nodes - 1):
                            made.add_node(num_cpus=NODE_CPUS)
                        made.wait_for_nodes()
                    except Exception:
                        made.shutdown()  # type: ignore[no-untyped-call]
                        raise
                    return made

                cluster = started_cluster(three_nodes)
                ray.init(address=cluster.address, log_to_driver=False)
            else:
                ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
            port = _free_port()
            proxy.start_serve("127.0.0.1", port)
            yield Platform(port, base, cluster, postgres)
        finally:
            with contextlib.suppress(Exception):
                serve.shutdown()  # type: ignore[no-untyped-call]
            ray.shutdown()
            if cluster is not None:
                cluster.shutdown()
            if postgres is not None:
                postgres.stop()


def started_cluster(start: Any, attempts: int = 3) -> Any:
    """``start()``, again when Ray's fixed 30 s wait for a raylet ran out (a loaded machine)."""
    for attempt in range(1, attempts + 1):
        try:
            return start()
        except Exception as exc:
            if "timed out during startup" not in str(exc) or attempt == attempts:
                raise
            print(f"platform_load: the cluster did not start in time (attempt {attempt}); again", file=sys.stderr)
    raise AssertionError("unreachable")


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


def failed_runs(store_url: str) -> list[dict[str, Any]]:
    """Research runs the store has as failed (whoever submitted them), with their error."""
    from core.store import Store

    store = Store(store_url)
    try:
        rows = store.query("SELECT run_id, attempts, error FROM research_runs WHERE status='failed'")
    finally:
        store.close()
    return [{"run": r[0], "attempts": r[1], "error": r[2]} for r in rows]


def answers_while_down(ledger: Ledger) -> dict[str, int]:
    """How the requests that overlapped a store outage ended: answered, or refused with which status."""
    outcomes: Counter[str] = Counter()
    for call in ledger.calls:
        if any(
            call.started <= end and call.ended >= begin for begin, end in (r.window() for r in ledger.store_restarts)
        ):
            outcomes["answered" if call.ok else "lost" if call.lost else str(call.status or call.error)] += 1
    return dict(sorted(outcomes.items()))


def traffic(
    http: httpx.AsyncClient, ledger: Ledger, stop: Any, grace: Any, corpus: Any, args: argparse.Namespace
) -> list[Coroutine[Any, Any, None]]:
    """Every client of the run, as many of each kind as ``args`` asks for (``--research-clients`` ...)."""
    from core.resources import data_path

    ideas = json.loads(data_path("critic", "examples", "ideas.json").read_text(encoding="utf-8"))["ideas"]
    queries = router_queries()
    clients = [research_client(http, ledger, stop, grace, corpus) for _ in range(args.research_clients)]
    clients += [
        simple_client(http, ledger, "magi", stop, "/magi/ask", lambda n: {"prompt": MAGI_PROMPTS[n % 3], "rounds": 1})
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
    return clients


async def drive(args: argparse.Namespace, env: Platform) -> dict[str, Any]:
    from core.resources import data_path

    corpus = str(data_path("corpus"))
    ledger = Ledger()
    # A new connection per request, as behind a load balancer that stops using a lost node's proxy: a
    # kept-alive connection to the proxy of a node that went would fail the next request sent on it.
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=0)
    async with httpx.AsyncClient(
        base_url=f"http://127.0.0.1:{env.port}", timeout=CLIENT_TIMEOUT_S, limits=limits
    ) as http:
        begin = time.monotonic()
        measured_from = begin + args.warmup
        stop = measured_from + args.duration
        grace = stop + args.grace
        load = asyncio.gather(*traffic(http, ledger, stop, grace, corpus, args))
        await asyncio.sleep(max(0.0, measured_from - time.monotonic()))
        at_start = workers_summary()
        await faults(ledger, args, env, measured_from, http)
        await asyncio.sleep(max(0.0, stop - 2 - time.monotonic()))
        at_end = workers_summary()  # still under load, like the start
        await load
        await asyncio.sleep(args.settle)
        replicas_at_end = {app: len(pids_titled(f"ray::ServeReplica:{app}:")) for app in APPS}
        checks = await check_turns(http, ledger)
    report = per_app(ledger, measured_from)
    checks["lost_requests"] = sum(c.lost for c in ledger.calls)  # warm-up included
    checks["errors_other"] = sum(r["errors_other"] for r in report.values())
    replaced = [k.replaced_after_s for k in ledger.kills] + [k.replaced_after_s for k in ledger.node_kills]
    checks["every_kill_replaced"] = all(after is not None for after in replaced)
    checks["replicas_at_end"] = replicas_at_end
    failed = await asyncio.to_thread(failed_runs, env.store_url)
    rss_ratio = at_end["rss_mb"] / at_start["rss_mb"] if at_start["rss_mb"] else None
    other = [
        {"app": c.app, "at_s": round(c.started - measured_from, 1), "ended_s": round(c.ended - measured_from, 1)}
        | {"error": c.error, "said": c.detail}
        for c in unexplained(ledger)
        if c.ended >= measured_from
    ]
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
        "node_kills": [
            {"node": k.node, "components": k.components, "at_s": round(k.at - measured_from, 1)}
            | {"removed_in_s": round(k.done_at - k.at, 1)}
            | {"research_run": k.research_run, "replaced_after_s": k.replaced_after_s}
            for k in ledger.node_kills
        ],
        "store_restarts": [
            {
                "at_s": round(r.at - measured_from, 1),
                "down_s": round(r.back_at - r.at, 1) if r.back_at else None,
                "healthy_after_start_s": round(r.healthy_at - r.back_at, 1) if r.healthy_at and r.back_at else None,
                "app_healthy_after_start_s": {
                    app: round(at - (r.back_at or at), 1) for app, at in sorted(r.app_healthy_at.items())
                },
            }
            for r in ledger.store_restarts
        ],
        "answers_while_store_down": answers_while_down(ledger) if ledger.store_restarts else {},
        "other_errors": other[:20],
        "lost_calls": [
            {"app": c.app, "at_s": round(c.started - measured_from, 1), "error": c.error}
            for c in ledger.calls
            if c.lost
        ][:20],
        "research_runs_failed": len(failed),
        "research_failures": failed,
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
    parser.add_argument(
        "--research-clients", type=int, default=2, help="one per research replica: a lost node then holds a run"
    )
    parser.add_argument("--magi-clients", type=int, default=2)
    parser.add_argument("--critic-clients", type=int, default=2)
    parser.add_argument("--router-clients", type=int, default=2)
    parser.add_argument("--advisor-clients", type=int, default=2)
    parser.add_argument("--turns", type=int, default=20, help="router turns per conversation (a new session after)")
    parser.add_argument("--pause", type=float, default=0.5, help="seconds a router client waits between turns")
    parser.add_argument("--kill-node", action="store_true", help="remove a whole worker node (needs --nodes 3)")
    parser.add_argument("--restart-store", action="store_true", help="stop PostgreSQL, then start it (needs --nodes 3)")
    parser.add_argument("--store-down", type=float, default=10.0, help="seconds the store stays down")
    parser.add_argument("--kill-processes", action="store_true", help="the process kills too, with the above")
    args = parser.parse_args()
    if (args.kill_node or args.restart_store) and args.nodes != 3:
        parser.error("--kill-node and --restart-store need --nodes 3 (a Cluster with PostgreSQL)")
    with platform(args.nodes, args.latency) as env:
        deploy(env.base, args.replicas)
        result = asyncio.run(drive(args, env))
    print(json.dumps(result, ensure_ascii=False, indent=2))


if __name__ == "__main__":
    main()
