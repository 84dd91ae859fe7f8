"""Serve app ``research``: submit a research over HTTP, follow its events (SSE), fetch its result.

- ``POST /research`` ``{topic, agents?, timeout?, provider?, corpus?}`` -> ``202 {runId, status, links}``.
  The run is stored as ``accepted`` before the answer; the store is the queue every replica shares
  (research/run_queue.py): an idle replica claims the oldest waiting run and runs it on its event loop
  (one run at a time per replica: a run's NLP pool takes the CPUs; later runs wait as ``accepted``).
- ``GET /research/{id}`` -> status (``accepted|running|completed|failed``), error, result when completed.
- ``GET /research/{id}/events`` -> ``text/event-stream`` of every event of the run, in order, read
  from the store (live while the run goes; late clients and ``Last-Event-ID`` get the rest).
- ``GET /ui`` the research page and ``GET /`` the home page (the five systems, their pages, API docs
  and health): plain HTML+JS in data/pages (deployments/pages.py), served without a key as they hold
  no data; with ``api_keys`` set a page asks for the key once, keeps it in the tab's sessionStorage
  and sends it as ``Authorization: Bearer`` on every call (event stream and charts included).

Runs and events live in the store (SQLite under ``data_dir``, or ``store_url``), so they survive a
replica: a replica holds a lease on the run it runs (``serve.run_lease_s``, renewed a third of that
apart); when it dies, the lease expires and another replica (or its replacement) runs the run again
from the start (``researchRequeued``), at most ``MAX_ATTEMPTS`` times in all, since it may be what
brings replicas down. Callers are checked first (deployments/security.py: API keys, body cap); at
most ``serve.queue_size`` × ``serve.max_replicas`` runs wait (429 beyond). Replicas scale between
``serve.min_replicas`` and ``serve.max_replicas`` on the runs running and waiting
(deployments/autoscaling.py).
"""

# No ``from __future__ import annotations``: Serve's class-based FastAPI views need real annotations.
import asyncio
import contextlib
import json
import logging
import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, field_validator
from ray.serve import Application

from core.errors import ConfigError, MagiError, first_line
from core.events import SSE_KEEPALIVE, sse_frame
from core.fonts import find_japanese_font, missing_font_message
from core.settings import Settings
from core.telemetry import adopted, carried
from core.validation import bounded_int, invalid_unicode_at
from deployments.answers import error_answer, event_stream, failure_text, invalid_option, without_server_paths
from deployments.autoscaling import RUNNING_METRIC, WAITING_METRIC, autoscaling_config, replica_env
from deployments.base import AppService, actor_options_with_env, bind, builder, http_api, service
from deployments.readiness import Check, NotReady, store_check, task_check
from deployments.settings import ServeSettings, corpus_roots
from deployments.validation import field_check
from research import run_queue, runs
from research.charts import ChartRef, render_png
from research.engine import preflight, validate_topic
from research.errors import LeaseLost, ResearchError
from research.metrics import QUEUE_DEPTH
from research.settings import RESEARCH_OPTIONS

if TYPE_CHECKING:
    from actors.nlp_pool import NlpPool

log = logging.getLogger(__name__)
APP_NAME = "research"
ROUTE_PREFIX = "/"  # the app's own paths start with /research
INTERRUPTED = "interrupted by restarts of the research service; resubmit"
MAX_ATTEMPTS = 2  # a run interrupted by a restart runs again, but only so often: it may be the cause
# Of serve.drain_s, what a stopping replica gives its run to finish (the rest went to draining requests).
DRAIN_SHARE_FOR_THE_RUN = 0.5
IDLE_POLL_S = 1.0  # how often an idle replica looks for waiting runs (a POST to it wakes it at once)
POLL_S = 0.25  # how often an open event stream looks for new events in the store
KEEPALIVE_S = 15.0

MAX_EVENT_ID = 2**31 - 1  # a Last-Event-ID above this (or not plain digits) counts as absent
OUTSIDE_ROOTS = "corpus is not one of the folders this service may read; ask its operator which ones are allowed"

MAX_LISTED_CORPORA = 50  # subfolders listed per corpus root on the page

