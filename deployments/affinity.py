"""Session affinity: a request naming a session goes to the replica that hosts it, where it can.

Sessions are virtual actors hosted by the replicas (``sessions/gateway.py``). A client names its
session in the ``serve_multiplexed_model_id`` header (:data:`SESSION_HEADER`; the pages and the
benchmark clients send it), which Serve's proxy hands to the deployment's request router.
:class:`SessionAffinityRouter` ranks the replicas by rendezvous hashing of (session, replica): every
proxy and handle picks the same replica for a session with no shared table, and when a replica goes,
only its own sessions move (the next replica in their ranking reads them from the store). A busy
first choice falls back to the others; a request without the header goes to the less loaded of two
random replicas, as Serve's default does. Correctness never depends on the routing: the store's
revision check keeps turns serial wherever they land.

Why not ``@serve.multiplexed``: its model cache reports every loaded id to the controller and exports
one metric series per id (the session id as a label, on the nodes' metrics ports), and it loads one
id at a time per replica; a hash needs no report at all.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from ray.serve.request_router import FIFOMixin, PendingRequest, RequestRouter, RunningReplica

SESSION_HEADER = "serve_multiplexed_model_id"  # the header Serve's proxy reads into the request's metadata
ROUTER_PATH = "deployments.affinity:SessionAffinityRouter"


def session_headers(session_id: str | None) -> dict[str, str]:
    """The headers a client sends with a request about ``session_id`` (none without one)."""
    return {SESSION_HEADER: session_id} if session_id else {}


def affinity_rank(session_id: str, replica_ids: list[str]) -> list[str]:
    """``replica_ids`` best first for ``session_id`` (highest random weight): the same order in every
    process, and removing one replica leaves the others' relative order unchanged."""

    def weight(replica_id: str) -> bytes:
        return hashlib.blake2b(f"{session_id}\0{replica_id}".encode(), digest_size=8).digest()

    return sorted(replica_ids, key=weight, reverse=True)


class SessionAffinityRouter(FIFOMixin, RequestRouter):
    """Serve's request router for the apps that host sessions (``request_router_config``)."""

    async def choose_replicas(
        self, candidate_replicas: list[RunningReplica], pending_request: PendingRequest | None = None
    ) -> list[list[RunningReplica]]:
        if not candidate_replicas:
            return []
        session_id = pending_request.metadata.multiplexed_model_id if pending_request is not None else ""
        if not session_id:
            return [random.sample(candidate_replicas, min(2, len(candidate_replicas)))]
        by_id = {replica.replica_id.unique_id: replica for replica in candidate_replicas}
        ranked = [by_id[replica_id] for replica_id in affinity_rank(session_id, list(by_id))]
        return [ranked[:1], ranked[1:]] if len(ranked) > 1 else [ranked]


def affinity_options() -> dict[str, Any]:
    """The deployment options that route by session (``serve.deployment(**affinity_options())``)."""
    from ray.serve.config import RequestRouterConfig

    # Ray annotates the constructor's keywords as dicts; the field itself is typed str | class.
    return {"request_router_config": RequestRouterConfig(request_router_class=ROUTER_PATH)}  # type: ignore[arg-type]


__all__ = [
    "ROUTER_PATH",
    "SESSION_HEADER",
    "SessionAffinityRouter",
    "affinity_options",
    "affinity_rank",
    "session_headers",
]
