"""The collection layer on a real local Ray: NLP pool + collector against a real HTTP server."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from actors.collector import Collector
from actors.nlp_pool import NlpPool
from actors.nlp_worker import NlpWorker
from core.runtime import RayRuntime
from core.settings import load_settings
from nlp.analysis import AnalysisInput

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"


def corpus_file(url_suffix: str) -> Path:
    manifest = yaml.safe_load((CORPUS / "manifest.yaml").read_text(encoding="utf-8"))
    for page in manifest["pages"]:
        if page["url"].endswith(url_suffix):
            return CORPUS / page["file"]
    raise LookupError(url_suffix)


@pytest.fixture(scope="module")
def site() -> Iterator[tuple[str, Counter[str]]]:
    hits: Counter[str] = Counter()
    bodies = {
        "/autumn": corpus_file("sme-price-survey.example/2024/autumn").read_bytes(),
        "/blog": corpus_file("2024/12/10/kakaku-tenka").read_bytes(),
        "/news": corpus_file("tokyo-business-daily.example/articles/2024/11/29/kakaku-tenka-chousa").read_bytes(),
        "/copy": corpus_file("chiiki-keizai-portal.example/news/20241130-kakaku-tenka").read_bytes(),
    }

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits[self.path] += 1
            body = bodies.get(self.path)
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", hits
    httpd.shutdown()


async def test_each_url_fetched_and_analysed_once_across_agents(
    ray_cluster: None, site: tuple[str, Counter[str]], tmp_path: Path
) -> None:
    base, hits = site
    settings = load_settings(
        overrides={"data_dir": tmp_path, "fetch": {"allow_private": True, "politeness_delay_s": 0}}
    )
    runtime = RayRuntime()
    pool = NlpPool.start(runtime, 2)
    collector = runtime.spawn(Collector, settings, pool, num_cpus=0)
    urls = [f"{base}/autumn", f"{base}/news", f"{base}/copy", f"{base}/blog", f"{base}/missing"]
    # Three "agents" ask at the same time for overlapping URLs.
    answers = await asyncio.gather(*(collector.call(Collector.collect, urls[i:] + urls[:i]) for i in range(3)))
    assert all(len(a) == len(urls) for a in answers)
    by_url = {c.url: c for c in answers[0]}
    assert by_url[f"{base}/missing"].failure is not None and by_url[f"{base}/missing"].failure.kind == "http_status"
    # The syndicated copy and its original count as one origin; the original is the earlier published page
    # (news: 2024-11-29, copy: 11-30), whichever was read first, and every agent is told the same.
    for answer in answers:
        pair = {c.url: c.duplicate_of for c in answer if c.url in (f"{base}/copy", f"{base}/news")}
        assert pair == {f"{base}/copy": f"{base}/news", f"{base}/news": None}
    autumn = by_url[f"{base}/autumn"].analysis
    assert autumn is not None and autumn.claims and any(e.label == "PERCENT" for e in autumn.entities)
    stats = await collector.call(Collector.stats)
    assert stats.urls_requested == 15 and stats.unique_urls == 5
    assert stats.fetches == 5 and stats.urls_fetched_more_than_once == 0
    assert stats.analyses == 4 and stats.contents_analysed_more_than_once == 0
    assert stats.near_duplicates == 1 and stats.failures_by_kind == {"http_status": 1}
    assert hits["/autumn"] == 1 and hits["/news"] == 1
    assert sum(u["batches"] for u in stats.nlp_usage_by_node.values()) >= 1

    # A later run reuses the page and analysis caches: no request reaches the server.
    before = sum(hits.values())
    again = runtime.spawn(Collector, settings, pool, num_cpus=0)
    await again.call(Collector.collect, urls[:4])
    stats = await again.call(Collector.stats)
    assert stats.page_cache_hits == 4 and stats.fetches == 0 and stats.analysis_cache_hits == 4
    assert stats.analyses == 0 and sum(hits.values()) == before
    for handle in [collector, again]:
        runtime.kill(handle)
    for worker in pool.workers:
        runtime.kill(worker)
    await runtime.close()


async def test_pool_survives_a_dead_worker(ray_cluster: None) -> None:
    runtime = RayRuntime()
    pool = NlpPool.start(runtime, 2)
    await asyncio.gather(*(w.call(NlpWorker.analyse, [AnalysisInput("準備", "ja")]) for w in pool.workers))
    workers = list(pool.workers)
    runtime.kill(workers[0])
    # Two texts above the batch size: two batches, so the dead worker surely gets one and hands it back.
    texts = [(f"令和6年{i}月の価格転嫁率は{40 + i}.5%だった。" * 170, "ja") for i in range(1, 3)]
    analyses = await pool.analyse(texts)
    assert len(analyses) == 2 and all(a.claims for a in analyses)
    assert pool.workers == [workers[1]]  # the dead worker left the pool
    runtime.kill(workers[1])
    await runtime.close()


async def test_a_batch_held_by_a_worker_that_cannot_run_is_analysed_by_another(ray_cluster: None) -> None:
    """A worker restarted after its node died may find no free CPU and wait for one forever, and Ray
    keeps the calls sent to it waiting too. Here such a worker asks for more CPUs than the cluster has."""
    runtime = RayRuntime()
    [running] = NlpPool.start(runtime, 1).workers
    stranded = runtime.spawn(NlpWorker, num_cpus=64, max_concurrency=1)
    pool = NlpPool([stranded, running], stalled_s=5)
    # Two texts above the batch size: two batches, so the stranded worker (least loaded) surely gets one.
    texts = [(f"令和6年{i}月の価格転嫁率は{40 + i}.5%だった。" * 170, "ja") for i in range(1, 3)]
    analyses = await pool.analyse(texts)
    assert len(analyses) == 2 and all(a.claims for a in analyses)
    assert sum(n["batches"] for n in pool.usage().values()) == 2  # each batch counted once, where it ran
    assert pool.workers == [stranded, running]  # a worker that holds a batch is not dropped: it may be busy
    runtime.kill(stranded)
    runtime.kill(running)
    await runtime.close()