# The page (``/ui``) holds no data, so it is open; every call it makes sends the key the person types into it.
api = http_api("MAGI research", "Consensus research runs over HTTP.", pages={"/": "home.html", "/ui": "research.html"})


class _ResearchFields(BaseModel):
    """The body of ``POST /research``: the topic, plus every research option (``RESEARCH_OPTIONS``)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)  # "agents": true is no 1

    topic: str = Field(description="What to research, in Japanese or English.")

    @field_validator("topic")
    @classmethod
    def _topic(cls, topic: str) -> str:
        return field_check(validate_topic, topic)

    @field_validator("corpus", check_fields=False)  # the field comes from the search section
    @classmethod
    def _path_text(cls, corpus: str | None) -> str | None:
        if corpus is not None and (invalid_unicode_at(corpus) is not None or "\x00" in corpus):
            raise ValueError("corpus is not a valid folder name (invalid Unicode or a NUL character)")
        return corpus


class ResearchRequest(RESEARCH_OPTIONS.body(_ResearchFields, "ResearchRequest")):  # type: ignore[misc]
    pass


def inside_roots(corpus: str, roots: list[Path]) -> bool:
    """True when ``corpus`` is an existing folder within one of ``roots``, symlinks followed (a missing
    folder is refused like a forbidden one, so answers do not tell which folders exist)."""
    resolved = Path(os.path.realpath(corpus))
    return resolved.is_dir() and any(resolved == root or resolved.is_relative_to(root) for root in roots)


def corpus_folder(corpus: str, roots: list[Path]) -> str | None:
    """The folder a request's ``corpus`` names: a name from ``GET /corpora`` (``corpus``,
    ``corpora/mine``) or an absolute path (checked against the roots by the caller); None otherwise."""
    if corpus.startswith("/"):
        return corpus
    head, _, rest = corpus.partition("/")
    if not head or "/" in rest or rest in (".", "..") or rest.startswith("."):
        return None
    for root in roots:
        if root.name == head:
            return str(root / rest) if rest else str(root)
    return None


def _replica_id() -> str:
    """This replica's Serve id (``SERVE_REPLICA::research#ResearchService#…``, also its actor's name):
    the owner written on the runs it holds."""
    from ray import serve

    return serve.get_replica_context().replica_id.to_full_id_str()


def _links(run_id: str) -> dict[str, str]:
    return {"self": f"/research/{run_id}", "events": f"/research/{run_id}/events"}


# The run's actors take the CPUs; the replica mostly waits. Open event streams count as ongoing requests.
@service(api, name="ResearchService", max_ongoing_requests=100)
class ResearchService(AppService):
    def __init__(self, settings: Settings) -> None:
        import ray

        from core.store import open_store

        if not ray.is_initialized():  # pragma: no cover - a replica always runs inside Ray
            raise RuntimeError("the research replica must run inside Ray")
        super().__init__(settings)
        self._serve = ServeSettings.of(settings)
        self._roots = corpus_roots(settings)
        self._store = open_store(settings)
        self._lease = run_queue.Lease(_replica_id(), float(self._serve.run_lease_s))
        self._max_waiting = self._serve.queue_size * self._serve.max_replicas
        self._wakeup = asyncio.Event()  # a POST on this replica: look for work now, not at the next poll
        self._running: str | None = None
        self._waiting_seen = 0  # runs waiting in the store at the last look (the autoscaling metric)
        self._submitted: dict[str, dict[str, Any] | None] = {}  # the context each waiting run was submitted in
        self._worker: asyncio.Task[None] | None = None
        self._run_task: asyncio.Task[None] | None = None  # the run this replica runs now
        self._stopping = False  # Serve is stopping this replica: it claims no more runs
        self._pool: NlpPool | None = None  # the NLP pool, started by the first run and kept for the next
        self._ensure_worker()
        self.checks = [
            store_check(self._store),
            task_check("runner", lambda: self._worker, started_lazily=True),
            Check("nlp", self._nlp_pool_alive, hint="the NLP workers died; the next run starts new ones"),
            Check("queue", self._queue_room, hint="the queue of waiting runs is full; retry later"),
        ]

    async def _queue_room(self) -> str:
        """Room for one more run in the cluster's queue (full, a POST answers 429)."""
        waiting = await asyncio.to_thread(run_queue.waiting_count, self._store)
        size = self._max_waiting
        if waiting >= size:
            raise NotReady(f"{waiting} of {size} places taken")
        return f"{waiting} of {size} places taken"

    async def _nlp_pool_alive(self) -> str:
        """The NLP pool kept warm between runs still has workers (a run drops the ones that fail)."""
        if self._pool is None:
            return "starts with the first run"
        if not self._pool.workers:
            raise NotReady("every NLP worker of the pool failed")
        return f"{len(self._pool.workers)} warm"

    def _ensure_worker(self) -> None:
        """The task that claims runs from the store and runs them one at a time, on this replica's loop."""
        if self._worker is not None and not self._worker.done():
            return
        try:
            self._worker = asyncio.get_running_loop().create_task(self._work())
        except RuntimeError:  # constructed outside the loop: the first request starts it
            self._worker = None

    async def _work(self) -> None:
        """Claim the oldest run nobody holds (waiting, or left by a replica whose lease expired), run it
        while renewing the lease; when there is none, wait for a POST here or the next poll."""
        while not self._stopping:
            claimed, failed = await asyncio.to_thread(
                run_queue.claim_next, self._store, self._lease, MAX_ATTEMPTS, INTERRUPTED
            )
            if failed:
                log.warning("marked %d run(s) failed after repeated restarts: %s", len(failed), ", ".join(failed))
            self._waiting_seen = await asyncio.to_thread(run_queue.waiting_count, self._store)
            QUEUE_DEPTH.set(self._waiting_seen)
            if claimed is None:
                self._wakeup.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wakeup.wait(), IDLE_POLL_S)
                continue
            if claimed.attempt > 1:
                log.warning("run %s was left by a replica that stopped; running it again", claimed.run_id)
            self._running = claimed.run_id
            try:
                await self._hold(claimed)
            finally:
                self._running = None

    async def _hold(self, claimed: run_queue.Claimed) -> None:
        """Run a claimed run, renewing its lease; stop it when the lease was lost to another replica."""
        try:
            settings = self._settings_for(ResearchRequest.model_validate(claimed.request))
        except (ValueError, MagiError) as exc:
            message = f"cannot run again: {first_line(exc)}"
            runs.finish_failed(self._store, claimed.run_id, message, owner=self._lease.owner)
            return
        # in the context of the request that submitted it (its id and trace; its id when another replica took it)
        stored = {"request_id": await asyncio.to_thread(runs.request_id_of, self._store, claimed.run_id)}
        with adopted(self._submitted.pop(claimed.run_id, None) or stored):
            task = asyncio.get_running_loop().create_task(self._execute(claimed.run_id, claimed.topic, settings))
        self._run_task = task
        while not task.done():
            await asyncio.wait({task}, timeout=self._lease.renew_every_s)
            if task.done():
                break
            if not await asyncio.to_thread(run_queue.renew, self._store, claimed.run_id, self._lease):
                log.warning("run %s was taken over by another replica; stopping it here", claimed.run_id)
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
                return
            self._waiting_seen = await asyncio.to_thread(run_queue.waiting_count, self._store)
        await task

    async def __del__(self) -> None:
        """Serve is stopping this replica (a rolling upgrade, a scale-down), after its requests drained:
        it claims no more runs, lets the run in hand finish within what is left of ``serve.drain_s``,
        and otherwise gives its lease up, so another replica takes the run over at once."""
        self._stopping = True
        self._wakeup.set()
        task, run_id = self._run_task, self._running
        if task is None or task.done() or run_id is None:
            return
        await asyncio.wait({task}, timeout=self._serve.drain_s * DRAIN_SHARE_FOR_THE_RUN)
        if task.done():
            return
        log.warning("run %s did not finish before this replica stops; another replica takes it over", run_id)
        if self._worker is not None:
            self._worker.cancel()
        task.cancel()
        await asyncio.to_thread(run_queue.release, self._store, run_id, self._lease)

    def _full(self) -> JSONResponse | None:
        """The 429 answer when the service's queue of waiting runs is full, else None."""
        if run_queue.waiting_count(self._store) < self._max_waiting:
            return None
        return self._too_many()

    def _too_many(self) -> JSONResponse:
        return JSONResponse(
            {"error": f"{self._max_waiting} runs are already waiting; retry later"},
            status_code=429,
            headers={"Retry-After": str(self._serve.retry_after_s)},
        )

    def record_autoscaling_stats(self) -> dict[str, float]:
        """Serve's custom autoscaling metrics (deployments/autoscaling.py): the run this replica runs,
        and the runs waiting in the store as it last saw them."""
        return {RUNNING_METRIC: float(self._running is not None), WAITING_METRIC: float(self._waiting_seen)}

    @api.get("/corpora")
    async def corpora(self) -> JSONResponse:
        """The corpus folders requests may name (the page's choice list): each root and its subfolders,
        by name only (``corpus``, ``corpora/mine``): where they lie on the server is not the caller's."""
        found: list[dict[str, str]] = []
        for root in self._roots:
            if not root.is_dir():
                continue
            found.append({"name": root.name})
            found += [
                {"name": f"{root.name}/{child.name}"}
                for child in sorted(root.iterdir())
                if child.is_dir() and not child.name.startswith(".")
            ][:MAX_LISTED_CORPORA]
        return JSONResponse({"corpora": found})

    def _settings_for(self, body: ResearchRequest) -> Settings:
        """The service's settings with the request's options; a bad option is a ConfigError naming it."""
        return RESEARCH_OPTIONS.apply(self.settings, RESEARCH_OPTIONS.from_body(body))

    @api.post("/research", status_code=202)
    async def submit(self, body: ResearchRequest) -> JSONResponse:
        self._ensure_worker()
        full = self._full()
        if full is not None:
            return full
        if body.corpus is not None:
            folder = corpus_folder(body.corpus, self._roots)
            if folder is None or not inside_roots(folder, self._roots):
                return error_answer(403, OUTSIDE_ROOTS)  # one answer for missing and forbidden: no map of the disk
            body = body.model_copy(update={"corpus": folder})
        try:
            settings = self._settings_for(body)
        except ConfigError as exc:
            return invalid_option(exc)
        try:  # a bad corpus fails now, not in the background; loading a corpus may take a moment
            await asyncio.to_thread(preflight, body.topic, settings)
        except MagiError as exc:
            return error_answer(400, failure_text(exc))
        run_id = uuid.uuid4().hex[:12]
        request = body.model_dump(mode="json", by_alias=True, exclude_none=True)
        position = run_queue.accept(self._store, run_id, body.topic, request, self._max_waiting)  # stored first
        if position is None:  # other POSTs filled the queue while this one was checked
            return self._too_many()
        self._submitted[run_id] = carried()  # the run goes on in this context (id, trace) when it runs here
        self._wakeup.set()
        return JSONResponse(
            {"runId": run_id, "status": "accepted", "queuePosition": position, "links": _links(run_id)},
            status_code=202,
        )

    async def _execute(self, run_id: str, topic: str, settings: Settings) -> None:
        from core.runtime import RayRuntime
        from nlp.settings import NlpSettings
        from research.engine import run_research, start_pool

        owner = self._lease.owner
        sink = runs.StoreEventSink(self._store, run_id, owner)
        try:
            runtime = RayRuntime()
            try:
                if self._pool is None or not self._pool.workers:  # kept warm between runs (models stay loaded)
                    self._pool = start_pool(runtime, NlpSettings.of(self.settings))
                result = await run_research(topic, settings, runtime, sink, run_id=run_id, pool=self._pool)
            finally:
                await runtime.close()
        except LeaseLost:
            log.warning("run %s: another replica runs it now; this one stopped", run_id)
            return
        except Exception as exc:
            message = first_line(exc)
            log.warning("run %s failed: %s", run_id, message)
            partial = exc.partial if isinstance(exc, ResearchError) else None
            runs.finish_failed(self._store, run_id, message, sink.terminal, partial=partial, owner=owner)
            return
        assert sink.terminal is not None  # the engine's researchCompleted
        runs.finish_completed(self._store, result, sink.terminal, owner=owner)

    @api.get("/research/{run_id}")
    async def status(self, run_id: str) -> JSONResponse:
        self._ensure_worker()
        run = runs.load_run(self._store, run_id)
        if run is None:
            return error_answer(404, f"no research run {run_id!r}; POST /research to start one")
        body: dict[str, Any] = {
            "runId": run.run_id,
            "topic": run.topic,
            "status": run.status,
            "submittedAt": run.started_at,
            "completedAt": run.completed_at,
            "error": without_server_paths(run.error) if run.error else None,
            "queuePosition": run_queue.queue_position(self._store, run_id),
            "links": _links(run_id),
            "requestId": run.request_id,
            "result": None,
            "partial": None,
        }
        if run.result_json:  # the result, or what a failed run produced before failing
            body["result" if run.status == "completed" else "partial"] = json.loads(run.result_json)
        return JSONResponse(body)

    @api.get("/research/{run_id}/charts/{file}")
    async def chart(self, run_id: str, file: str) -> Response:
        """A chart of a completed run's report, drawn from the stored result (research/charts.py)."""
        run = runs.load_run(self._store, run_id)
        if run is None or not run.result_json:
            return error_answer(404, f"no finished research run {run_id!r}")
        charts = json.loads(run.result_json).get("charts") or []
        found = next((ChartRef.model_validate(c) for c in charts if c.get("file") == file), None)
        if found is None:
            return error_answer(404, f"run {run_id!r} has no chart {file!r}")
        font = find_japanese_font()
        if font is None:
            return error_answer(503, missing_font_message("this chart", "en"))
        png = await asyncio.to_thread(render_png, found, font)
        return Response(png, media_type="image/png")

    @api.get("/research/{run_id}/events")
    async def events(self, run_id: str, request: Request) -> Any:
        if runs.load_run(self._store, run_id) is None:
            return error_answer(404, f"no research run {run_id!r}; POST /research to start one")
        after = bounded_int(request.headers.get("last-event-id"), high=MAX_EVENT_ID) or 0
        return event_stream(self._stream(run_id, after))

    async def _stream(self, run_id: str, after: int) -> AsyncIterator[bytes]:
        idle = 0.0
        while True:
            batch = await asyncio.to_thread(runs.load_events, self._store, run_id, after)
            for event in batch:
                after = event.seq
                yield sse_frame(event.type, event.json, event.seq)
                if event.type in runs.TERMINAL_EVENTS:
                    return
            if not batch:
                run = await asyncio.to_thread(runs.load_run, self._store, run_id)
                if run is None or run.status not in runs.UNFINISHED:
                    return  # finished, and its terminal event was already sent before Last-Event-ID
                idle += POLL_S
                if idle >= KEEPALIVE_S:
                    idle = 0.0
                    yield SSE_KEEPALIVE
            else:
                idle = 0.0
            await asyncio.sleep(POLL_S)


def build_app(settings: Settings) -> Application:
    """The ``research`` Serve application for these settings (their store holds the runs).

    Replicas scale on the runs running and waiting (``serve.min_replicas`` .. ``serve.max_replicas``,
    aiming at ``serve.target_queued_runs`` each; default one replica), see deployments/autoscaling.py.
    """
    section = ServeSettings.of(settings)
    scaling = autoscaling_config(section.min_replicas, section.max_replicas, section.target_queued_runs)
    actor = actor_options_with_env(replica_env())
    return bind(ResearchService, settings, num_replicas="auto", autoscaling_config=scaling, ray_actor_options=actor)


app = builder(build_app)

__all__ = [
    "APP_NAME",
    "DRAIN_SHARE_FOR_THE_RUN",
    "INTERRUPTED",
    "KEEPALIVE_S",
    "MAX_ATTEMPTS",
    "MAX_EVENT_ID",
    "MAX_LISTED_CORPORA",
    "OUTSIDE_ROOTS",
    "POLL_S",
    "ROUTE_PREFIX",
    "ResearchRequest",
    "ResearchService",
    "api",
    "app",
    "build_app",
    "corpus_folder",
    "inside_roots",
]
