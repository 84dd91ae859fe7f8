"""Collection throughput: fetch -> extract -> entities/claims, NLP pool vs a sequential baseline.

Everything runs in one invocation, so the ratios compare like with like on this machine:
1. A local HTTP server on 127.0.0.1 serves the bundled corpus plus a generated larger corpus.
2. Baseline: one process fetches, extracts and analyses each page in turn (models loaded once).
3. The single-core NLP rate: the same analysis over all extracted texts in one process.
4. The pipeline: a Collector actor (fetch + extract) feeding an NlpPool on a local Ray.
5. A simulated 3-node ``ray.cluster_utils.Cluster``: which node analysed how much.

Prints JSON with ``speedup_vs_sequential`` (baseline time / pipeline time),
``fraction_of_cpu_limit`` (pipeline chars/s / (CPUs x single-core NLP chars/s)) and ``nodes_used``.
Usage: .venv/bin/python benchmarks/collect.py [--pages N] [--cpus N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

from actors.collector import Collector
from actors.nlp_pool import NlpPool
from actors.nlp_worker import NlpWorker
from core.resources import data_path
from core.runtime import RayRuntime
from core.settings import Settings, load_settings
from nlp.analysis import AnalysisInput, analyse_texts
from nlp.entities import extract_entities_batch
from scrapers.extract import extract_page
from scrapers.fetch import Fetcher, FetchPolicy
from scrapers.settings import FetchSettings

CORPUS = data_path("corpus")


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        """Silent: the benchmark's output is its JSON."""


@contextmanager
def serve(directory: Path) -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), partial(QuietHandler, directory=str(directory)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()


def build_site(root: Path, generated: int, seed: int = 7) -> list[str]:
    """Copy the bundled pages and add ``generated`` new pages made of shuffled corpus paragraphs."""
    manifest = yaml.safe_load((CORPUS / "manifest.yaml").read_text(encoding="utf-8"))
    paths: list[str] = []
    paragraphs: list[str] = []
    for page in manifest["pages"]:
        html = (CORPUS / page["file"]).read_text(encoding="utf-8")
        target = root / page["file"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(html, encoding="utf-8")
        paths.append(page["file"])
        if page["lang"] == "ja":
            text = extract_page(html, url=page["url"]).text
            paragraphs += [p for p in text.split("\n") if len(p) > 40]
    rng = random.Random(seed)
    for i in range(generated):
        body = "".join(f"<p>{p}</p>" for p in rng.sample(paragraphs, min(8, len(paragraphs))))
        html = (
            f"<html lang='ja'><head><meta charset='utf-8'><title>生成ページ {i}</title></head><body>"
            f"<nav>ホーム | 一覧</nav><article><h1>価格転嫁の動向 {i}</h1>{body}</article>"
            f"<footer>© generated page {i}</footer></body></html>"
        )
        (root / "gen").mkdir(exist_ok=True)
        (root / "gen" / f"{i:04d}.html").write_text(html, encoding="utf-8")
        paths.append(f"gen/{i:04d}.html")
    return paths


def bench_settings(data_dir: Path) -> Settings:
    # The server is on 127.0.0.1 (the SSRF guard must allow it) and is ours, so no politeness delay.
    return load_settings(
        overrides={
            "data_dir": data_dir,
            "fetch": {
                "allow_private": True,
                "politeness_delay_s": 0.0,
                "per_host_concurrency": 16,
                "page_cache_ttl_s": 0,
            },
        }
    )


async def sequential(urls: list[str], settings: Settings) -> tuple[float, int, list[str]]:
    """The baseline: one page at a time, fetch -> extract -> analyse, in this process."""
    fetcher = Fetcher(policy=FetchPolicy.of(FetchSettings.of(settings)))
    texts: list[str] = []
    started = time.perf_counter()
    for url in urls:
        page = await fetcher.fetch(url)
        extracted = extract_page(page.text, url=url, content_type=page.content_type)
        analyse_texts([(extracted.text, extracted.lang)])
        texts.append(extracted.text)
    elapsed = time.perf_counter() - started
    await fetcher.aclose()
    return elapsed, sum(map(len, texts)), texts


async def pipeline(urls: list[str], settings: Settings, workers: int) -> tuple[float, dict[str, Any]]:
    runtime = RayRuntime()
    pool = NlpPool.start(runtime, workers)
    warm = [AnalysisInput("準備", "ja")]
    await asyncio.gather(*(w.call(NlpWorker.analyse, warm) for w in pool.workers))  # models loaded before timing
    collector = runtime.spawn(Collector, settings, pool, num_cpus=0)
    await collector.call(Collector.stats)  # the collector process is up (imports done) before timing
    started = time.perf_counter()
    collected = await collector.call(Collector.collect, urls)
    elapsed = time.perf_counter() - started
    stats = (await collector.call(Collector.stats)).model_dump(by_alias=True)
    failures = [c.failure.message for c in collected if c.failure]
    runtime.kill(collector)
    for worker in pool.workers:
        runtime.kill(worker)
    await runtime.close()
    return elapsed, {"stats": stats, "failures": failures[:5]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pages", type=int, default=120, help="generated pages on top of the bundled corpus")
    parser.add_argument("--cpus", type=int, default=2)
    args = parser.parse_args()
    import ray
    from ray.cluster_utils import Cluster

    with tempfile.TemporaryDirectory() as tmp, serve(Path(tmp) / "site") as base:
        paths = build_site(Path(tmp) / "site", args.pages)
        urls = [f"{base}/{p}" for p in paths]
        settings = bench_settings(Path(tmp) / "data")

        seq_s, chars, texts = asyncio.run(sequential(urls, settings))
        started = time.perf_counter()
        analyse_texts([(t, None) for t in texts])
        nlp_rate = chars / (time.perf_counter() - started)
        started = time.perf_counter()
        extract_entities_batch(texts)
        ginza_full_text_rate = chars / (time.perf_counter() - started)

        ray.init(address="local", num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
        pipe_s, pipe = asyncio.run(pipeline(urls, settings, args.cpus))
        ray.shutdown()

        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
        for _ in range(2):
            cluster.add_node(num_cpus=1)
        ray.init(address=cluster.address, log_to_driver=False)
        cluster_settings = bench_settings(Path(tmp) / "data-cluster")
        cluster_s, clustered = asyncio.run(pipeline(urls, cluster_settings, 3))
        ray.shutdown()
        cluster.shutdown()

    usage = clustered["stats"]["nlpUsageByNode"]
    print(
        json.dumps(
            {
                "pages": len(urls),
                "characters": chars,
                "cpus": args.cpus,
                "sequential": {
                    "seconds": round(seq_s, 2),
                    "pages_per_s": round(len(urls) / seq_s, 2),
                    "chars_per_s": round(chars / seq_s),
                },
                "pipeline": {
                    "seconds": round(pipe_s, 2),
                    "pages_per_s": round(len(urls) / pipe_s, 2),
                    "chars_per_s": round(chars / pipe_s),
                    **pipe,
                },
                "single_core_nlp_chars_per_s": round(nlp_rate),
                "single_core_ginza_full_text_chars_per_s": round(ginza_full_text_rate),
                "speedup_vs_sequential": round(seq_s / pipe_s, 2),
                "fraction_of_cpu_limit": round((chars / pipe_s) / (args.cpus * nlp_rate), 2),
                "cluster_3_nodes": {"seconds": round(cluster_s, 2), "chars_by_node": usage},
                "nodes_used": sum(1 for u in usage.values() if u["batches"] > 0),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
