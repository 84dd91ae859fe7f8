"""Serve app ``research``: submit a research over HTTP, follow its events (SSE), fetch its result.

- ``POST /research`` ``{topic, agents?, timeout?, provider?, corpus?}`` -> ``202 {runId, status, links}``.
  The run is stored as ``accepted`` before the answer; the store is the queue every replica shares
  (research/run_queue.py): an idle replica claims the oldest waiting run and runs it on its event loop
  (one run at a time per replica: a run's NLP pool takes the CPUs; later runs wait as ``accepted``).
- ``GET /research/{id}`` -> status (``accepted|running|completed|failed|cancelled``), error, result when
  completed. A result names corpus files by corpus (``corpus://corpora/mine/page.html``), never by a
  server path.
- ``GET /research/{id}/events`` -> ``text/event-stream`` of every event of the run, in order, read
  from the store (live while the run goes; late clients and ``Last-Event-ID`` get the rest); at most
  ``serve.client_streams`` open at once per client and replica (429 beyond).
- ``DELETE /research/{id}`` cancels a waiting or running run (``cancelled``; 409 once it has ended).
- A run belongs to the key it was submitted under (deployments/identity.py): status, events, charts
  and cancel answer 404 to any other key, as for a run that does not exist. Without keys, every run
  is the one local client's.
- ``GET /ui`` the research page and ``GET /`` the home page (the five systems, their pages, API docs
  and health): plain HTML+JS in data/pages (deployments/pages.py), served without a key as they hold
  no data; with ``api_keys`` set a page asks for the key once, keeps it in the tab's sessionStorage
  and sends it as ``Authorization: Bearer`` on every call (event stream and charts included).

Runs and events live in the store (SQLite under ``data_dir``, or ``store_url``), so they survive a
replica: a replica holds a lease on the run it runs (``serve.run_lease_s``, renewed a third of that
apart); when it dies, the lease expires and another replica (or its replacement) runs the run again
from the start (``researchRequeued``), at most ``MAX_ATTEMPTS`` times in all, since it may be what
brings replicas down. Callers are checked first (deployments/security.py: API keys, body cap); at
most ``serve.queue_size`` × ``serve.max_replicas`` runs wait, and ``serve.client_queue`` of one client
(a key, or an address without keys): 429 beyond. Replicas scale between
``serve.min_replicas`` and ``serve.max_replicas`` on the runs running and waiting
(deployments/autoscaling.py).
"""

# No ``from __future__ import annotations``: Serve's class-based FastAPI views need real annotations.
import asyncio
import contextlib
import functools
import json
import logging
import os
import re
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, field_validator
from ray.serve import Application
from sqlalchemy.exc import DBAPIError

from core.errors import ConfigError, MagiError, first_line
from core.events import SSE_KEEPALIVE, sse_frame
from core.fonts import find_japanese_font, missing_font_message
from core.messages import Lang
from core.runtime import lost_in_cluster
from core.settings import Settings
from core.store import outage_tolerated, retry_while_unavailable_async, unavailable
from core.telemetry import adopted, carried
from core.validation import bounded_int, invalid_unicode_at, printable
from deployments.answers import error_answer, event_stream, failure_text, invalid_option, without_server_paths
from deployments.autoscaling import RUNNING_METRIC, WAITING_METRIC, autoscaling_config, replica_env
from deployments.base import AppService, actor_options_with_env, bind, builder, http_api, service
from deployments.language import say
from deployments.readiness import Check, NotReady, store_check, task_check
from deployments.security import ClientBusyError, InFlightLimit, too_many
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
MAX_ATTEMPTS = 3  # a run whose replica died runs again, but only so often: it may be the cause
# Of serve.drain_s, what a stopping replica gives its run to finish (the rest went to draining requests).
DRAIN_SHARE_FOR_THE_RUN = 0.5
IDLE_POLL_S = 1.0  # how often an idle replica looks for waiting runs (a POST to it wakes it at once)
POLL_S = 0.25  # how often an open event stream looks for new events in the store
KEEPALIVE_S = 15.0
# How long a replica waits for its store to come back before giving up what it was storing (a run's
# events and final status): longer than a restart of PostgreSQL, shorter than a forgotten outage.
STORE_WAIT_S = 120.0

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


_FILE_URL = re.compile(r"file://[^\s\"'<>()\[\]]*?([^/\s\"'<>()\[\]]+)(?=[\s\"'<>()\[\]]|$)")


def public_text(text: str, roots: list[Path]) -> str:
    """``text`` (a stored result or event, as JSON or Markdown) without server paths: a file of a corpus
    root is named by the root and its path inside (``corpus://corpora/mine/page.html``, the names
    ``GET /corpora`` lists), a root itself by its name, any other ``file://`` URL by its file name."""
    for root in sorted(roots, key=lambda r: len(str(r)), reverse=True):
        text = text.replace(root.as_uri(), f"corpus://{root.name}").replace(str(root), root.name)
    return _FILE_URL.sub(lambda m: f"corpus://{m.group(1)}", text)


