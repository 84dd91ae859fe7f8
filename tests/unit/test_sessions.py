"""Sessions on both store backends: persistence, owners, TTLs and optimistic writes (the hosts that
serialise turns: tests/unit/test_session_host.py)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from core.errors import InputError
from core.store import Store
from sessions.ids import SessionNotFoundError, owner_of, validate_session_id
from sessions.models import HistoryEntry, SessionPolicy, SessionState
from sessions.store import TRIM_BATCH, SessionRepository, read_session, update_session

POLICY = SessionPolicy(ttl_s=3600, previous_ttl_s=60, history_limit=100)
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def _say(text: str) -> Callable[[SessionState, datetime], int]:
    def change(state: SessionState, now: datetime) -> int:
        state.add(HistoryEntry(role="user", text=text, timestamp=now), POLICY)
        return len(state.history)

    return change


def test_state_round_trips_through_the_store(store_url: str) -> None:
    repo = SessionRepository(Store(store_url))

    def change(state: SessionState, now: datetime) -> None:
        state.add(
            HistoryEntry(role="user", text="営業時間は？", language="ja", request_type="hours", timestamp=now), POLICY
        )
        state.remember_request_type("hours", now)
        state.mode = "guide"
        state.attributes["visits"] = 2
        state.generated_files.append("artifacts/plan.md")

    update_session(repo, "s-1", "", change, POLICY, now=lambda: T0)
    loaded = SessionRepository(Store(store_url)).load("s-1")  # another process's view: a new Store
    assert loaded is not None and loaded.revision == 1
    assert loaded.history[0].text == "営業時間は？" and loaded.history[0].request_type == "hours"
    assert (loaded.mode, loaded.attributes, loaded.generated_files) == ("guide", {"visits": 2}, ["artifacts/plan.md"])
    assert loaded.previous_type(T0 + timedelta(seconds=30), POLICY) == "hours"
    assert loaded.previous_type(T0 + timedelta(seconds=61), POLICY) is None  # too old for a follow-up


def test_a_stale_writer_reloads_instead_of_overwriting(store_url: str) -> None:
    repo = SessionRepository(Store(store_url))
    update_session(repo, "s-2", "", _say("one"), POLICY)
    stale = repo.load("s-2")
    update_session(repo, "s-2", "", _say("two"), POLICY)  # another writer moves on
    _, state = update_session(repo, "s-2", "", _say("three"), POLICY, cached=stale)  # starts from old state
    assert [e.text for e in state.history] == ["one", "two", "three"]
    assert repo.load("s-2") == state


def test_another_owner_sees_nothing(store_url: str) -> None:
    repo = SessionRepository(Store(store_url))
    alice, bob = owner_of("key-alice"), owner_of("key-bob")
    update_session(repo, "shared-name", alice, _say("secret"), POLICY)
    with pytest.raises(SessionNotFoundError):
        read_session(repo, "shared-name", bob, POLICY)
    with pytest.raises(SessionNotFoundError):
        update_session(repo, "shared-name", bob, _say("intrusion"), POLICY)
    assert [e.text for e in read_session(repo, "shared-name", alice, POLICY).history] == ["secret"]
    assert alice != bob and "key-alice" not in alice


def test_an_expired_session_starts_again_empty(store_url: str) -> None:
    repo = SessionRepository(Store(store_url))
    update_session(repo, "old", "", _say("long ago"), POLICY, now=lambda: T0)
    later = T0 + timedelta(seconds=POLICY.ttl_s + 1)
    with pytest.raises(SessionNotFoundError):
        read_session(repo, "old", "", POLICY, now=later)
    count, state = update_session(repo, "old", "", _say("new day"), POLICY, now=lambda: later)
    assert count == 1 and state.created_at == later and state.revision == 2


def _history_rows(store: Store, session_id: str) -> list[int]:
    return [
        int(r[0])
        for r in store.query("SELECT seq FROM session_history WHERE session_id = :id ORDER BY seq", {"id": session_id})
    ]


def test_a_turn_appends_history_rows_and_trims_the_oldest(store_url: str) -> None:
    store = Store(store_url)
    repo, policy = SessionRepository(store), SessionPolicy(history_limit=4)

    def say(text: str) -> Callable[[SessionState, datetime], None]:
        return lambda state, now: state.add(HistoryEntry(role="user", text=text, timestamp=now), policy)

    state = None
    turns = TRIM_BATCH + 8
    for i in range(turns):
        _, state = update_session(repo, "rows", "", say(f"m{i}"), policy, cached=state)
        if i == 6:
            assert _history_rows(store, "rows") == list(range(7))  # trimmed rows wait for a batch
            assert [e.text for e in repo.load("rows").history] == ["m3", "m4", "m5", "m6"]  # type: ignore[union-attr]
    # the batch went when the first kept entry passed TRIM_BATCH; the newest trimmed ones wait for the next
    assert _history_rows(store, "rows") == list(range(TRIM_BATCH, turns))
    loaded = SessionRepository(Store(store_url)).load("rows")
    assert loaded is not None and [e.text for e in loaded.history] == [f"m{i}" for i in range(turns - 4, turns)]
    assert loaded == state


def test_a_rewritten_history_is_stored_as_written(store_url: str) -> None:
    """A change may replace the history (the advisor's summary of old turns): its rows are rewritten."""
    store = Store(store_url)
    repo = SessionRepository(store)
    for text in ("a", "b", "c"):
        update_session(repo, "rw", "", _say(text), POLICY)

    def summarise(state: SessionState, now: datetime) -> None:
        state.history = [HistoryEntry(role="system", text="summary of a, b", timestamp=now), state.history[-1]]

    _, state = update_session(repo, "rw", "", summarise, POLICY)
    update_session(repo, "rw", "", _say("d"), POLICY, cached=state)
    loaded = repo.load("rw")
    assert loaded is not None and [e.text for e in loaded.history] == ["summary of a, b", "c", "d"]
    assert len(_history_rows(store, "rw")) == 3
    repo.delete("rw")
    assert repo.load("rw") is None and _history_rows(store, "rw") == []


def test_sessions_stored_before_history_rows_keep_their_history(store_url: str) -> None:
    """A store written by the first schema (history inside the state) is moved to rows on opening."""
    store = Store(store_url)
    with store.transaction() as conn:
        conn.exec_driver_sql("DROP TABLE session_history")
        conn.exec_driver_sql("DELETE FROM schema_migrations WHERE component = 'sessions' AND version = 2")
    old = SessionState.new("v1", "", T0)
    for text in ("one", "two"):
        old.add(HistoryEntry(role="user", text=text, timestamp=T0), POLICY)
    empty = SessionState.new("v1-empty", "", T0)
    old.revision = empty.revision = 1
    with store.transaction() as conn:
        for state in (old, empty):
            conn.execute(
                sa.text(
                    "INSERT INTO sessions (session_id, owner, revision, updated_at, state_json) "
                    "VALUES (:id, '', 1, :at, :json)"
                ),
                {"id": state.session_id, "at": T0.isoformat(), "json": state.model_dump_json(by_alias=True)},
            )
    repo = SessionRepository(Store(store_url))  # opening applies version 2
    moved = repo.load("v1")
    assert moved is not None and [e.text for e in moved.history] == ["one", "two"] and moved.history_from == 0
    assert repo.load("v1-empty") == empty
    _, state = update_session(repo, "v1", "", _say("three"), POLICY, now=lambda: T0 + timedelta(seconds=1))
    assert [e.text for e in state.history] == ["one", "two", "three"] and _history_rows(repo.store, "v1") == [0, 1, 2]


def test_history_is_bounded() -> None:
    state = SessionState.new("b", "", T0)
    for i in range(5):
        state.add(HistoryEntry(role="user", text=str(i), timestamp=T0), SessionPolicy(history_limit=3))
    assert [e.text for e in state.history] == ["2", "3", "4"]


@pytest.mark.parametrize("bad", ["", "has space", "-lead", "x" * 129, "naïve", "a/b", "../etc", 12])
def test_bad_session_ids_are_refused(bad: object) -> None:
    with pytest.raises(InputError, match="session"):
        validate_session_id(bad)


def test_good_session_ids() -> None:
    for good in ("session_abc123", "a", "A-1.b_2", "x" * 128):
        assert validate_session_id(good) == good
