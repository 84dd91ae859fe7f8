"""Serve app ``research``: submit a research over HTTP, follow its events (SSE), fetch its result.

- ``POST /research`` ``{topic, agents?, timeout?, provider?, corpus?}`` -> ``202 {runId, status, links}``.
  The run is stored as ``accepted`` before the answer, then runs in this replica's worker thread
  (one run at a time: a run's NLP pool takes the machine's CPUs; later runs wait as ``accepted``).
- ``GET /research/{id}`` -> status (``accepted|running|completed|failed``), error, result when completed.
- ``GET /research/{id}/events`` -> ``text/event-stream`` of every event of the run, in order, read
  from the store (live while the run goes; late clients and ``Last-Event-ID`` get the rest).

Runs and events live in the store (SQLite under ``settings.data_dir``, or ``store_url``), so they survive a replica
restart. A run that was ``accepted``/``running`` when its replica died is not re-run (it may have
been what killed the replica): the next replica marks it ``failed`` ("interrupted by a restart;
resubmit") and ends its event stream with ``researchFailed``. The app runs one replica.
"""

# No ``from __future__ import annotations``: Serve's class-based FastAPI views need real annotations.
import asyncio
import json
import logging
import uuid
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, field_validator
from ray import serve
from ray.serve import Application

from core.errors import MagiError, ResearchError, first_line
from core.settings import Settings, load_settings
from research import runs
from research.engine import preflight, validate_topic

log = logging.getLogger(__name__)
APP_NAME = "research"
ROUTE_PREFIX = "/"  # the app's own paths start with /research
INTERRUPTED = "interrupted by restarts of the research service; resubmit"
MAX_ATTEMPTS = 2  # a run interrupted by a restart runs again, but only so often: it may be the cause
POLL_S = 0.25  # how often an open event stream looks for new events in the store
KEEPALIVE_S = 15.0

api = FastAPI(title="MAGI research", description="Consensus research runs over HTTP.")


class ResearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    topic: str = Field(description="What to research, in Japanese or English.")
    agents: int | None = Field(None, ge=1, le=16, description="Parallel research agents (default 3).")
    iterations: int | None = Field(None, ge=1, le=10, description="Refinement iterations (default 3).")
    timeout: float | None = Field(None, gt=0, le=3600, description="Timeout of one agent in seconds.")
    conflict_threshold: float | None = Field(None, alias="conflictThreshold", ge=0, le=1,
                                             description="Conflict share above which reports are flagged.")
    provider: Literal["local", "ddgs", "searxng"] | None = None
    corpus: str | None = Field(None, description="Folder on the server searched by the local provider.")

    @field_validator("topic")
    @classmethod
    def _topic(cls, topic: str) -> str:
        try:
            return validate_topic(topic)
        except MagiError as exc:
            raise ValueError(str(exc)) from exc


