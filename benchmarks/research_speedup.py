"""Consensus research on Ray vs a KATASHIRO-like baseline, over the same pages, as a ratio in one run.

Both sides fetch every page over real HTTP from local servers that add ``--latency-ms`` to each page,
starting from cold caches (a fresh ``data_dir``, page and search caches off), and both load the NLP
models once inside their timed part. Each original host of the bundled corpus gets its own loopback
address (127.0.0.2, 127.0.0.3, ...), so per-host fetch limits apply as they would on the web.

1. Engine: ``run_research`` (N agents x M iterations) on a local Ray. Its agents search a
   SearXNG-compatible server that answers from the corpus' BM25 index with the loopback URLs (the
   ``local`` provider would read the files directly instead of fetching them). Ray start-up is
   timed separately and excluded.
2. Baseline, in one process without Ray: in each iteration every agent takes the URLs the engine's
   agent of that iteration asked for, and fetches, extracts and analyses them one at a time, with its
   own fetcher and no cache; agents of an iteration run concurrently (like ``Promise.allSettled``),
   iterations one after another. It does not search, which favours it.

3. Warm: a second engine run on the same NLP pool (the Serve replica keeps its pool between runs),
   with the analyses of the first run cached: ``warm_engine_s``, ``warm_speedup_vs_baseline``, and
   ``warm_nlp_batches`` (0: no text reached GiNZA; workers load models only on their first batch).

4. Serve over HTTP: the research Serve app (``deployments/research.py``) on 127.0.0.1 with its own
   data directory; the run is POSTed to ``/research`` as the research page does and ``GET
   /research/{id}`` is polled until it completes, twice: ``cold_serve_http_s`` (the replica starts
   its NLP pool), then ``warm_serve_http_s`` (kept pool, every analysis cached) and its ratio to the
   baseline, ``warm_serve_http_speedup_vs_baseline``. Deployment (``serve_deploy_s``) is not timed.

Prints JSON with ``speedup_vs_baseline`` (baseline seconds / engine seconds).
Usage: .venv/bin/python benchmarks/research_speedup.py [--agents 3] [--iterations 3] [--latency-ms 150]
       [--cpus N] [--no-serve] [--timeline]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import pairwise
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit

import httpx
from collect import CORPUS, QuietHandler  # benchmarks/collect.py: this script's directory is sys.path[0]

from core.errors import MagiError
from core.events import ListSink
from core.runtime import RayRuntime, start_ray, stop_ray
from core.settings import Settings, load_settings
from nlp.analysis import AnalysisInput, analyse_texts
from nlp.settings import NlpSettings
from research.engine import run_research, start_pool
from scrapers.extract import extract_page
from scrapers.fetch import Fetcher, FetchPolicy
from scrapers.search.local import LocalCorpus, LocalSearchProvider
from scrapers.settings import FetchSettings

TIME_RANGES = {"day": "d", "week": "w", "month": "m", "year": "y"}
CATEGORIES = {"news": "news", "academic": "science"}  # what the searxng client maps back to source types


class Server(ThreadingHTTPServer):
    """A listen backlog like a real web or SearXNG server's (socketserver's default is 5: a burst of
    concurrent searches then loses SYNs, and each lost one costs a 1 s TCP retransmission)."""

    request_queue_size = 128


class SlowHandler(QuietHandler):
    latency_s = 0.0

    def do_GET(self) -> None:
        time.sleep(self.latency_s)  # per page; the threading server overlaps concurrent requests
        super().do_GET()


@contextmanager
def serve(handler: Any, host: str = "127.0.0.1") -> Iterator[str]:
    httpd = Server((host, 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://{host}:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def search_handler(provider: LocalSearchProvider, url_of: dict[str, str]) -> type[BaseHTTPRequestHandler]:
    """``/search?format=json`` like SearXNG: BM25 over the corpus, answered with the loopback URLs."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            params = dict(parse_qsl(urlsplit(self.path).query))
            rows: list[dict[str, Any]] = []
            if params.get("pageno", "1") == "1":  # everything is on page 1
                hits = provider.search_sync(
                    params["q"], max_results=20, time_range=TIME_RANGES.get(params.get("time_range", ""))
                )
                rows = [
                    {
                        "url": url_of[h.url],
                        "title": h.title,
                        "content": h.snippet,
                        "engine": "bm25",
                        "score": h.score,
                        "category": CATEGORIES.get(h.source_type or "", "general"),
                        "publishedDate": h.published.isoformat() if h.published else None,
                    }
                    for h in hits
                ]
            body = json.dumps({"query": params.get("q"), "results": rows, "unresponsive_engines": []}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            """Silent."""

    return Handler


@contextmanager
def web(latency_s: float) -> Iterator[str]:
    """One latency page server per corpus host on its own loopback address, plus the search server."""
    corpus = LocalCorpus(CORPUS)
    provider = LocalSearchProvider(corpus)
    provider.search_sync(corpus.topic or "価格転嫁")  # build the index now: a search engine is already up
    handler = type("Slow", (SlowHandler,), {"latency_s": latency_s})
    with ExitStack() as stack:
        bases: dict[str, str] = {}
        url_of: dict[str, str] = {}
        for doc in corpus.documents:
            host = urlsplit(doc.url).netloc
            if host not in bases:
                address = f"127.0.0.{len(bases) + 2}"
                bases[host] = stack.enter_context(serve(partial(handler, directory=str(CORPUS)), address))
            url_of[doc.url] = f"{bases[host]}/{quote(doc.path.relative_to(corpus.directory).as_posix())}"
        yield stack.enter_context(serve(search_handler(provider, url_of)))


def bench_settings(data_dir: Path, searxng_url: str, agents: int, iterations: int, cpus: int) -> Settings:
    return load_settings(
        overrides={
            "data_dir": data_dir,
            "search": {"provider": "searxng", "fallbacks": [], "searxng_url": searxng_url, "cache_ttl_s": 0},
            "fetch": {"page_cache_ttl_s": 0, "allow_private": True, "respect_robots": False, "politeness_delay_s": 0.0},
            "research": {"agents": agents, "iterations": iterations},
            "ray": {"num_cpus": cpus},
            "nlp": {"workers": cpus},
        }
    )


def urls_by_iteration(result: Any) -> list[list[list[str]]]:
    """For each iteration, for each successful agent, every URL it asked the collector for."""
    iterations = getattr(result, "iterations", None) or [result]  # before iterations existed: one
    return [
        [[s.url for s in report.sources] + [f.url for f in report.failures] for report in it.agent_reports]
        for it in iterations
    ]


@dataclass
class Tally:
    fetches: int = 0
    analyses: int = 0
    failures: int = 0


async def baseline_agent(urls: list[str], settings: Settings, tally: Tally) -> None:
    """One KATASHIRO-like agent: its own fetcher, each page fetched, extracted and analysed alone."""
    fetcher = Fetcher(policy=FetchPolicy.of(FetchSettings.of(settings)))
    try:
        for url in urls:
            try:
                tally.fetches += 1
                page = await fetcher.fetch(url)
                extracted = await asyncio.to_thread(extract_page, page.text, url=url, content_type=page.content_type)
                await asyncio.to_thread(analyse_texts, [(extracted.text, extracted.lang)])
                tally.analyses += 1
            except MagiError:
                tally.failures += 1  # a failed source is skipped, as the engine does
    finally:
        await fetcher.aclose()


# Loads both languages' models, as the baseline's one process must before its first page.
WARM_UP = [
    AnalysisInput("令和6年9月の価格転嫁率は49.7%だった。", "ja"),
    AnalysisInput("Prices rose 3% in March 2025.", "en"),
]


async def baseline(plan: list[list[list[str]]], settings: Settings, tally: Tally) -> tuple[float, list[float]]:
    """Model loading (once), then the iterations in turn, the agents of each concurrently.

    Returns the total seconds and the seconds of each step: model loading, then each iteration."""
    steps = [time.perf_counter()]
    await asyncio.to_thread(analyse_texts, WARM_UP)
    steps.append(time.perf_counter())
    for agents in plan:
        await asyncio.gather(*(baseline_agent(urls, settings, tally) for urls in agents), return_exceptions=True)
        steps.append(time.perf_counter())
    return steps[-1] - steps[0], [round(b - a, 2) for a, b in pairwise(steps)]


async def engine(topic: str, settings: Settings) -> tuple[Any, float, Any, float]:
    """A cold run, then a warm one on the same NLP pool (as the Serve replica keeps it between runs).

    Returns (cold result, cold seconds, warm result, warm seconds). The warm run finds every analysis
    in the cache (pages are fetched again: the page cache is off), so its NLP workers get no batch."""
    runtime = RayRuntime()
    pool = start_pool(runtime, NlpSettings.of(settings))
    try:
        started = time.perf_counter()
        sink = ListSink()
        cold = await run_research(topic, settings, runtime, sink, pool=pool)
        cold_s = time.perf_counter() - started
        timeline("cold", sink)
        started = time.perf_counter()
        sink = ListSink()
        warm = await run_research(topic, settings, runtime, sink, pool=pool)
        timeline("warm", sink)
        return cold, cold_s, warm, time.perf_counter() - started
    finally:
        for worker in pool.workers:
            runtime.kill(worker)
        await runtime.close()


SHOW_TIMELINE = False  # --timeline


def timeline(label: str, sink: ListSink) -> None:
    """With --timeline: each event of a run with its second since the run started, on stderr (where the
    time goes: actor start-up before an agent's first stage, search, collection, scoring)."""
    if not SHOW_TIMELINE:
        return
    first = sink.events[0].ts
    for e in sink.events:
        d = e.model_dump()
        extra = {k: d[k] for k in ("iteration", "agent_id", "stage", "done", "total") if k in d}
        print(f"{label} {(e.ts - first).total_seconds():7.2f} {e.type:20s} {extra}", file=sys.stderr)


def serve_runs(settings: Settings, topic: str, agents: int, iterations: int) -> tuple[float, float, float]:
    """The research Serve app over HTTP on 127.0.0.1, as the research page uses it: POST /research,
    then GET /research/{id} until the run is done, twice. Its replica keeps one NLP pool between runs,
    and the second run finds every analysis in the cache of the first (its own data directory).

    Returns (deploy seconds, first run seconds, second run seconds); deployment is not in the runs."""
    from ray import serve

    from deployments import proxy
    from deployments.research import APP_NAME, ROUTE_PREFIX, build_app

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    started = time.perf_counter()
    proxy.start_serve("127.0.0.1", port)
    try:
        serve.run(build_app(settings), name=APP_NAME, route_prefix=ROUTE_PREFIX)
        deploy_s = time.perf_counter() - started
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
            first = http_run(client, topic, agents, iterations)
            second = http_run(client, topic, agents, iterations)
            return deploy_s, first, second
    finally:
        serve.shutdown()


def http_run(client: httpx.Client, topic: str, agents: int, iterations: int) -> float:
    """Seconds from the POST to the run's completed status (polled every 50 ms)."""
    started = time.perf_counter()
    answer = client.post("/research", json={"topic": topic, "agents": agents, "iterations": iterations})
    if answer.status_code != 202:
        raise SystemExit(f"research app refused the run: HTTP {answer.status_code} {answer.text[:300]}")
    run_id = answer.json()["runId"]
    while True:
        body = client.get(f"/research/{run_id}").json()
        if body["status"] == "completed":
            return time.perf_counter() - started
        if body["status"] == "failed":
            raise SystemExit(f"research run {run_id} failed in the Serve app: {body.get('error')}")
        time.sleep(0.05)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--latency-ms", type=float, default=150.0, help="simulated latency of each page")
    parser.add_argument("--cpus", type=int, default=os.cpu_count() or 1, help="CPUs of the local Ray")
    parser.add_argument("--topic", default="中小企業の価格転嫁の現状")
    parser.add_argument("--no-serve", action="store_true", help="skip the two runs through the Serve app")
    parser.add_argument("--timeline", action="store_true", help="print each engine run's events with times")
    args = parser.parse_args()
    global SHOW_TIMELINE
    SHOW_TIMELINE = args.timeline

    with tempfile.TemporaryDirectory() as tmp, web(args.latency_ms / 1000) as searxng:
        settings = bench_settings(Path(tmp) / "engine", searxng, args.agents, args.iterations, args.cpus)
        started = time.perf_counter()
        start_ray(settings)
        ray_start_s = time.perf_counter() - started
        result, engine_s, warm, warm_s = asyncio.run(engine(args.topic, settings))
        serve_s: tuple[float, float, float] | None = None
        if not args.no_serve:
            serve_settings = bench_settings(Path(tmp) / "serve", searxng, args.agents, args.iterations, args.cpus)
            with contextlib.redirect_stdout(sys.stderr):  # Ray's own messages (raylet, Serve) stay off the JSON
                serve_s = serve_runs(serve_settings, args.topic, args.agents, args.iterations)
                stop_ray()
        stop_ray()  # before the baseline, so that it has the CPUs to itself

        plan = urls_by_iteration(result)
        tally = Tally()
        baseline_s, baseline_steps = asyncio.run(baseline(plan, settings, tally))  # no store: no cache

    stats = result.collection
    print(
        json.dumps(
            {
                "speedup_vs_baseline": round(baseline_s / engine_s, 2),
                "engine_s": round(engine_s, 2),
                "warm_engine_s": round(warm_s, 2),
                "warm_speedup_vs_baseline": round(baseline_s / warm_s, 2),
                "warm_analyses": warm.collection.analyses if warm.collection else None,
                "warm_analysis_cache_hits": warm.collection.analysis_cache_hits if warm.collection else None,
                "warm_nlp_batches": sum(
                    n.get("batches", 0) for n in (warm.collection.nlp_usage_by_node if warm.collection else {}).values()
                ),
                "cold_serve_http_s": round(serve_s[1], 2) if serve_s else None,
                "warm_serve_http_s": round(serve_s[2], 2) if serve_s else None,
                "warm_serve_http_speedup_vs_baseline": round(baseline_s / serve_s[2], 2) if serve_s else None,
                "serve_deploy_s": round(serve_s[0], 2) if serve_s else None,
                "baseline_s": round(baseline_s, 2),
                "ray_start_s": round(ray_start_s, 2),
                "agents": args.agents,
                "iterations": len(plan),
                "iterations_requested": args.iterations,
                "agent_runs": result.total_agent_runs,
                "latency_ms": args.latency_ms,
                "cpus": args.cpus,
                "topic": args.topic,
                "stopped_early": getattr(result, "stopped_early", None),
                "urls_requested_engine": stats.urls_requested if stats else None,
                "pages_fetched_engine": stats.fetches if stats else None,
                "page_fetches_baseline": tally.fetches,
                "engine_iteration_s": [round(it.duration_ms / 1000, 2) for it in getattr(result, "iterations", [])],
                "baseline_model_load_s": baseline_steps[0],
                "baseline_iteration_s": baseline_steps[1:],
                "analyses_engine": stats.analyses if stats else None,
                "analyses_baseline": tally.analyses,
                "failures_engine": stats.failures_by_kind if stats else None,
                "failures_baseline": tally.failures,
                "cold": "both sides: fresh data_dir, page cache off (page_cache_ttl_s=0), search cache off, "
                "empty analysis cache; robots.txt off and no politeness delay on both",
                "notes": "engine_s: run_research wall time, incl. actor start-up and GiNZA loading in the NLP workers, "
                "excl. Ray start-up (ray_start_s). baseline_s: one process, no Ray, incl. loading the same "
                "models once, agents concurrent per iteration (extraction/analysis in threads, one GiNZA), "
                "iterations sequential; it fetches the engine's URLs and does not search.",
            },
            indent=2,
            ensure_ascii=False,
        )
    )


if __name__ == "__main__":
    main()
