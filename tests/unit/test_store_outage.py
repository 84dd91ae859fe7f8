"""A store that restarts: PostgreSQL stopped (as a crash would) and started again under a live Store.

While it is down, a route that needs it answers 503 with Retry-After (never a 500), a research run's
events wait in order, and a session commit of finished work waits for it; once it is back, the same
Store serves again with no restart of anything (its pool re-establishes itself). It is the session's
PostgreSQL server that stops and starts (a test that fails meanwhile starts it again)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator
from datetime import datetime

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy.exc import ProgrammingError

from core.store import STORE_RETRY_AFTER_S, Store, outage_tolerated, unavailable
from deployments.answers import answer_store_outages
from research import runs
from research.events import ResearchStarted
from sessions.gateway import SessionHost
from sessions.models import HistoryEntry, SessionPolicy, SessionState
from sessions.store import SessionRepository
from tests.postgres import PostgresServer

POLICY = SessionPolicy(ttl_s=3600, previous_ttl_s=600, history_limit=500)


@pytest.fixture
def server(postgres_server: PostgresServer) -> PostgresServer:
    """The session's server: tests run one at a time, so stopping it here stops no one else."""
    return postgres_server


@pytest.fixture
def store(server: PostgresServer) -> Iterator[Store]:
    store = Store(server.create_database())
    yield store
    if not _answers(store):  # a test that failed while the server was down
        server.resume()
    store.close()


def _answers(store: Store) -> bool:
    try:
        store.query("SELECT 1")
    except Exception:
        return False
    return True


def test_a_route_answers_503_with_retry_after_while_the_store_is_down(server: PostgresServer, store: Store) -> None:
    api = FastAPI()
    answer_store_outages(api)

    @api.get("/probe")
    def probe() -> dict[str, int]:
        return {"rows": len(store.query("SELECT 1"))}

    @api.get("/bug")
    def bug() -> None:
        store.query("SELECT no_such_column FROM no_such_table")

    client = TestClient(api, raise_server_exceptions=False)
    assert client.get("/probe").json() == {"rows": 1}
    server.stop()
    down = client.get("/probe")
    assert down.status_code == 503 and down.headers["retry-after"] == str(STORE_RETRY_AFTER_S)
    assert "nothing was done" in down.json()["error"]
    server.resume()
    assert client.get("/probe").json() == {"rows": 1}  # the same Store, reconnected by itself
    assert client.get("/bug").status_code == 500  # a wrong statement is a bug, not an outage
    with pytest.raises(ProgrammingError) as info:
        store.query("SELECT no_such_column FROM no_such_table")
    assert not unavailable(info.value)


def test_a_runs_events_wait_for_the_store_and_keep_their_order(server: PostgresServer, store: Store) -> None:
    runs.record_started(store, "r1", "topic")
    sink = runs.StoreEventSink(store, "r1")
    sink.emit(ResearchStarted(run_id="r1", topic="first"))
    server.stop()
    for n in range(3):  # the run goes on: nothing raises while the store is away
        sink.emit(ResearchStarted(run_id="r1", topic=f"while down {n}"))
    with outage_tolerated("a read"):  # skipped, logged
        store.query("SELECT 1")
    server.resume()
    sink.emit(ResearchStarted(run_id="r1", topic="after"))  # takes the waiting ones along, first
    topics = [ResearchStarted.model_validate_json(e.json).topic for e in runs.load_events(store, "r1")]
    assert topics == ["first", "while down 0", "while down 1", "while down 2", "after"]


async def test_a_commit_of_finished_work_waits_for_the_store(
    server: PostgresServer, store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    def say(text: str) -> Callable[[SessionState, datetime], int]:
        def change(state: SessionState, now: datetime) -> int:
            state.add(HistoryEntry(role="assistant", text=text, timestamp=now), POLICY)
            return len(state.history)

        return change

    host = SessionHost(SessionRepository(store), POLICY)
    assert await host.update("s", "", say("before")) == 1
    server.stop()
    with pytest.raises(Exception) as refused:  # a new turn is refused at once (the app answers 503)
        await host.update("s", "", say("refused"))
    assert unavailable(refused.value)
    caplog.set_level(logging.WARNING, logger="sessions.gateway")
    waiting = asyncio.ensure_future(host.update("s", "", say("answered"), store_wait_s=120))
    while not any("store unavailable" in r.message for r in caplog.records):  # it tried, and waits
        await asyncio.sleep(0.05)
    assert not waiting.done()
    await asyncio.to_thread(server.resume)
    assert await waiting == 2
    assert [e.text for e in (await host.read("s", "")).history] == ["before", "answered"]
