"""Serve app ``critic`` (route prefix ``/critic``): evaluate business ideas over HTTP.

- ``POST /critic/evaluate`` ``{ideas: [BusinessIdea], weights?: "60:40", samples?, timeout?,
  industry?, noCache?, marketWeight?, synergyWeight? ...}`` (every HTTP option of the critic
  section) -> ``200`` CriticOutput (camelCase, as ``magi critic --format json``).
  Bad fields or options: 422 naming the field; no idea evaluable: 502 with each idea's error;
  no LLM configured: 503.
- ``POST /critic/evaluate/stream`` (same body) -> ``text/event-stream``: ``evaluationStarted``, one
  ``ideaJudged`` per idea as it finishes, ``evaluationCompleted`` (critic/events.py), then ``result``
  (the CriticOutput) or ``error``.
- ``GET /critic/`` the critic page (deployments/pages.py): ideas in, progress per idea, the ranking.
- ``GET /critic/evaluations?limit=20&cursor=`` the caller's past runs (owned by the API key the guard
  accepted), newest first: ``{items: [{id, createdAt, title, outcome, summary}], nextCursor}``;
  ``GET /critic/evaluations/{id}`` one reopened: ``{record, result}`` (``result`` the CriticOutput as
  answered). Another key's run is 404, like one that does not exist.
- ``GET /critic/healthz`` -> one part each for the store, the LLM and the warm workers; 503 when one
  is not ready (open without an API key).

Callers are checked first (deployments/security.py: API keys, body cap); one client (a key, or an
address without keys) has at most ``serve.client_in_flight`` evaluations running on a replica (429
beyond), and an evaluation whose client left is cancelled with its model calls. The replica keeps one
WorkerPool of ``critic.max_workers`` worker actors, shared by the requests it serves, so at most
that many ideas are judged at once and no request pays for starting them again.
"""

# No ``from __future__ import annotations``: Serve's class-based FastAPI views need real annotations.
import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from fastapi import Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict

from core.errors import ConfigError, LLMNotConfiguredError, MagiError, first_line
from core.events import CallbackSink, Event, EventSink
from core.history import DEFAULT_PAGE, MAX_PAGE
from core.settings import Settings
from critic.errors import CriticError
from critic.models import CriticInput, CriticOutput, IdeaList
from critic.settings import CRITIC_OPTIONS, CriticSettings
from critic.worker import ROLE as CRITIC_ROLE
from deployments.answers import (
    error_answer,
    event_stream,
    failure_text,
    invalid_option,
    no_llm,
    progress_frames,
    without_server_paths,
)
from deployments.base import AppService, bind, builder, http_api, service
from deployments.history import page_answer, record_answer
from deployments.readiness import actors_check, llm_check, store_check
from deployments.security import ClientBusyError, InFlightLimit
from deployments.settings import ServeSettings

if TYPE_CHECKING:
    from ray.serve import Application

log = logging.getLogger(__name__)
APP_NAME = "critic"
ROUTE_PREFIX = "/critic"

api = http_api(
    "MAGI critic", "Business ideas scored on market size and Mitsubishi Estate synergy.", pages={"/": "critic.html"}
)


