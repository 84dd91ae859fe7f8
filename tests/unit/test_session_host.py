"""Sessions as virtual actors (sessions/gateway.py) on both store backends: turns serialised within a
host, no turn lost between two hosts (two replicas) writing one session, a host that goes away losing
nothing, passivation by idleness and by count, the per-client bound, and the memory an idle session
costs. Two ``SessionHost`` objects on one store are what two Serve replicas hold; the HTTP path with
two real replicas is tests/integration/test_serve_router.py."""

from __future__ import annotations

import asyncio
import gc
import tracemalloc
from collections.abc import Callable
from datetime import datetime

import pytest

from core.store import Store
from router.conversation import Turn, TurnOutcome
from sessions.gateway import Admission, SessionHost
from sessions.ids import TooManySessionsError
from sessions.models import HistoryEntry, SessionPolicy, SessionState
from sessions.store import SessionRepository

POLICY = SessionPolicy(ttl_s=3600, previous_ttl_s=600, history_limit=500)


def _say(text: str) -> Callable[[SessionState, datetime], int]:
    def change(state: SessionState, now: datetime) -> int:
        state.add(HistoryEntry(role="user", text=text, timestamp=now), POLICY)
        return len(state.history)

    return change


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def test_fifty_writers_on_one_host_are_serialised(store_url: str) -> None:
    host = SessionHost(SessionRepository(Store(store_url)), POLICY)
    counts = await asyncio.gather(*(host.update("busy", "", _say(f"m{i}")) for i in range(50)))
    assert sorted(counts) == list(range(1, 51))  # each writer saw every earlier one
    assert host.activations == 1 and host.hosts("busy")
    again = SessionHost(SessionRepository(Store(store_url)), POLICY)  # a replica that never saw it
    state = await again.read("busy", "")
    assert sorted(e.text for e in state.history) == sorted(f"m{i}" for i in range(50))


async def test_fifty_writers_across_two_hosts_lose_no_turn(store_url: str) -> None:
    """Two replicas hosting one session at once: every turn that lost a race ran again on fresh state."""
    a = SessionHost(SessionRepository(Store(store_url)), POLICY)
    b = SessionHost(SessionRepository(Store(store_url)), POLICY)
    await a.update("shared", "", _say("first"))
    await b.update("shared", "", _say("second"))  # b activates it from the store; a's copy is now stale
    counts = await asyncio.gather(*((a if i % 2 else b).update("shared", "", _say(f"w{i}")) for i in range(50)))
    assert sorted(counts) == list(range(3, 53))  # serial across hosts: no two turns saw the same history
    state = await a.read("shared", "")
    texts = [e.text for e in state.history]
    assert texts[:2] == ["first", "second"] and sorted(texts[2:]) == sorted(f"w{i}" for i in range(50))
    assert state.revision == 52


async def test_no_writer_starves_four_hosts_fifty_writers_twenty_times(store_url: str) -> None:
    """Four replicas, fifty writers on one session, twenty rounds: every write lands (none refused, none
    lost), in a serial order. The hosts write from worker threads, so their transactions really overlap
    on either store; a writer that loses the optimistic race waits for the session's lock instead of
    retrying against the other hosts (the way one host's writers used to starve another's)."""
    hosts = [SessionHost(SessionRepository(Store(store_url)), POLICY, offload=True) for _ in range(4)]
    for round_ in range(20):
        session = f"contended-{round_}"
        writes = [hosts[i % 4].update(session, "", _say(f"w{i}")) for i in range(50)]
        counts = await asyncio.gather(*writes, return_exceptions=True)
        refused = [c for c in counts if isinstance(c, BaseException)]
        assert not refused, f"round {round_}: {len(refused)} refused, first: {refused[0]!r}"
        assert sorted(counts) == list(range(1, 51)), f"round {round_}: two writers saw the same history"
        state = await hosts[round_ % 4].read(session, "")
        assert sorted(e.text for e in state.history) == sorted(f"w{i}" for i in range(50)), f"round {round_}: lost"
        assert state.revision == 50


async def test_a_conversation_continues_on_another_host(store_url: str) -> None:
    """A replica killed mid-conversation: the next turn, on another replica, has the whole history."""
    first = SessionHost(SessionRepository(Store(store_url)), POLICY)
    opened: TurnOutcome = await first.update("visitor", "", Turn("エンジニアカフェの営業時間は？", 0.5, POLICY))
    assert opened.result.request_type == "hours"
    del first  # the replica is gone with its cache; the store has every turn
    other = SessionHost(SessionRepository(Store(store_url)), POLICY)
    follow: TurnOutcome = await other.update("visitor", "", Turn("日曜日は？", 0.5, POLICY))
    assert follow.result.request_type == "hours" and follow.result.debug_info.classification.inherited
    memory: TurnOutcome = await other.update(
        "visitor", "", Turn("さっき何を聞いたか覚えてる？", 0.5, POLICY, answer=True)
    )
    assert memory.answer is not None and "エンジニアカフェの営業時間は？" in memory.answer


