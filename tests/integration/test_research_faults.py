"""Agent failures as the spec demands (ERR-001/002), on the shared Ray cluster.

A real SearXNG-compatible server on 127.0.0.1 (tests/unit/test_search_server.py) answers every query
with 403, so the chain falls back to the bundled corpus, except that queries carrying one agent's
modifier are held for a while first: that agent is then still searching when the test kills it or
its timeout strikes, while the other agents finish normally.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from actors.nlp_pool import NlpPool
from actors.nlp_worker import NlpWorker
from core.events import Event, ListSink
from core.runtime import InProcessRuntime, RayRuntime
from core.settings import Settings, load_settings
from nlp.analysis import AnalysisInput
from nlp.settings import NlpSettings
from research.engine import agent_name, run_research, start_pool
from research.errors import ResearchError
from research.events import StageProgress
from tests.unit.test_search_server import Reply, SearxngServer

TOPIC = "中小企業の価格転嫁の現状"
HELD_S = 900.0  # a search held this long is one the run must not wait for


def _slow_for(words: tuple[str, ...], delay_s: float) -> Callable[[dict[str, str]], Reply]:
    def respond(params: dict[str, str]) -> Reply:
        slow = any(w in params.get("q", "") for w in words)
        return Reply(403, "<h1>Forbidden</h1>", delay_s=delay_s if slow else 0.0)

    return respond


@contextmanager
def searxng_holding(*words: str, delay_s: float) -> Iterator[str]:
    with SearxngServer(_slow_for(words, delay_s)) as server:
        yield server.url


def _settings(tmp_path: Path, searxng_url: str, **research: object) -> Settings:
    # The SearXNG client waits longer than the agent may, so only the agent's own timeout can end a held search.
    return load_settings(
        overrides={
            "data_dir": tmp_path / "data",
            "search": {
                "provider": "searxng",
                "fallbacks": ["local"],
                "searxng_url": searxng_url,
                "searxng_timeout_s": 120,
            },
            "research": {"iterations": 1, **research},
        }
    )


async def _warm_pool(runtime: RayRuntime, settings: Settings) -> NlpPool:
    """The run's NLP pool with the model loaded in every worker, as a Serve replica keeps it: on a loaded
    machine a cold start alone can take longer than the agent budget these tests give."""
    pool = start_pool(runtime, NlpSettings.of(settings))
    await asyncio.gather(*(w.call(NlpWorker.analyse, [AnalysisInput("準備", "ja")]) for w in pool.workers))
    return pool


def _stop(runtime: RayRuntime, pool: NlpPool | None) -> None:
    """A pool given to a run is left running by it; its workers hold the session's CPUs."""
    for worker in pool.workers if pool else []:
        runtime.kill(worker)


class _Watch:
    """A sink that runs ``action`` (in a thread) once agent ``agent_id`` reports that it is searching."""

    def __init__(self, agent_id: int, action: Callable[[StageProgress], None]) -> None:
        self.events = ListSink()
        self._agent_id, self._action, self._fired = agent_id, action, False

    def emit(self, event: Event) -> None:
        self.events.emit(event)
        if isinstance(event, StageProgress) and event.agent_id == self._agent_id and not self._fired:
            self._fired = True
            threading.Thread(target=self._action, args=(event,), daemon=True).start()


async def test_an_agent_killed_mid_iteration_leaves_the_others_to_finish(ray_cluster: None, tmp_path: Path) -> None:
    import ray

    killed: list[str] = []

    def kill(event: StageProgress) -> None:
        name = agent_name(event.run_id, event.iteration, event.agent_id)
        for _ in range(100):  # the actor registers its name right after the event
            try:
                ray.kill(ray.get_actor(name), no_restart=True)
                killed.append(name)
                return
            except ValueError:
                time.sleep(0.05)

    with searxng_holding("ニュース", delay_s=8) as url:  # agent 2 (news) is still searching
        watch = _Watch(2, lambda e: (time.sleep(0.5), kill(e)))
        runtime = RayRuntime()
        try:
            result = await run_research(TOPIC, _settings(tmp_path, url), runtime, watch, run_id="kill")
        finally:
            await runtime.close()
    assert killed == ["research-kill-i1-a2-t1"]
    [iteration] = result.iterations
    assert {r.agent_id for r in iteration.agent_reports} == {1, 3} and not iteration.retried  # N-1 go on
    [failure] = iteration.agent_failures
    assert failure.agent_id == 2 and not failure.timed_out and "Actor" in failure.error_type
    assert failure.last_stage == "search 0/1"
    assert (
        result.total_agent_runs == 3
        and result.claims
        and "エージェント2（反復1、1回目）が失敗" in result.final_report  # the report speaks the topic's language
    )


