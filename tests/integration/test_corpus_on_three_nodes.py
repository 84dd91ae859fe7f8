"""A ``--corpus`` folder exists on the driver's machine only: on a 3-node ``ray.cluster_utils.Cluster``
its files must be read (indexed, searched, fetched) on the driver's node, whichever nodes the agents
run on. The node ids asserted are the ones recorded by the code that reads the files.

This module runs its own cluster, so it stops the session's single-node Ray first and starts it again
afterwards (as tests/integration/test_store_three_nodes.py does).
"""

from __future__ import annotations

import shutil
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actors.collector import Collector
from actors.nlp_pool import NlpPool
from core.events import ListSink
from core.resources import data_path
from core.runtime import RayRuntime, current_node_id
from core.settings import Settings, load_settings
from research.agent import ResearchAgent
from research.engine import run_research
from research.strategies import strategy_for
from tests.integration.conftest import own_cluster

pytestmark = pytest.mark.asyncio(loop_scope="module")

TOPIC = "中小企業の価格転嫁の現状"


@pytest.fixture(scope="module")
def three_nodes() -> Iterator[Any]:
    with own_cluster(3) as cluster:
        yield cluster


def _settings(tmp_path: Path, **research: Any) -> Settings:
    corpus = tmp_path / "driver-only-corpus"
    shutil.copytree(data_path("corpus"), corpus)
    return load_settings(
        overrides={
            "data_dir": tmp_path / "data",
            "search": {"corpus_dir": corpus},
            "research": {"agents": 3, "iterations": 1, "agent_timeout_s": 120, **research},
            "nlp": {"workers": 2},
        }
    )


def _actor_nodes(key: str = "ActorClassName") -> dict[str, set[str]]:
    """Class name (or actor name) -> ids of the nodes its actors ran on, from Ray's own records."""
    from ray._private import state

    nodes: dict[str, set[str]] = defaultdict(set)
    for actor in state.actors().values():  # type: ignore[no-untyped-call]
        node = (actor.get("Address") or {}).get("NodeID")
        if node and actor.get(key):
            nodes[actor[key]].add(node)
    return nodes


def _other_nodes(driver: str) -> list[str]:
    import ray

    return sorted(n["NodeID"] for n in ray.nodes() if n["Alive"] and n["NodeID"] != driver)


async def test_a_research_reads_the_corpus_on_the_driver_s_node(three_nodes: Any, tmp_path: Path) -> None:
    driver = current_node_id()
    runtime = RayRuntime()
    try:
        result = await run_research(TOPIC, _settings(tmp_path), runtime, ListSink())
    finally:
        await runtime.close()
    stats = result.collection
    assert stats is not None and result.sources
    assert stats.corpus_node == driver  # indexed there
    assert set(stats.corpus_reads_by_node) == {driver}  # every search and page read there
    assert stats.corpus_reads_by_node[driver] >= len(result.sources)
    assert _actor_nodes()["Collector"] == {driver}


async def test_agents_on_other_nodes_search_the_corpus_where_it_is(three_nodes: Any, tmp_path: Path) -> None:
    """Agents pinned to the two other nodes; every read of the corpus is still on the driver's node.
    A collector placed on another node (what an unpinned collector could get) records that node."""
    driver = current_node_id()
    others = _other_nodes(driver)
    assert len(others) == 2
    settings = _settings(tmp_path)
    runtime = RayRuntime()
    pool = NlpPool.start(runtime, 2)
    collector = runtime.spawn(Collector, settings, pool, num_cpus=0, node_id=driver)
    elsewhere = runtime.spawn(Collector, settings, pool, num_cpus=0, node_id=others[0])
    agents = [
        runtime.spawn(
            ResearchAgent,
            i,
            strategy_for(i),
            settings,
            collector,
            None,
            "pinned",
            num_cpus=0,
            node_id=node,
            name=f"pinned-agent-{i}",
        )
        for i, node in enumerate(others, start=1)
    ]
    try:
        reports = [await agent.call(ResearchAgent.run, TOPIC) for agent in agents]
        stats = await collector.call(Collector.stats)
        await elsewhere.call(Collector.search, TOPIC)
        control = await elsewhere.call(Collector.stats)
    finally:
        for handle in [*agents, collector, elsewhere, *pool.workers]:
            runtime.kill(handle)
        await runtime.close()
    assert all(report.sources for report in reports)
    by_name = _actor_nodes("Name")
    assert [by_name[f"pinned-agent-{i}"] for i in (1, 2)] == [{others[0]}, {others[1]}]
    assert stats.corpus_node == driver and set(stats.corpus_reads_by_node) == {driver}
    read_pages = sum(len(r.sources) for r in reports)
    assert stats.corpus_reads_by_node[driver] > read_pages  # the agents' searches too, not only the fetches
    assert control.corpus_node == others[0] and set(control.corpus_reads_by_node) == {others[0]}
