"""One local Ray cluster shared by the whole integration session (starting Ray costs ~5 s), and a
per-test reset: named actors a test leaves behind (keyed agents, detached ones) are killed after it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

SYSTEM_NAMESPACES = frozenset({"serve"})  # Ray Serve's controller and proxies: the Serve tests own them


def start_local_ray() -> None:
    """The session's single-node Ray; also used to bring it back after a module ran its own cluster."""
    import ray

    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)


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
