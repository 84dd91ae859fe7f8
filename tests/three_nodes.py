"""Three Ray nodes sharing one PostgreSQL store, for the tests that move a session actor between nodes.

Fixture (loaded from ``tests/conftest.py`` through ``pytest_plugins``):

- ``three_nodes`` (module): a 3-node ``ray.cluster_utils.Cluster`` (``own_cluster``; the session's
  single-node Ray is stopped meanwhile) and the test session's PostgreSQL server.
  ``.settings(data_dir, **overrides)`` gives settings whose store is a fresh PostgreSQL database, which
  every node reaches, unlike a SQLite file under a node's ``data_dir``.

:func:`move_to_another_node` kills a session's actor until a successor lands on another node.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from core.runtime import Handle, Runtime
from core.settings import Settings, load_settings
from sessions.actor import SessionActor, session_actor
from sessions.models import SessionPolicy
from tests.integration.conftest import own_cluster
from tests.postgres import PostgresServer

MAX_RESTARTS = 30  # placement is the scheduler's: a successor may land on the same node a few times


@dataclass(frozen=True)
class ThreeNodes:
    cluster: Any
    postgres: PostgresServer

    def settings(self, data_dir: Path, **overrides: Any) -> Settings:
        """Settings for one test: ``data_dir`` node-local, the store a new PostgreSQL database."""
        return load_settings(
            overrides={"data_dir": data_dir, "store_url": self.postgres.create_database(), **overrides}
        )


@pytest.fixture(scope="module")
def three_nodes(postgres_server: PostgresServer) -> Iterator[ThreeNodes]:
    with own_cluster(3) as cluster:
        yield ThreeNodes(cluster, postgres_server)


async def move_to_another_node(
    runtime: Runtime, settings: Settings, session_id: str, policy: SessionPolicy, idle_s: float
) -> Handle[SessionActor]:
    """Kill the session's actor (no restart) until ``session_actor`` recreates it on a node other than
    the one it first ran on; return the successor's handle."""
    import ray

    handle = await session_actor(runtime, settings, session_id, policy, idle_s)
    nodes = {(await handle.call(SessionActor.where))["node"]}
    for _ in range(MAX_RESTARTS):
        ray.kill(handle.target, no_restart=True)
        await asyncio.sleep(0.2)
        handle = await session_actor(runtime, settings, session_id, policy, idle_s)
        nodes.add((await handle.call(SessionActor.where))["node"])
        if len(nodes) > 1:
            return handle
    raise AssertionError(
        f"session {session_id!r}: all {MAX_RESTARTS} restarts landed on node {nodes.pop()}; "
        "check that the cluster has 3 nodes and scheduler_spread_threshold is 0 (own_cluster)"
    )


__all__ = ["MAX_RESTARTS", "ThreeNodes", "move_to_another_node", "three_nodes"]
