"""A store that restarts: PostgreSQL stopped (as a crash would) and started again under a live Store.

While it is down, a route that needs it answers 503 with Retry-After (never a 500), a research run's
events wait in order, and a session commit of finished work waits for it; once it is back, the same
Store serves again with no restart of anything (its pool re-establishes itself). It is the session's
PostgreSQL server that stops and starts (a test that fails meanwhile starts it again). A research
run's collector goes on without its caches meanwhile."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Iterator
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy.exc import ProgrammingError

from actors.collector import Collector
from actors.nlp_pool import NlpPool
from core.runtime import InProcessRuntime
from core.settings import load_settings
from core.store import STORE_RETRY_AFTER_S, Store, outage_tolerated, unavailable
from deployments.answers import answer_store_outages
from research import runs
from research.events import ResearchStarted
from sessions.gateway import SessionHost
from sessions.models import HistoryEntry, SessionPolicy, SessionState
from sessions.store import SessionRepository
from tests.postgres import PostgresServer

CORPUS_PAGES = Path(__file__).resolve().parents[2] / "data" / "corpus" / "pages" / "ja"
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


@pytest.fixture
def site() -> Iterator[str]:
    """Two pages of the bundled corpus on a local HTTP server."""
    bodies = {f"/{n}": path.read_bytes() for n, path in enumerate(sorted(CORPUS_PAGES.glob("*.html"))[:2])}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = bodies.get(self.path, b"")
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


async def test_a_run_s_collector_reads_and_analyses_pages_while_the_store_restarts(
    server: PostgresServer, store: Store, site: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The collector's caches are a shortcut, not a need: one started while PostgreSQL restarts waits
    for it, and pages asked for while it is down are fetched and analysed without the caches (they
    used to fail, or to wait for an analysis that never came, until the agent's timeout)."""
    fetch = {"allow_private": True, "politeness_delay_s": 0}
    settings = load_settings(overrides={"store_url": store.url, "data_dir": tmp_path, "fetch": fetch})
    pool = NlpPool.start(InProcessRuntime(), 1)
    caplog.set_level(logging.WARNING, logger="core.store")
    server.stop()
    starting = asyncio.ensure_future(asyncio.to_thread(Collector, settings, pool))
    while not any("while opening it" in r.message for r in caplog.records) and not starting.done():
        await asyncio.sleep(0.05)
    assert not starting.done()  # it tried, and waits
    await asyncio.to_thread(server.resume)
    collector = await starting
    await asyncio.to_thread(server.stop)
    urls = [f"{site}/0", f"{site}/1"]
    got = await collector.collect(urls)
    assert [c.failure for c in got] == [None, None]
    assert all(c.page is not None and c.analysis is not None and c.analysis.claims for c in got)
    await asyncio.to_thread(server.resume)
    assert collector.stats().analyses == 2
