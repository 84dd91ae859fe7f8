"""A research on a 3-node Ray cluster (``ray.cluster_utils.Cluster``) with PostgreSQL as the store:
agents, the collector and NLP workers on different nodes share one page cache and one run record.

This module runs its own cluster, so it stops the session's single-node Ray first (two clusters do
not fit on the test machine) and starts it again afterwards for the modules that follow.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import pytest
import pytest_asyncio
import sqlalchemy as sa

from actors.collector import Collector
from actors.nlp_pool import NlpPool
from core.events import FanoutSink, ListSink
from core.runtime import Handle, RayRuntime
from core.settings import load_settings
from core.store import Store
from research import runs
from research.engine import run_research
from research.events import ResearchCompleted
from research.result import ConsensusResearchResult
from tests.integration.conftest import own_cluster

TOPIC = "中小企業の価格転嫁の現状"
RUN_ID = "three-nodes"


@pytest.fixture(scope="module")
def three_nodes() -> Iterator[Any]:
    with own_cluster(3) as cluster:
        yield cluster


def _actor_nodes() -> dict[str, set[str]]:
    """Class name -> ids of the nodes its actors ran on (dead actors keep their address)."""
    from ray._private import state

    nodes: dict[str, set[str]] = defaultdict(set)
    for actor in state.actors().values():  # type: ignore[no-untyped-call]
        node = (actor.get("Address") or {}).get("NodeID")
        if node:
            nodes[actor["ActorClassName"]].add(node)
    return nodes


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def clustered_run(
    three_nodes: Any, tmp_path_factory: pytest.TempPathFactory, postgres_server: Any
) -> Iterator[tuple[Any, ...]]:
    url = postgres_server.create_database()
    # Module-scoped: runs before the per-test isolation, so every setting is given explicitly.
    data_dir = tmp_path_factory.mktemp("node-local")
    settings = load_settings(
        overrides={
            "data_dir": data_dir,
            "store_url": url,
            "research": {"agents": 3, "iterations": 1, "agent_timeout_s": 120},
            "nlp": {"workers": 3},
        }
    )
    store = Store(url)
    events = ListSink()
    runtime = RayRuntime()
    try:
        runs.record_started(store, RUN_ID, TOPIC)
        sink = runs.StoreEventSink(store, RUN_ID)
        result = await run_research(TOPIC, settings, runtime, FanoutSink(events, sink), run_id=RUN_ID)
        terminal = next(e for e in reversed(events.events) if isinstance(e, ResearchCompleted))
        runs.finish_completed(store, result, terminal)
    finally:
        await runtime.close()
    nodes = _actor_nodes()
    assert not list(data_dir.rglob("*.sqlite3"))  # no process fell back to a file of its own
    yield url, result, events, nodes, settings
    store.close()
    postgres_server.drop_database(url)


def test_the_run_used_several_nodes(clustered_run: Any) -> None:
    _, result, _, nodes, _ = clustered_run
    everywhere = set().union(*nodes.values())
    assert len(everywhere) >= 2, dict(nodes)
    assert len(nodes["NlpWorker"]) >= 2, dict(nodes)  # the pool spreads over the cluster
    assert result.collection is not None and len(result.collection.nlp_usage_by_node) >= 2
    assert nodes["ResearchAgent"] and nodes["Collector"], dict(nodes)


def test_pages_cached_on_any_node_are_in_the_one_postgresql_cache(clustered_run: Any) -> None:
    url, result, _, _, _ = clustered_run
    store = Store(url)
    cached = {r[0] for r in store.query("SELECT url FROM page_snapshots")}
    read = {s.url for s in result.sources}
    assert read and read <= cached  # every page the collector read is in PostgreSQL
    texts = store.query("SELECT COUNT(*) FROM page_texts")[0][0]
    analyses = store.query("SELECT COUNT(*) FROM nlp_analyses")[0][0]
    assert texts >= 1 and analyses >= 1
    store.close()


def test_the_run_record_and_events_are_in_postgresql(clustered_run: Any) -> None:
    url, _, events, _, _ = clustered_run
    store = Store(url)
    run = runs.load_run(store, RUN_ID)
    assert run is not None and run.status == "completed" and run.result_json
    assert ConsensusResearchResult.model_validate_json(run.result_json).run_id == RUN_ID
    stored = runs.load_events(store, RUN_ID)
    assert [e.seq for e in stored] == list(range(1, len(stored) + 1))
    assert [e.type for e in stored] == [e.type for e in events.events]  # every event, in order, once
    assert stored[-1].type == "researchCompleted"
    with store.engine.connect() as conn:
        assert conn.execute(sa.text("SELECT current_database()")).scalar_one() == url.rsplit("/", 1)[1]
    store.close()


@pytest.mark.asyncio(loop_scope="module")
async def test_a_collector_on_every_other_node_reads_the_run_s_pages_from_the_shared_cache(clustered_run: Any) -> None:
    """Pinned to each node the run's collector did not use, a new collector finds the pages and their
    analyses in PostgreSQL: nothing is fetched or analysed again, whichever node asks."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    _, result, _, nodes, settings = clustered_run
    urls = sorted({s.url for s in result.sources})[:4]
    others = {n["NodeID"] for n in ray.nodes() if n["Alive"]} - nodes["Collector"]
    assert len(others) >= 2
    runtime = RayRuntime()
    pool = NlpPool.start(runtime, 1)  # needed by the constructor; every analysis should come from the cache
    try:
        for node in sorted(others):
            actor = (
                ray.remote(Collector)
                .options(num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False))
                .remote(settings, pool)
            )
            reader: Handle[Collector] = Handle(actor, remote=True)
            collected = await reader.call(Collector.collect, urls)
            stats = await reader.call(Collector.stats)
            assert [c.from_cache for c in collected] == [True] * len(urls), node
            assert all(c.analysis is not None for c in collected)
            assert stats.fetches == 0 and stats.page_cache_hits == len(urls) and stats.analyses == 0
            assert node in _actor_nodes()["Collector"]
            runtime.kill(reader)
    finally:
        for worker in pool.workers:
            runtime.kill(worker)
        await runtime.close()
