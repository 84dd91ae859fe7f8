"""The shared run queue and its leases (research/run_queue.py) on SQLite and PostgreSQL, without Ray:
claims, renewals, takeover after expiry, fencing of the old owner, and racing claimers."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from core.store import Store
from research import run_queue, runs
from research.errors import LeaseLost
from research.events import StageProgress
from research.run_queue import Lease

REQUEST = {"topic": "t"}
A = Lease("replica-a", ttl_s=10)
B = Lease("replica-b", ttl_s=10)


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    s = Store(store_url)
    yield s
    s.close()


def progress(run_id: str, done: int) -> StageProgress:
    return StageProgress(run_id=run_id, iteration=1, agent_id=1, stage="search", done=done, total=9)


def attempts_of(store: Store, run_id: str) -> list[tuple[str, int | None]]:
    return [(e.type, json.loads(e.json).get("attempt")) for e in runs.load_events(store, run_id)]


def test_accept_bounds_the_queue_and_tells_positions(store: Store) -> None:
    assert [run_queue.accept(store, f"r{n}", "t", REQUEST, max_waiting=3) for n in range(4)] == [1, 2, 3, None]
    assert run_queue.waiting_count(store) == 3 and runs.load_run(store, "r3") is None  # refused: not stored
    claimed, _ = run_queue.claim_next(store, A, max_attempts=2, error="x", now=100)
    assert claimed is not None and claimed.run_id == "r0" and claimed.attempt == 1
    assert [run_queue.queue_position(store, f"r{n}") for n in range(3)] == [0, 1, 2]
    assert run_queue.waiting_count(store) == 2 and run_queue.accept(store, "r4", "t", REQUEST, 3) == 3
    runs.finish_failed(store, "r0", "boom", owner=A.owner)
    assert run_queue.queue_position(store, "r0") is None and run_queue.queue_position(store, "nope") is None


def test_each_run_is_claimed_once_oldest_first(store: Store) -> None:
    for n in range(2):
        run_queue.accept(store, f"r{n}", "t", {"topic": f"t{n}"}, max_waiting=10)
    runs.record_started(store, "cli", "t")  # a CLI run: no request, never anyone's to take
    first, _ = run_queue.claim_next(store, A, max_attempts=2, error="x", now=100)
    second, _ = run_queue.claim_next(store, B, max_attempts=2, error="x", now=100)
    assert first is not None and second is not None
    assert (first.run_id, first.request, second.run_id) == ("r0", {"topic": "t0"}, "r1")
    assert run_queue.claim_next(store, Lease("replica-c", 10), max_attempts=2, error="x", now=105)[0] is None
    assert run_queue.owner_of(store, "r0") == A.owner and run_queue.owner_of(store, "cli") is None


def test_a_lease_kept_alive_is_never_taken_and_an_expired_one_is(store: Store) -> None:
    run_queue.accept(store, "r", "t", REQUEST, max_waiting=10)
    claimed, _ = run_queue.claim_next(store, A, max_attempts=3, error="x", now=100)
    assert claimed is not None
    runs.append_event(store, "r", progress("r", 1), owner=A.owner)
    for now in (105, 112, 119):  # A renews before each expiry: B finds nothing to take
        assert run_queue.renew(store, "r", A, now=now)
        assert run_queue.claim_next(store, B, max_attempts=3, error="x", now=now + 9)[0] is None
    taken, _ = run_queue.claim_next(store, B, max_attempts=3, error="x", now=129.5)  # A went silent at 119
    assert taken is not None and taken.attempt == 2 and run_queue.owner_of(store, "r") == B.owner
    assert not run_queue.renew(store, "r", A, now=130)  # A learns it lost the run
    with pytest.raises(LeaseLost):  # and whatever A still writes is refused
        runs.append_event(store, "r", progress("r", 2), owner=A.owner)
    assert not runs.finish_failed(store, "r", "A's late failure", owner=A.owner)
    runs.append_event(store, "r", progress("r", 1), owner=B.owner)
    assert runs.finish_failed(store, "r", "B's verdict", owner=B.owner)
    assert attempts_of(store, "r") == [
        ("stageProgress", 1),
        ("researchRequeued", 2),
        ("stageProgress", 2),
        ("researchFailed", 2),
    ]
    run = runs.load_run(store, "r")
    assert run is not None and (run.status, run.error) == ("failed", "B's verdict")


def test_a_stopping_replica_hands_its_run_over_at_once(store: Store) -> None:
    """A replica Serve stops (a rolling upgrade) gives its lease up: the run is taken over on the next
    look, not after the lease ran out; a replica that no longer holds it releases nothing."""
    run_queue.accept(store, "r", "t", REQUEST, max_waiting=10)
    claimed, _ = run_queue.claim_next(store, A, max_attempts=2, error="x", now=100)
    assert claimed is not None
    assert run_queue.claim_next(store, B, max_attempts=2, error="x", now=101)[0] is None  # A's lease holds
    assert run_queue.release(store, "r", A)
    taken, _ = run_queue.claim_next(store, B, max_attempts=2, error="x", now=101)
    assert taken is not None and taken.attempt == 2 and run_queue.owner_of(store, "r") == B.owner
    assert not run_queue.release(store, "r", A)  # not A's any more
    assert run_queue.owner_of(store, "r") == B.owner


def test_a_run_orphaned_too_often_fails_instead_of_running_again(store: Store) -> None:
    run_queue.accept(store, "r", "t", REQUEST, max_waiting=10)
    for n, lease in enumerate((A, B)):  # two replicas died in turn while running it
        claimed, _ = run_queue.claim_next(store, lease, max_attempts=2, error="interrupted", now=100 + 20 * n)
        assert claimed is not None and claimed.attempt == n + 1
    claimed, failed = run_queue.claim_next(store, Lease("replica-c", 10), max_attempts=2, error="interrupted", now=200)
    assert claimed is None and failed == ["r"]
    run = runs.load_run(store, "r")
    assert run is not None and run.status == "failed" and run.error == "interrupted (it was started 2 times)"
    assert [t for t, _ in attempts_of(store, "r")] == ["researchRequeued", "researchFailed"]


def test_a_run_left_without_a_lease_by_an_older_service_is_taken_over(store: Store) -> None:
    """Rows written before leases existed (running, no owner) count as expired."""
    runs.record_started(store, "old", "t", status="accepted", request=REQUEST)
    assert runs.mark_running(store, "old")
    claimed, _ = run_queue.claim_next(store, A, max_attempts=2, error="x")  # the store's own clock
    assert claimed is not None and claimed.run_id == "old" and claimed.attempt == 2


def test_racing_replicas_claim_each_run_exactly_once(store: Store, store_url: str) -> None:
    """Eight replicas (threads, each with its own Store and the store's clock) race for five runs."""
    for n in range(5):
        run_queue.accept(store, f"r{n}", "t", REQUEST, max_waiting=10)
    start = threading.Barrier(8)
    won: dict[str, list[str]] = {}

    def replica(name: str) -> None:
        own = Store(store_url)
        start.wait()
        while True:
            claimed, _ = run_queue.claim_next(own, Lease(name, 30), max_attempts=2, error="x")
            if claimed is None:
                break
            won.setdefault(claimed.run_id, []).append(name)
        own.close()

    threads = [threading.Thread(target=replica, args=(f"replica-{n}",)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted(won) == [f"r{n}" for n in range(5)] and all(len(names) == 1 for names in won.values())
    assert {run_queue.owner_of(store, run_id) for run_id in won} == {names[0] for names in won.values()}


def test_autoscaling_counts_running_and_waiting_runs() -> None:
    from deployments.autoscaling import RUNNING_METRIC, WAITING_METRIC, QueuedRunsPolicy, autoscaling_config

    policy = QueuedRunsPolicy(target_queued_runs=1)
    seen = {RUNNING_METRIC: {"r1": 1.0}, WAITING_METRIC: {"r1": 1.0}}  # one runs, one waits in the store
    assert policy(SimpleNamespace(current_num_replicas=1, aggregated_metrics=seen)) == (2, {})
    both = {RUNNING_METRIC: {"r1": 1.0, "r2": 1.0}, WAITING_METRIC: {"r1": 3.0, "r2": 3.0}}  # the same 3 waiting
    assert policy(SimpleNamespace(current_num_replicas=2, aggregated_metrics=both)) == (5, {})
    assert QueuedRunsPolicy(5)(SimpleNamespace(current_num_replicas=2, aggregated_metrics=both)) == (1, {})
    assert policy(SimpleNamespace(current_num_replicas=3, aggregated_metrics={})) == (3, {})  # no report yet
    idle = {RUNNING_METRIC: {"r": 0.0}, WAITING_METRIC: {"r": 0.0}}
    assert policy(SimpleNamespace(current_num_replicas=3, aggregated_metrics=idle)) == (1, {})
    config = autoscaling_config(1, 4, 5)
    assert config["policy"]["policy_function"] == "deployments.autoscaling:QueuedRunsPolicy"
    assert (config["min_replicas"], config["max_replicas"]) == (1, 4)


def test_one_client_fills_only_its_share_of_the_queue(store: Store) -> None:
    """Issue 40 (4): the queue of 10 was global: one caller filled it and everyone else got 429."""
    alice = run_queue.Submitter("owner-a", "client-a", limit=2)
    bob = run_queue.Submitter("owner-b", "client-b", limit=2)
    assert [run_queue.accept(store, f"a{n}", "t", REQUEST, 10, alice) for n in range(2)] == [1, 2]
    with pytest.raises(run_queue.ClientQueueFull) as full:
        run_queue.accept(store, "a2", "t", REQUEST, 10, alice)
    assert full.value.limit == 2 and runs.load_run(store, "a2") is None
    assert run_queue.accept(store, "b0", "t", REQUEST, 10, bob) == 3
    assert runs.load_run(store, "a0").submitter == "owner-a"  # type: ignore[union-attr]
    claimed, _ = run_queue.claim_next(store, A, max_attempts=2, error="x", now=100)
    assert claimed is not None and claimed.run_id == "a0"  # running: no longer waiting, so a place is free
    assert run_queue.accept(store, "a2", "t", REQUEST, 10, alice) == 3


def test_a_cancelled_run_ends_once_and_its_replica_loses_it(store: Store) -> None:
    run_queue.accept(store, "w", "t", REQUEST, 10)
    run_queue.accept(store, "r", "t", REQUEST, 10)
    assert runs.cancel(store, "w", "cancelled at the request of its submitter")  # while waiting
    claimed, _ = run_queue.claim_next(store, A, max_attempts=2, error="x", now=100)
    assert claimed is not None and claimed.run_id == "r"  # the cancelled one is never claimed
    assert runs.cancel(store, "r", "cancelled")  # while running
    assert not run_queue.renew(store, "r", A, now=101)  # its replica stops at the next renewal
    with pytest.raises(LeaseLost):
        runs.append_event(store, "r", progress("r", 1), owner=A.owner)  # and can write nothing more
    assert not runs.cancel(store, "r", "again")  # already ended
    for run_id in ("w", "r"):
        run = runs.load_run(store, run_id)
        assert run is not None and run.status == "cancelled" and run.error
        assert [e.type for e in runs.load_events(store, run_id)][-1] == "researchFailed"
    assert not runs.finish_failed(store, "r", "late", owner=A.owner)