async def test_idle_and_least_recently_used_sessions_are_passivated(tmp_path: object) -> None:
    clock = Clock()
    host = SessionHost(
        SessionRepository(Store(f"sqlite:///{tmp_path}/s.sqlite3")), POLICY, max_active=3, idle_s=60, clock=clock
    )
    for name in ("a", "b", "c", "d"):
        await host.update(name, "", _say(name))
    assert len(host) == 3 and not host.hosts("a")  # the least recently used went first
    clock.now = 30
    await host.update("b", "", _say("b again"))
    clock.now = 70  # c and d idle 70 s, b only 40 s
    assert host.passivate_idle() == 2 and host.hosts("b") and len(host) == 1
    assert await host.update("a", "", _say("a again")) == 2  # passivated: read back from the store


async def test_a_session_in_use_is_never_passivated(tmp_path: object) -> None:
    clock = Clock()
    host = SessionHost(
        SessionRepository(Store(f"sqlite:///{tmp_path}/s.sqlite3")),
        POLICY,
        max_active=1,
        idle_s=1,
        clock=clock,
        offload=True,  # the change waits in a worker thread while the loop goes on
    )
    started, release = asyncio.Event(), asyncio.Event()

    def slow(state: SessionState, now: datetime) -> int:
        loop.call_soon_threadsafe(started.set)
        asyncio.run_coroutine_threadsafe(release.wait(), loop).result()
        return _say("slow")(state, now)

    loop = asyncio.get_running_loop()
    pending = asyncio.ensure_future(host.update("busy", "", slow))
    await started.wait()
    clock.now = 10
    queued = asyncio.ensure_future(host.update("busy", "", _say("queued")))  # waits for the lock
    await host.update("other", "", _say("x"))  # one too many, and busy is idle by the clock
    assert host.passivate_idle() == 1 and not host.hosts("other")  # "other" went, "busy" stayed
    release.set()
    assert (await pending, await queued) == (1, 2)  # one lock throughout: serial


async def test_a_client_holds_a_bounded_number_of_sessions(tmp_path: object) -> None:
    repo = SessionRepository(Store(f"sqlite:///{tmp_path}/s.sqlite3"))
    host = SessionHost(repo, POLICY, admission=Admission("router", 2))
    await host.update("router-1", "alice", _say("one"))
    await host.update("router-2", "alice", _say("two"))
    with pytest.raises(TooManySessionsError, match=r"sessions\.max_per_client"):
        await host.update("router-3", "alice", _say("three"))
    assert len(host) == 2 and not repo.exists("router-3")  # the refused session left nothing behind
    other = SessionHost(repo, POLICY, admission=Admission("router", 2))  # another replica agrees
    with pytest.raises(TooManySessionsError):
        await other.update("router-3", "alice", _say("three"))
    assert await other.update("router-1", "alice", _say("again")) == 2  # an existing one goes on
    assert await host.update("router-3", "bob", _say("bob's")) == 1  # another client has its own bound


async def test_callers_without_a_key_share_an_owner_but_not_a_bound(tmp_path: object) -> None:
    """Issue 40 (4): without API keys every caller is the one local owner; one address creating sessions
    used up everyone's share. Each counts against its own client (its address), and the sessions stay
    the local owner's."""
    repo = SessionRepository(Store(f"sqlite:///{tmp_path}/s.sqlite3"))
    host = SessionHost(repo, POLICY, admission=Admission("router", 2))
    for number in (1, 2):
        await host.update(f"router-{number}", "", _say("flood"), "address-one")
    with pytest.raises(TooManySessionsError):
        await host.update("router-3", "", _say("flood"), "address-one")
    assert await host.update("router-4", "", _say("hello"), "address-two") == 1  # another address goes on
    assert (await host.read("router-4", "")).owner == ""  # still the local owner's session
    assert "address" not in (await host.read("router-4", "")).model_dump_json()  # the client is no part of it


async def test_an_idle_session_costs_kilobytes(tmp_path: object) -> None:
    """The memory a replica keeps per active, idle session (a routed conversation of three turns)."""
    host = SessionHost(SessionRepository(Store(f"sqlite:///{tmp_path}/s.sqlite3")), POLICY)
    queries = ("営業時間は？", "日曜日は？", "Wi-Fiはありますか")
    await host.update("warm", "", Turn(queries[0], 0.5, POLICY))  # router, tokenizer, store loaded
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    sessions = 100
    for i in range(sessions):
        for query in queries:
            await host.update(f"s{i}", "", Turn(query, 0.5, POLICY))
    gc.collect()
    per_session = (tracemalloc.get_traced_memory()[0] - before) / sessions
    tracemalloc.stop()
    assert len(host) == sessions + 1
    print(f"memory per idle session: {per_session / 1024:.1f} KiB")
    assert per_session < 32 * 1024, f"{per_session:.0f} bytes per idle session"


def test_affinity_ranks_replicas_alike_everywhere_and_moves_only_a_lost_replicas_sessions() -> None:
    from deployments.affinity import affinity_rank, session_headers

    replicas = ["r1", "r2", "r3"]
    sessions = [f"s{i}" for i in range(300)]
    first = {s: affinity_rank(s, replicas)[0] for s in sessions}
    assert first == {s: affinity_rank(s, list(reversed(replicas)))[0] for s in sessions}  # no shared table needed
    assert all(list(first.values()).count(r) > 60 for r in replicas)  # spread over every replica
    after = {s: affinity_rank(s, ["r1", "r3"])[0] for s in sessions}  # r2 died
    assert all(after[s] == first[s] for s in sessions if first[s] != "r2")  # only r2's sessions moved
    assert session_headers("s1") == {"serve_multiplexed_model_id": "s1"} and session_headers(None) == {}
