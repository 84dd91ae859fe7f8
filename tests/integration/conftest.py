"""One local Ray cluster shared by the whole integration session (starting Ray costs ~5 s)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


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