async def test_a_timed_out_agent_is_cancelled_logged_and_the_rest_are_unaffected(
    ray_cluster: None, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with searxng_holding("ニュース", delay_s=HELD_S) as url:
        runtime = RayRuntime()
        pool: NlpPool | None = None
        try:
            # 60 s: the healthy agents' whole work (the run's collector started, pages read) fits it on a
            # machine loaded by another test run too; 30 s did not
            settings = _settings(tmp_path, url, agent_timeout_s=60)
            pool = await _warm_pool(runtime, settings)
            started = time.perf_counter()
            result = await run_research(TOPIC, settings, runtime, ListSink(), pool=pool)
            elapsed = time.perf_counter() - started
        finally:
            _stop(runtime, pool)
            await runtime.close()
    assert elapsed < HELD_S  # the run did not wait for the held search (held far longer than any run takes)
    [iteration] = result.iterations
    assert {r.agent_id for r in iteration.agent_reports} == {1, 3}
    [failure] = iteration.agent_failures
    assert failure.timed_out and failure.error == "timed out after 60 s in stage search 0/1"
    assert failure.duration_ms >= 60_000 and failure.partial is not None
    assert any("ニュース" in q for q in failure.partial.queries)  # what it was doing when it was stopped
    assert any("agent 2 failed after" in r.message and "last stage: search 0/1" in r.message for r in caplog.records)


async def test_a_majority_failure_is_retried_once_then_reported_with_partial_results(
    ray_cluster: None, tmp_path: Path
) -> None:
    with searxng_holding("最新", "分析", delay_s=HELD_S) as url:  # agents 2 and 3 never finish searching
        runtime = RayRuntime()
        pool: NlpPool | None = None
        events = ListSink()
        try:  # agent 1's budget holds its whole work (pages read, warm workers) on a loaded machine too
            settings = _settings(tmp_path, url, agent_timeout_s=40)
            pool = await _warm_pool(runtime, settings)
            with pytest.raises(ResearchError, match="2 of 3 agents failed twice") as caught:
                await run_research(TOPIC, settings, runtime, events, pool=pool)
        finally:
            _stop(runtime, pool)
            await runtime.close()
    partial = caught.value.partial
    assert partial is not None
    attempts = partial["failedAttempts"]
    assert len(attempts) == 2  # the first try and the one retry
    for attempt in attempts:  # agent 1's accepted reports are kept for debugging
        assert [r["agentId"] for r in attempt["reports"]] == [1] and attempt["reports"][0]["sources"]
        assert sorted(f["agentId"] for f in attempt["failures"]) == [2, 3]
        assert all(f["timedOut"] for f in attempt["failures"])
    assert events.events[-1].type == "researchFailed"
    assert sum(e.type == "agentStarted" for e in events.events) == 6


async def test_every_search_provider_failing_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SearXNG refuses, DuckDuckGo (ddgs) cannot connect: each agent fails, the retry fails, the error says why."""
    monkeypatch.setenv("DDGS_PROXY", "http://127.0.0.1:9")  # nothing listens: fails at once, network or not
    with SearxngServer(lambda _params: Reply(403, "<h1>Forbidden</h1>")) as server:
        settings = load_settings(
            overrides={
                "data_dir": tmp_path / "data",
                "search": {"provider": "searxng", "fallbacks": ["ddgs"], "searxng_url": server.url, "cache_ttl_s": 0},
                "research": {"iterations": 1},
            }
        )
        runtime = InProcessRuntime()
        try:
            with pytest.raises(ResearchError) as caught:
                await run_research(TOPIC, settings, runtime, ListSink())
        finally:
            await runtime.close()
    message = str(caught.value)
    assert "3 of 3 agents failed twice" in message and "searxng" in message and "ddgs" in message
    assert caught.value.partial is not None and len(caught.value.partial["failedAttempts"]) == 2
