"""One local Ray cluster shared by the whole integration session (starting Ray costs ~5 s)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[None]:
    import ray

    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()
