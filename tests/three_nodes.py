"""Three Ray nodes sharing one PostgreSQL store, for the tests that move a session between nodes.

Fixture (loaded from ``tests/conftest.py`` through ``pytest_plugins``):

- ``three_nodes`` (module): a 3-node ``ray.cluster_utils.Cluster`` (``own_cluster``; the session's
  single-node Ray is stopped meanwhile) and the test session's PostgreSQL server.
  ``.settings(data_dir, **overrides)`` gives settings whose store is a fresh PostgreSQL database, which
  every node reaches, unlike a SQLite file under a node's ``data_dir``.

:func:`replicas_on_two_nodes` starts two :class:`SessionReplica` actors on two different nodes: each
holds what a Serve replica of the router or the advisor holds (a ``SessionHost`` on the shared store),
so a test can kill one mid-conversation and go on with the other.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from core.runtime import current_node_id
from core.settings import Settings, load_settings
from sessions.gateway import Change, SessionHost
from sessions.models import SessionPolicy, SessionState
from tests.integration.conftest import own_cluster
from tests.postgres import PostgresServer

T = TypeVar("T")


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


class SessionReplica:
    """What a replica of the router or the advisor hosts (its sessions, on the shared store), pinned
    to one node; the test drives it as a Serve proxy would."""

    def __init__(self, settings: Settings, policy: SessionPolicy) -> None:
        from core.store import open_store
        from sessions.store import SessionRepository

        self.host = SessionHost(SessionRepository(open_store(settings)), policy)

    async def update(
        self, session_id: str, owner: str, change: Change[Any], client: str | None = None, store_wait_s: float = 0.0
    ) -> Any:
        return await self.host.update(session_id, owner, change, client, store_wait_s=store_wait_s)

    async def read(self, session_id: str, owner: str) -> SessionState:
        return await self.host.read(session_id, owner)

    def node(self) -> str:
        return current_node_id()


class RemoteSessions:
    """The session gateway of a system whose sessions are hosted by ``replica`` (a SessionReplica actor)."""

    def __init__(self, replica: Any) -> None:
        self.replica = replica

    async def update(
        self, session_id: str, owner: str, change: Change[T], client: str | None = None, *, store_wait_s: float = 0.0
    ) -> T:
        value: T = await self.replica.update.remote(session_id, owner, change, client, store_wait_s)
        return value


def replicas_on_two_nodes(settings: Settings, policy: SessionPolicy) -> list[Any]:
    """Two SessionReplica actors, each pinned to a different live node."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    nodes = [node["NodeID"] for node in ray.nodes() if node["Alive"]][:2]
    assert len(nodes) == 2, "the cluster has fewer than two live nodes"
    replica = ray.remote(num_cpus=0)(SessionReplica)
    return [
        replica.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)).remote(settings, policy)
        for node in nodes
    ]


__all__ = ["RemoteSessions", "SessionReplica", "ThreeNodes", "replicas_on_two_nodes", "three_nodes"]