def _error(status: int, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": message, **extra}, status_code=status)


@api.exception_handler(RequestValidationError)
async def _invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
    problems = []
    for err in exc.errors():
        field = ".".join(str(p) for p in err["loc"] if p != "body") or "body"
        problems.append(f"{field}: {err['msg']}")
    detail = [{"loc": list(err["loc"]), "msg": err["msg"], "type": err["type"]} for err in exc.errors()]
    return _error(422, "invalid request: " + "; ".join(problems), detail=detail)


def _links(run_id: str) -> dict[str, str]:
    return {"self": f"/research/{run_id}", "events": f"/research/{run_id}/events"}


def _sse(seq: int, kind: str, data: str) -> bytes:
    return f"id: {seq}\nevent: {kind}\ndata: {data}\n\n".encode()


@serve.deployment(
    name="ResearchService",
    num_replicas=1,
    ray_actor_options={"num_cpus": 0},  # the run's actors take the CPUs; the replica mostly waits
    max_ongoing_requests=100,  # open event streams count as ongoing requests
    graceful_shutdown_wait_loop_s=0.5,
    graceful_shutdown_timeout_s=2,
)
@serve.ingress(api)
class ResearchService:
    def __init__(self, settings: Settings) -> None:
        import ray

        from core.store import open_store

        if not ray.is_initialized():  # pragma: no cover - a replica always runs inside Ray
            raise RuntimeError("the research replica must run inside Ray")
        self._settings = settings
        self._store = open_store(settings)
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="research-run")
        requeued, failed = runs.requeue_unfinished(self._store, MAX_ATTEMPTS, INTERRUPTED)
        if failed:
            log.warning("marked %d run(s) failed after repeated restarts: %s", len(failed), ", ".join(failed))
        for run in requeued:  # accepted work survives a restart: it runs again, in its original order
            log.warning("run %s was interrupted by a restart; running it again", run.run_id)
            try:
                body = ResearchRequest.model_validate(run.request)
                self._worker.submit(self._execute, run.run_id, run.topic, self._settings_for(body))
            except (ValueError, MagiError) as exc:
                runs.finish_failed(self._store, run.run_id, f"cannot run again: {first_line(exc)}")

    def _settings_for(self, body: ResearchRequest) -> Settings:
        """The service's settings with the request's options (validated by the request model)."""
        updates: dict[str, Any] = {}
        if body.agents is not None:
            updates["research_agents"] = body.agents
        if body.iterations is not None:
            updates["research_iterations"] = body.iterations
        if body.conflict_threshold is not None:
            updates["research_conflict_threshold"] = body.conflict_threshold
        if body.timeout is not None:
            updates["research_agent_timeout_s"] = body.timeout
        if body.corpus is not None:
            updates["corpus_dir"] = Path(body.corpus).expanduser().absolute()
        if body.provider is not None or body.corpus is not None:
            updates["search_provider"] = body.provider or "local"
        return self._settings.model_copy(update=updates)

    @api.post("/research", status_code=202)
    async def submit(self, body: ResearchRequest) -> JSONResponse:
        settings = self._settings_for(body)
        try:  # a bad corpus fails now, not in the background; loading a corpus may take a moment
            await asyncio.to_thread(preflight, body.topic, settings)
        except MagiError as exc:
            return _error(400, first_line(exc))
        run_id = uuid.uuid4().hex[:12]
        runs.record_started(self._store, run_id, body.topic, status="accepted",  # stored before answering
                            request=body.model_dump(mode="json", by_alias=True, exclude_none=True))
        self._worker.submit(self._execute, run_id, body.topic, settings)
        return JSONResponse({"runId": run_id, "status": "accepted", "links": _links(run_id)}, status_code=202)

    def _execute(self, run_id: str, topic: str, settings: Settings) -> None:
        """Worker thread: the engine is synchronous and blocks on Ray."""
        from core.runtime import RayRuntime
        from research.engine import run_research

        if not runs.mark_running(self._store, run_id):
            return
        sink = runs.StoreEventSink(self._store, run_id)
        try:
            runtime = RayRuntime()
            try:
                result = run_research(topic, settings, runtime, sink, run_id=run_id)
            finally:
                runtime.close()
        except Exception as exc:
            message = first_line(exc)
            log.warning("run %s failed: %s", run_id, message)
            partial = exc.partial if isinstance(exc, ResearchError) else None
            runs.finish_failed(self._store, run_id, message, sink.terminal, partial=partial)
            return
        assert sink.terminal is not None  # the engine's researchCompleted
        runs.finish_completed(self._store, result, sink.terminal)

    @api.get("/research/{run_id}")
    async def status(self, run_id: str) -> JSONResponse:
        run = runs.load_run(self._store, run_id)
        if run is None:
            return _error(404, f"no research run {run_id!r}; POST /research to start one")
        body: dict[str, Any] = {
            "runId": run.run_id, "topic": run.topic, "status": run.status, "submittedAt": run.started_at,
            "completedAt": run.completed_at, "error": run.error, "links": _links(run_id),
            "result": None, "partial": None,
        }
        if run.result_json:  # the result, or what a failed run produced before failing
            body["result" if run.status == "completed" else "partial"] = json.loads(run.result_json)
        return JSONResponse(body)

    @api.get("/research/{run_id}/events")
    async def events(self, run_id: str, request: Request) -> Any:
        if runs.load_run(self._store, run_id) is None:
            return _error(404, f"no research run {run_id!r}; POST /research to start one")
        last = request.headers.get("last-event-id", "0")
        after = int(last) if last.isdigit() else 0
        return StreamingResponse(self._stream(run_id, after), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    async def _stream(self, run_id: str, after: int) -> AsyncIterator[bytes]:
        idle = 0.0
        while True:
            batch = await asyncio.to_thread(runs.load_events, self._store, run_id, after)
            for event in batch:
                after = event.seq
                yield _sse(event.seq, event.type, event.json)
                if event.type in runs.TERMINAL_EVENTS:
                    return
            if not batch:
                run = await asyncio.to_thread(runs.load_run, self._store, run_id)
                if run is None or run.status not in runs.UNFINISHED:
                    return  # finished, and its terminal event was already sent before Last-Event-ID
                idle += POLL_S
                if idle >= KEEPALIVE_S:
                    idle = 0.0
                    yield b": keepalive\n\n"
            else:
                idle = 0.0
            await asyncio.sleep(POLL_S)


def build_app(settings: Settings) -> Application:
    """The ``research`` Serve application for these settings (their store holds the runs)."""
    application: Application = ResearchService.bind(settings)  # type: ignore[attr-defined]
    return application


def app(args: dict[str, Any]) -> Application:
    """Application builder for ``serve.yaml`` (``import_path: deployments.research:app``).

    ``args`` are settings keys (``data_dir``, ``research_agents``, ...) over ``magi.yaml`` and the
    environment; ``config`` names another settings file.
    """
    args = dict(args or {})
    return build_app(load_settings(args.pop("config", None), **args))
