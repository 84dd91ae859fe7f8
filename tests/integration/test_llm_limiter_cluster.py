"""The cluster-wide LLM limiter on a real 3-node Ray cluster (``ray.cluster_utils.Cluster``).

This module needs its own multi-node cluster, so its fixture shuts down any Ray the session
started (tests/integration/conftest.py), and starts the shared local one again afterwards for the
modules that follow. 20 caller actors, spread over the 3 nodes, call the LLM through ``make_llm``
(a ``python:`` provider loaded by file path in each worker) with ``llm_max_concurrency=4``.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import ray
from ray import cloudpickle
from ray.cluster_utils import Cluster

from core.errors import LLMError
from core.llm import LLMRequest, Message, make_llm
from core.llm.limiter import NAMESPACE, actor_name
from core.settings import Settings, load_settings
from tests.integration.conftest import start_local_ray
from tests.integration.limiter_provider import COUNTER
from tests.integration.limiter_provider import NAMESPACE as TEST_NAMESPACE

PROVIDER = Path(__file__).resolve().parent / "limiter_provider.py"
NODES = 3
CALLERS = 20
CALLS_EACH = 3
PERMITS = 4

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers need not import the tests package


@pytest.fixture(scope="module")
def three_nodes() -> Iterator[Cluster]:
    was_running = ray.is_initialized()
    if was_running:
        ray.shutdown()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "resources": {"node0": 100}})
    for n in range(1, NODES):
        cluster.add_node(num_cpus=1, resources={f"node{n}": 100})
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
    try:
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()
        if was_running:
            start_local_ray()


@ray.remote(num_cpus=0)
class Counter:
    """Calls in flight at the provider, the most at once, and when each call entered."""

    def __init__(self) -> None:
        self.current = 0
        self.peak = 0
        self.entered: list[tuple[str, float, int]] = []

    async def enter(self, text: str, pid: int) -> None:
        self.current += 1
        self.peak = max(self.peak, self.current)
        self.entered.append((text, time.time(), pid))

    async def leave(self) -> None:
        self.current -= 1

    async def stats(self) -> dict[str, Any]:
        return {"peak": self.peak, "current": self.current, "entered": self.entered}


@ray.remote(num_cpus=0)
class Caller:
    """One independent caller: its own process, its own client built from settings."""

    def __init__(self, settings: Settings) -> None:
        self.client = make_llm(settings.llm)

    async def ask(self, texts: list[str]) -> list[str]:
        assert self.client is not None
        answers = []
        for text in texts:
            request = LLMRequest(system="test", messages=[Message(role="user", content=text)])
            try:
                answers.append((await self.client.complete(request)).text)
            except LLMError as exc:
                answers.append(f"error {exc.status_code} {exc.retry_after_s}")
        return answers

    def node(self) -> str:
        return ray.get_runtime_context().get_node_id()


def callers(settings: Settings) -> list[Any]:
    return [
        Caller.options(resources={f"node{i % NODES}": 1}).remote(settings)  # type: ignore[attr-defined]
        for i in range(CALLERS)
    ]


def test_twenty_callers_on_three_nodes_never_exceed_four_calls(three_nodes: Cluster) -> None:
    counter = Counter.options(name=COUNTER, namespace=TEST_NAMESPACE).remote()  # type: ignore[attr-defined]
    settings = load_settings(overrides={"llm": {"provider": f"python:{PROVIDER}:answer", "max_concurrency": PERMITS}})
    actors = callers(settings)
    assert len(set(ray.get([a.node.remote() for a in actors]))) == NODES
    answers = ray.get([a.ask.remote([f"c{i}-{k}" for k in range(CALLS_EACH)]) for i, a in enumerate(actors)])
    assert sorted(x for batch in answers for x in batch) == sorted(
        f"done c{i}-{k}" for i in range(CALLERS) for k in range(CALLS_EACH)
    )
    stats = ray.get(counter.stats.remote())
    assert stats["peak"] == PERMITS  # never more, and the 20 callers did saturate the 4 permits
    assert stats["current"] == 0 and len(stats["entered"]) == CALLERS * CALLS_EACH
    assert len({pid for _, _, pid in stats["entered"]}) == CALLERS  # really 20 processes calling
    limiter = ray.get_actor(actor_name(), namespace=NAMESPACE)
    state = ray.get(limiter.state.remote())
    assert state["peak"] == PERMITS and state["in_use"] == 0 and state["expired"] == 0
    driver = make_llm(settings.llm)  # the driver takes its permits from the same actor
    assert driver is not None
    request = LLMRequest(system="test", messages=[Message(role="user", content="from the driver")])
    assert asyncio.run(driver.complete(request)).text == "done from the driver"
    assert ray.get(limiter.state.remote())["granted"] == state["granted"] + 1
    for actor in [*actors, counter]:
        ray.kill(actor)


def test_a_rate_limit_on_one_node_pauses_callers_on_every_node(three_nodes: Cluster) -> None:
    counter = Counter.options(name=COUNTER, namespace=TEST_NAMESPACE).remote()  # type: ignore[attr-defined]
    settings = load_settings(overrides={"llm": {"provider": f"python:{PROVIDER}:answer", "max_concurrency": PERMITS}})
    actors = callers(settings)[:NODES]
    ray.get([a.node.remote() for a in actors])
    # caller 0 is rate-limited (429, retry-after 1 s); then the others (other nodes) call
    assert ray.get(actors[0].ask.remote(["rate-limit-me"])) == ["error 429 1.0"]
    answers = ray.get([a.ask.remote([f"after-{i}"]) for i, a in enumerate(actors[1:])])
    assert answers == [["done after-0"], ["done after-1"]]
    entered = ray.get(counter.stats.remote())["entered"]
    limited_at = next(t for text, t, _ in entered if text == "rate-limit-me")
    later = [t for text, t, _ in entered if text.startswith("after-")]
    assert len(later) == 2 and min(later) - limited_at >= 1.0  # nobody started during the pause
    for actor in [*actors, counter]:
        ray.kill(actor)


def test_a_crashed_limiter_is_restarted_and_callers_carry_on(three_nodes: Cluster) -> None:
    counter = Counter.options(name=COUNTER, namespace=TEST_NAMESPACE).remote()  # type: ignore[attr-defined]
    settings = load_settings(overrides={"llm": {"provider": f"python:{PROVIDER}:answer", "max_concurrency": PERMITS}})
    actors = callers(settings)[:NODES]
    assert ray.get(actors[0].ask.remote(["before"])) == ["done before"]
    limiter = ray.get_actor(actor_name(), namespace=NAMESPACE)
    ray.kill(limiter, no_restart=False)  # a crash: Ray restarts the actor
    # ray.kill only sends the kill: a call sent at once may still be served by the old book (one grant
    # short on the new one, a flake under load). The callers ask once the fresh book answers.
    restart_by = time.monotonic() + 30
    while ray.get(limiter.state.remote())["granted"] and time.monotonic() < restart_by:
        time.sleep(0.1)
    answers = ray.get([a.ask.remote([f"after-crash-{i}"]) for i, a in enumerate(actors)])
    assert answers == [[f"done after-crash-{i}"] for i in range(NODES)]
    # Releases are fire-and-forget from the callers' processes: the last one may reach the limiter
    # after this driver's question, so wait for the book to settle before reading it.
    restarted = ray.get_actor(actor_name(), namespace=NAMESPACE)
    settle_by = time.monotonic() + 30
    while (state := ray.get(restarted.state.remote()))["in_use"] and time.monotonic() < settle_by:
        time.sleep(0.1)
    assert state["granted"] == NODES and state["in_use"] == 0  # a fresh book, used by every node
    for actor in [*actors, counter]:
        ray.kill(actor)
