"""One local Ray cluster shared by the whole integration session (starting Ray costs ~5 s), and a
per-test reset: named actors a test leaves behind (keyed agents, detached ones) are killed after it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

RAY_START_ATTEMPTS = 3  # Ray's own start-up wait is fixed; a busy machine may need another go
SYSTEM_NAMESPACES = frozenset({"serve"})  # Ray Serve's controller and proxies: the Serve tests own them


def start_local_ray() -> None:
    """The session's single-node Ray; also used to bring it back after a module ran its own cluster.
    Its metrics page (``metrics_url``) is what Prometheus would scrape (the telemetry test reads it)."""
    import ray

    from deployments import proxy
    from tests.ports import free_port

    proxy.install()  # Serve's proxies run the proxy guard, as under magi serve
    for attempt in range(1, RAY_START_ATTEMPTS + 1):
        port = free_port()
        try:
            ray.init(
                address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, _metrics_export_port=port
            )
            break
        except Exception as exc:  # Ray gives its raylet 30 s to come up: on a loaded machine, not always enough
            if "timed out during startup" not in str(exc) or attempt == RAY_START_ATTEMPTS:
                raise
            ray.shutdown()
    METRICS["url"] = f"http://127.0.0.1:{port}/metrics"


METRICS: dict[str, str] = {}  # "url": the session Ray's Prometheus page


@contextmanager
def own_cluster(nodes: int = 3) -> Iterator[Any]:
    """A ``ray.cluster_utils.Cluster`` of ``nodes`` one-CPU nodes for one module, the session's local
    Ray stopped meanwhile and started again after. Spread threshold 0: zero-CPU actors go to the least
    loaded node rather than the driver's, as on a busy real cluster."""
    import ray
    from ray.cluster_utils import Cluster

    from deployments import proxy

    proxy.install()
    had_session_ray = ray.is_initialized()
    if had_session_ray:
        ray.shutdown()
    cluster = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 1,
            "include_dashboard": False,
            "_system_config": {"scheduler_spread_threshold": 0.0},
        },
    )
    for _ in range(nodes - 1):
        cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False)
    try:
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()
        if had_session_ray:
            start_local_ray()


@pytest.fixture(scope="session")
def served_model() -> Iterator[Any]:
    """One real model (SmolLM2-135M on llama.cpp) for every real-model test; their wall times are
    printed at the end of the session (``pytest_terminal_summary``)."""
    from tests.served_model import start_served_model

    yield start_served_model()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The wall time of each real-model run, after the test results."""
    from tests.served_model import TIMINGS

    if TIMINGS:
        terminalreporter.write_line(
            "real-model runs (wall s): " + ", ".join(f"{k} {v:.1f}" for k, v in TIMINGS.items())
        )


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[None]:
    import ray

    start_local_ray()
    yield
    ray.shutdown()


def _named_actors() -> set[tuple[str, str]]:
    import ray

    if not ray.is_initialized():
        return set()
    found = ray.util.list_named_actors(all_namespaces=True)
    return {(a["namespace"], a["name"]) for a in found if a["namespace"] not in SYSTEM_NAMESPACES}


@pytest.fixture(autouse=True)
def reset_named_actors() -> Iterator[None]:
    """Each test starts from the cluster state the previous one found: no stray named actors."""
    before = _named_actors()
    yield
    import ray

    for namespace, name in _named_actors() - before:
        try:
            ray.kill(ray.get_actor(name, namespace=namespace), no_restart=True)
        except ValueError:  # gone meanwhile
            continue