class _CriticFields(BaseModel):
    """The body of ``POST /critic/evaluate``: the ideas, plus every critic option (``CRITIC_OPTIONS``)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)  # "samples": "3" is no 3

    ideas: IdeaList


class CriticRequest(CRITIC_OPTIONS.body(_CriticFields, "CriticRequest")):  # type: ignore[misc]  # from the section
    pass


# The worker actors wait on the LLM; so does the replica (zero CPUs of its own).
@service(api, name="CriticService", max_ongoing_requests=20)
class CriticService(AppService):
    def __init__(self, settings: Settings) -> None:
        import critic.history  # noqa: F401  (its table is created when the store opens)
        from core.runtime import RayRuntime
        from core.store import open_store
        from critic.engine import WorkerPool

        super().__init__(settings)
        self._store = open_store(settings)
        self._runtime = RayRuntime()
        self._pool = WorkerPool(self._runtime, settings.llm, CriticSettings.of(settings).max_workers)
        self._serve = ServeSettings.of(settings)
        self._in_flight = InFlightLimit(self._serve.client_in_flight)  # evaluations running per client
        self.checks = [
            store_check(self._store),
            llm_check(settings.llm, "POST /critic/evaluate", (CRITIC_ROLE,)),
            actors_check("workers", lambda: self._pool.handles),
        ]

    def _accepted(self, body: CriticRequest) -> Settings | JSONResponse:
        """The settings of this request, or the answer refusing it (422; 503 without an LLM)."""
        from critic.engine import preflight

        try:
            settings = CRITIC_OPTIONS.apply(self.settings, CRITIC_OPTIONS.from_body(body))
            preflight(settings)
        except LLMNotConfiguredError:
            return no_llm()
        except ConfigError as exc:
            return invalid_option(exc)
        return settings

    async def _evaluate(
        self, body: CriticRequest, settings: Settings, owner: str, events: EventSink | None = None
    ) -> CriticOutput:
        """The run's answer, kept for ``owner`` before it is returned."""
        from critic.engine import evaluate_ideas
        from critic.history import remember

        ideas = CriticInput(ideas=body.ideas)
        out = await evaluate_ideas(ideas, settings, self._runtime, store=self._store, pool=self._pool, events=events)
        await asyncio.to_thread(remember, self._store, owner, out)
        return out

    @api.post("/evaluate")
    async def evaluate(self, body: CriticRequest, request: Request) -> JSONResponse:
        settings = self._accepted(body)
        if isinstance(settings, JSONResponse):
            return settings
        try:
            with self._in_flight.slot(self.client(request)):
                out = await self._evaluate(body, settings, self.caller(request))
        except ClientBusyError as exc:
            busy: JSONResponse = exc.answer(self.language(request), self._serve.retry_after_s)
            return busy
        except CriticError as exc:
            failures = {k: without_server_paths(v) for k, v in exc.failures.items()}
            return error_answer(502, "no idea could be evaluated; see failures", failures=failures)
        except MagiError as exc:  # not the caller's fault: said without a traceback or a server path
            log.warning("critic request failed: %s", first_line(exc))
            return error_answer(503, failure_text(exc))
        return JSONResponse(out.model_dump(mode="json", by_alias=True))

    @api.post("/evaluate/stream")
    async def evaluate_stream(self, body: CriticRequest, request: Request) -> Any:
        """The same evaluation as Server-Sent Events: progress idea by idea, then the ``result``."""
        settings = self._accepted(body)
        if isinstance(settings, JSONResponse):
            return settings
        owner = self.caller(request)
        slot = self._in_flight.slot(self.client(request))
        try:
            slot.__enter__()
        except ClientBusyError as exc:
            return exc.answer(self.language(request), self._serve.retry_after_s)

        async def work(report: Callable[[Event], None]) -> dict[str, Any]:
            out = await self._evaluate(body, settings, owner, CallbackSink(report))
            return out.model_dump(mode="json", by_alias=True)

        async def frames() -> AsyncIterator[bytes]:
            try:
                async for frame in progress_frames(work):
                    yield frame
            finally:  # also when the client leaves: progress_frames cancels the work first
                slot.__exit__()

        return event_stream(frames())

    @api.get("/evaluations")
    async def evaluations(
        self,
        request: Request,
        limit: int = Query(DEFAULT_PAGE, ge=1, le=MAX_PAGE, description="Runs per page."),
        cursor: str | None = Query(None, description="nextCursor of the page before; omit for the newest."),
    ) -> JSONResponse:
        """The caller's past evaluation runs, newest first."""
        from critic.history import runs

        return await page_answer(runs(self._store), self.caller(request), limit, cursor)

    @api.get("/evaluations/{evaluation_id}")
    async def evaluation(self, evaluation_id: str, request: Request) -> JSONResponse:
        """One of the caller's past evaluation runs, as it was answered."""
        from critic.history import runs

        return await record_answer(runs(self._store), self.caller(request), evaluation_id, "evaluation")


def build_app(settings: Settings) -> "Application":
    """The ``critic`` Serve application: ``critic.replicas`` replicas, each with its warm worker pool."""
    return bind(CriticService, settings, num_replicas=CriticSettings.of(settings).replicas)


app = builder(build_app)

__all__ = ["APP_NAME", "ROUTE_PREFIX", "CriticRequest", "CriticService", "api", "app", "build_app"]
