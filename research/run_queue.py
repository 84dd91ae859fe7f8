"""The store as the one queue of research runs that every replica of the research app shares.

An accepted run waits in the store without an owner. An idle replica claims the oldest waiting run
and holds a lease on it (owner = the replica's id, a heartbeat, an expiry ``ttl`` later) that it
renews while the run goes. A replica that dies stops renewing: once the lease expired, any replica
(a starting one, or one that became idle) takes the run over and runs it again from the start, one
attempt more (a ``researchRequeued`` event marks it). A claim is one conditional UPDATE in a
transaction (SQLite ``BEGIN IMMEDIATE``; on PostgreSQL the row lock makes a second claimer re-check
the condition and find the lease taken), so two replicas never hold a run at once; a replica that
stalled past its lease finds it lost (:func:`renew`) and its writes refused (``owner`` in
research/runs.py). Runs the CLI started have no stored request and are never taken over.

A lease can also lapse while its owner lives: the store restarted (nobody could renew), or the owner's
loop stalled under load. Taking such a run over would start it again for nothing (and count an
attempt against it), so a claimer may name the owners it knows to be alive (``spare``): their runs are
left to them for up to ``SPARE_LEASES`` more leases, time enough to renew once the store is back.

Times are epoch seconds from the database's clock on PostgreSQL (replicas on several nodes agree),
from this host's clock on SQLite (one machine); tests pass ``now``.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from core.store import Store
from core.telemetry.context import current_request_id
from research import runs
from research.events import ResearchRequeued
from research.metrics import RUNS

QUEUE_LOCK_KEY = 0x71756575  # "queu": the advisory lock that makes PostgreSQL's queue bound exact
CANDIDATES = 8  # waiting or orphaned runs one claim looks at (others may take some meanwhile)
SPARE_LEASES = 2.0  # how many lease lengths a live owner's lapsed lease is still respected

# A run another replica may take: has a request to run again, is unfinished, and nobody holds a live lease.
_CLAIMABLE = (
    "status IN ('accepted', 'running') AND request_json IS NOT NULL AND (lease_until IS NULL OR lease_until < :now)"
)
_WAITING = "status = 'accepted' AND request_json IS NOT NULL AND owner IS NULL"


@dataclass(frozen=True)
class Lease:
    """Who holds runs and for how long: ``owner`` renews every ``ttl_s / 3`` (:attr:`renew_every_s`)."""

    owner: str
    ttl_s: float

    @property
    def renew_every_s(self) -> float:
        return self.ttl_s / 3


@dataclass(frozen=True)
class Claimed:
    """A run this replica now holds: its attempt (1 for the first), and the request to run."""

    run_id: str
    topic: str
    request: dict[str, Any]
    attempt: int


def clock(conn: Connection) -> float:
    """Now, in epoch seconds, from the clock every replica shares (see the module's docstring)."""
    if conn.dialect.name == "postgresql":
        return float(conn.execute(sa.text("SELECT EXTRACT(EPOCH FROM clock_timestamp())")).scalar_one())
    return time.time()


class ClientQueueFull(Exception):
    """The submitting client already has ``limit`` runs waiting (one client does not fill the queue)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"this client already has {limit} runs waiting")
        self.limit = limit


@dataclass(frozen=True)
class Submitter:
    """Who submits a run: whose it is (``owner``) and whose share of the queue it takes (``client``,
    at most ``limit`` waiting at once); see deployments/identity.py."""

    owner: str
    client: str
    limit: int


def accept(
    store: Store,
    run_id: str,
    topic: str,
    request: dict[str, Any],
    max_waiting: int,
    submitter: Submitter | None = None,
) -> int | None:
    """Store a new waiting run unless ``max_waiting`` already wait; returns its queue position (1 = next)
    or None when the queue is full; :class:`ClientQueueFull` when ``submitter``'s client has its
    share waiting. Counts and insert are one transaction, so the bounds hold across replicas."""
    with store.transaction() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": QUEUE_LOCK_KEY})
        waiting = int(conn.execute(sa.text(f"SELECT COUNT(*) FROM research_runs WHERE {_WAITING}")).scalar_one())
        if waiting >= max_waiting:
            return None
        if submitter is not None:
            mine = conn.execute(
                sa.text(f"SELECT COUNT(*) FROM research_runs WHERE client=:client AND {_WAITING}"),
                {"client": submitter.client},
            ).scalar_one()
            if int(mine) >= submitter.limit:
                raise ClientQueueFull(submitter.limit)
        conn.execute(
            sa.text(
                "INSERT INTO research_runs (run_id, topic, status, started_at, request_json, attempts, request_id, "
                "submitter, client) VALUES (:run_id, :topic, 'accepted', :at, :request, 0, :request_id, :submitter, "
                ":client)"
            ),
            {
                "run_id": run_id,
                "topic": topic,
                "at": datetime.now(UTC).isoformat(),
                "request": json.dumps(request, ensure_ascii=False),
                "request_id": current_request_id(),  # one id finds the run, its logs and its trace
                "submitter": submitter.owner if submitter else None,
                "client": submitter.client if submitter else None,
            },
        )
        RUNS.inc(state="accepted")
        return waiting + 1


def waiting_count(store: Store) -> int:
    """Runs accepted and not yet claimed, over all replicas."""
    return int(store.query(f"SELECT COUNT(*) FROM research_runs WHERE {_WAITING}")[0][0])


def queue_position(store: Store, run_id: str) -> int | None:
    """0 while the run runs, 1.. while it waits (1: next), None once finished (or unknown)."""
    rows = store.query("SELECT status, owner, started_at FROM research_runs WHERE run_id=:run_id", {"run_id": run_id})
    if not rows or rows[0][0] not in runs.UNFINISHED:
        return None
    status, owner, started_at = rows[0]
    if status == "running" or owner is not None:
        return 0
    ahead = store.query(
        f"SELECT COUNT(*) FROM research_runs WHERE {_WAITING} "
        "AND (started_at < :at OR (started_at = :at AND run_id < :run_id))",
        {"at": started_at, "run_id": run_id},
    )
    return int(ahead[0][0]) + 1


def lapsed_owners(store: Store, lease: Lease, *, now: float | None = None) -> set[str]:
    """Owners of running runs whose lease lapsed recently (less than ``SPARE_LEASES`` leases ago): the
    ones a claimer may ask about before it takes their runs over (see the module docstring)."""
    with store.transaction() as conn:
        at = clock(conn) if now is None else now
        rows = conn.execute(
            sa.text(
                "SELECT DISTINCT owner FROM research_runs WHERE status = 'running' AND owner IS NOT NULL "
                "AND lease_until < :now AND lease_until >= :since"
            ),
            {"now": at, "since": at - SPARE_LEASES * lease.ttl_s},
        ).all()
    return {str(row[0]) for row in rows}


def claim_next(
    store: Store,
    lease: Lease,
    max_attempts: int,
    error: str,
    *,
    spare: frozenset[str] | set[str] = frozenset(),
    now: float | None = None,
) -> tuple[Claimed | None, list[str]]:
    """Take the oldest run nobody holds (waiting, or orphaned by a replica whose lease expired), except
    the runs of ``spare`` owners whose lease lapsed less than ``SPARE_LEASES`` leases ago.

    An orphaned run already started ``max_attempts`` times is marked failed with ``error`` instead (it
    may be what brings replicas down). Returns (the run claimed or None, ids of runs failed so).
    """
    failed: list[str] = []
    with store.transaction() as conn:
        at = clock(conn) if now is None else now
        rows = conn.execute(
            sa.text(
                "SELECT run_id, topic, request_json, attempts, owner, lease_until FROM research_runs "
                f"WHERE {_CLAIMABLE} ORDER BY started_at, run_id LIMIT :limit"
            ),
            {"now": at, "limit": CANDIDATES},
        ).all()
        for run_id, topic, request_json, attempts, owner, lease_until in rows:
            if owner in spare and lease_until is not None and lease_until >= at - SPARE_LEASES * lease.ttl_s:
                continue  # its owner lives: it renews as soon as it can
            if attempts >= max_attempts:
                message = f"{error} (it was started {attempts} times)"
                if runs.fail_in(conn, run_id, message, condition=f" AND {_CLAIMABLE}", params={"now": at}):
                    failed.append(run_id)
                continue
            taken = conn.execute(
                sa.text(
                    "UPDATE research_runs SET status='running', owner=:owner, heartbeat_at=:now, "
                    f"lease_until=:until, attempts=attempts+1 WHERE run_id=:run_id AND {_CLAIMABLE}"
                ),
                {"owner": lease.owner, "now": at, "until": at + lease.ttl_s, "run_id": run_id},
            )
            if taken.rowcount != 1:  # another replica was faster
                continue
            if attempts:  # it ran before, on a replica that went away: say so, with the attempt about to start
                notice = ResearchRequeued(run_id=run_id, attempts=attempts, attempt=attempts + 1)
                runs.append_in(conn, run_id, notice)
            return Claimed(run_id, topic, json.loads(request_json), attempts + 1), failed
    return None, failed


def release(store: Store, run_id: str, lease: Lease) -> bool:
    """Give a run back to the queue (it waits again, first in line, for any replica): its work was cut
    by the cluster (a node lost with its agents, or this replica being stopped by a rolling upgrade),
    not by the run, and another replica takes it on its next look. Its attempts still count. False
    when the run is no longer this replica's."""
    with store.transaction() as conn:
        cur = conn.execute(
            sa.text(
                "UPDATE research_runs SET status='accepted', owner=NULL, heartbeat_at=NULL, lease_until=NULL "
                "WHERE run_id=:run_id AND owner=:owner AND status='running'"
            ),
            {"run_id": run_id, "owner": lease.owner},
        )
        return cur.rowcount == 1


def renew(store: Store, run_id: str, lease: Lease, *, now: float | None = None) -> bool:
    """Extend this replica's lease on a running run; False when it is no longer this replica's to run
    (taken over after the lease expired, cancelled, or finished): the replica must stop the run."""
    with store.transaction() as conn:
        at = clock(conn) if now is None else now
        cur = conn.execute(
            sa.text(
                "UPDATE research_runs SET heartbeat_at=:now, lease_until=:until "
                "WHERE run_id=:run_id AND owner=:owner AND status='running'"
            ),
            {"now": at, "until": at + lease.ttl_s, "run_id": run_id, "owner": lease.owner},
        )
        return cur.rowcount == 1


def owner_of(store: Store, run_id: str) -> str | None:
    """The replica that holds the run now (None: waiting, a CLI run, or unknown)."""
    rows = store.query("SELECT owner FROM research_runs WHERE run_id=:run_id", {"run_id": run_id})
    return str(rows[0][0]) if rows and rows[0][0] is not None else None


__all__ = [
    "CANDIDATES",
    "QUEUE_LOCK_KEY",
    "SPARE_LEASES",
    "Claimed",
    "ClientQueueFull",
    "Lease",
    "Submitter",
    "accept",
    "claim_next",
    "clock",
    "lapsed_owners",
    "owner_of",
    "queue_position",
    "release",
    "renew",
    "waiting_count",
]