def _replica_id() -> str:
    """This replica's Serve id (``SERVE_REPLICA::research#ResearchService#…``, also its actor's name):
    the owner written on the runs it holds."""
    from ray import serve

    return serve.get_replica_context().replica_id.to_full_id_str()


def _replica_alive(replica_id: str) -> bool:
    """Whether the replica that wrote ``replica_id`` as a run's owner still lives (its actor has that name)."""
    import ray

    try:
        ray.get_actor(replica_id, namespace="serve")
    except ValueError:
        return False
    return True


def _live_lapsed_owners(store: Any, lease: run_queue.Lease) -> set[str]:
    """Owners whose lease lapsed but who still live (a store restart, a stalled loop): spared by claims."""
    return {owner for owner in run_queue.lapsed_owners(store, lease) if _replica_alive(owner)}


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
        self._task: asyncio.Task[None] | None = None  # the run this replica runs now
        self._streams = InFlightLimit(self._serve.client_streams, key="busy.streams")
        self._waiting_seen = 0  # runs waiting in the store at the last look (the autoscaling metric)
        self._submitted: dict[str, dict[str, Any] | None] = {}  # the context each waiting run was submitted in
        self._worker: asyncio.Task[None] | None = None
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
            try:
                spare = await asyncio.to_thread(_live_lapsed_owners, self._store, self._lease)
                claimed, failed = await asyncio.to_thread(
                    functools.partial(
                        run_queue.claim_next, self._store, self._lease, MAX_ATTEMPTS, INTERRUPTED, spare=spare
                    )
                )
            except DBAPIError as exc:
                if not unavailable(exc):
                    raise
                log.warning("store unavailable; looking for runs again in %g s: %s", IDLE_POLL_S, first_line(exc))
                await asyncio.sleep(IDLE_POLL_S)
                continue
            if failed:
                log.warning("marked %d run(s) failed after repeated restarts: %s", len(failed), ", ".join(failed))
            with outage_tolerated("reading the queue's depth"):  # for autoscaling: the last one seen will do
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
        self._task = task
        try:
            every = self._lease.renew_every_s
            while not task.done():
                await asyncio.wait({task}, timeout=every)
                if task.done():
                    break
                try:
                    renewed = await asyncio.to_thread(run_queue.renew, self._store, claimed.run_id, self._lease)
                except DBAPIError as exc:
                    if not unavailable(exc):
                        raise
                    # The store restarts: keep running, and renew as soon as it is back (before the lease
                    # expires, if it can), so that no other replica starts the run again meanwhile.
                    every = min(0.5, self._lease.renew_every_s)
                    continue
                every = self._lease.renew_every_s
                if not renewed:
                    log.warning(
                        "run %s is no longer this replica's (cancelled or taken over); stopping it", claimed.run_id
                    )
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await task
                    return
                with outage_tolerated("reading the queue's depth"):
                    self._waiting_seen = await asyncio.to_thread(run_queue.waiting_count, self._store)
            try:
                await task
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if current is not None and current.cancelling():  # this replica stops: let it
                    raise
                log.info("run %s cancelled at its submitter's request", claimed.run_id)
        finally:
            self._task = None

    async def __del__(self) -> None:
        """Serve is stopping this replica (a rolling upgrade, a scale-down), after its requests drained:
        it claims no more runs, lets the run in hand finish within what is left of ``serve.drain_s``,
        and otherwise gives its lease up, so another replica takes the run over at once."""
        self._stopping = True
        self._wakeup.set()
        task, run_id = self._task, self._running
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

    def _full(self, lang: Lang) -> JSONResponse | None:
        """The 429 answer when the service's queue of waiting runs is full, else None."""
        if run_queue.waiting_count(self._store) < self._max_waiting:
            return None
        return self._too_many(lang)

    def _too_many(self, lang: Lang) -> JSONResponse:
        response: JSONResponse = too_many(say("queue.full", lang, limit=self._max_waiting), self._serve.retry_after_s)
        return response

    def _own_run(self, run_id: str, request: Request) -> runs.RunRecord | None:
        """The run if it is the caller's (submitted under the key the caller presents; without keys every
        run is the one local client's), else None: another client's run is answered as missing."""
        run = runs.load_run(self._store, run_id)
        if run is None or run.submitter != self.caller(request):
            return None
        return run

    def _missing(self, run_id: str, request: Request) -> JSONResponse:
        return error_answer(404, say("run.missing", self.language(request), run_id=repr(printable(run_id[:40]))))

    def _public(self, text: str) -> str:
        """Stored result or event JSON as a caller sees it: no server path (a corpus file's ``file://`` URL
        is named by its corpus and its path inside, ``corpus://corpora/mine/page.html``)."""
        return public_text(text, self._roots)

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
    async def submit(self, body: ResearchRequest, request: Request) -> JSONResponse:
        self._ensure_worker()
        lang = self.language(request)
        full = self._full(lang)
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
        stored = body.model_dump(mode="json", by_alias=True, exclude_none=True)
        submitter = run_queue.Submitter(self.caller(request), self.client(request), self._serve.client_queue)
        try:  # stored first, under its submitter
            position = run_queue.accept(self._store, run_id, body.topic, stored, self._max_waiting, submitter)
        except run_queue.ClientQueueFull as exc:
            busy: JSONResponse = too_many(say("queue.client", lang, limit=exc.limit), self._serve.retry_after_s)
            return busy
        if position is None:  # other POSTs filled the queue while this one was checked
            return self._too_many(lang)
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
            if lost_in_cluster(exc) and await self._give_back(run_id):
                return
            message = first_line(exc)
            log.warning("run %s failed: %s", run_id, message)
            partial = exc.partial if isinstance(exc, ResearchError) else None
            await self._store_outcome(
                sink,
                lambda: runs.finish_failed(self._store, run_id, message, sink.terminal, partial=partial, owner=owner),
            )
            return
        assert sink.terminal is not None  # the engine's researchCompleted
        await self._store_outcome(sink, lambda: runs.finish_completed(self._store, result, sink.terminal, owner=owner))

    async def _give_back(self, run_id: str) -> bool:
        """A run cut by a lost node (its agents, collector or NLP workers went with it) waits again for
        a replica, which runs it from the start (``researchRequeued``); attempts still count, so a run
        that brings nodes down ends failed. False when it could not be given back (failed it, then)."""
        try:
            given = await retry_while_unavailable_async(
                lambda: run_queue.release(self._store, run_id, self._lease), wait_s=STORE_WAIT_S, what="requeueing"
            )
        except DBAPIError:
            return False
        if given:
            log.warning("run %s: part of it was on a node that was lost; it runs again", run_id)
            self._wakeup.set()
        return given

    async def _store_outcome(self, sink: runs.StoreEventSink, finish: Any) -> None:
        """The run's waiting events, then its final status, waiting for a store that restarts; a
        replica that cannot store them for ``STORE_WAIT_S`` leaves the run to a takeover."""
        try:
            await retry_while_unavailable_async(sink.flush, wait_s=STORE_WAIT_S, what="storing a run's events")
            await retry_while_unavailable_async(finish, wait_s=STORE_WAIT_S, what="storing a run's outcome")
        except LeaseLost:
            log.warning("run %s: another replica runs it now; its outcome here is dropped", sink.run_id)

    @api.get("/research/{run_id}")
    async def status(self, run_id: str, request: Request) -> JSONResponse:
        self._ensure_worker()
        run = self._own_run(run_id, request)
        if run is None:
            return self._missing(run_id, request)
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
            body["result" if run.status == "completed" else "partial"] = json.loads(self._public(run.result_json))
        return JSONResponse(body)

    @api.delete("/research/{run_id}")
    async def cancel(self, run_id: str, request: Request) -> JSONResponse:
        """Cancel the caller's waiting or running run (another client's is answered as missing)."""
        lang = self.language(request)
        run = self._own_run(run_id, request)
        if run is None:
            return self._missing(run_id, request)
        if not await asyncio.to_thread(runs.cancel, self._store, run_id, say("run.cancelled", lang)):
            return error_answer(409, say("run.finished", lang, run_id=run_id, status=run.status))
        if self._running == run_id and self._task is not None:  # this replica runs it: stop now
            self._task.cancel()
        return JSONResponse({"runId": run_id, "status": "cancelled", "links": _links(run_id)})

    @api.get("/research/{run_id}/charts/{file}")
    async def chart(self, run_id: str, file: str, request: Request) -> Response:
        """A chart of a completed run's report, drawn from the stored result (research/charts.py)."""
        run = self._own_run(run_id, request)
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
        if self._own_run(run_id, request) is None:
            return self._missing(run_id, request)
        after = bounded_int(request.headers.get("last-event-id"), high=MAX_EVENT_ID) or 0
        slot = self._streams.slot(self.client(request))  # open streams per client on this replica
        try:
            slot.__enter__()
        except ClientBusyError as exc:
            return exc.answer(self.language(request), self._serve.retry_after_s)
        return event_stream(self._stream(run_id, after, slot.__exit__))

    async def _stream(self, run_id: str, after: int, done: Callable[[], None]) -> AsyncIterator[bytes]:
        try:
            async for frame in self._frames(run_id, after):
                yield frame
        finally:
            done()

    async def _frames(self, run_id: str, after: int) -> AsyncIterator[bytes]:
        idle = 0.0
        while True:
            try:
                batch = await asyncio.to_thread(runs.load_events, self._store, run_id, after)
            except DBAPIError as exc:
                if not unavailable(exc):
                    raise
                batch = []  # the store restarts: the stream waits for it, with keep-alives
            for event in batch:
                after = event.seq
                yield sse_frame(event.type, self._public(event.json), event.seq)
                if event.type in runs.TERMINAL_EVENTS:
                    return
            if not batch:
                with outage_tolerated("checking whether the run ended"):
                    run = await asyncio.to_thread(runs.load_run, self._store, run_id)
                    if run is None or run.status not in runs.UNFINISHED:
                        # It may have finished after the read above: its last events (the terminal one is
                        # stored with the status) are read once more, then the stream ends.
                        for event in await asyncio.to_thread(runs.load_events, self._store, run_id, after):
                            yield sse_frame(event.type, event.json, event.seq)
                        return
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
    "public_text",
]
