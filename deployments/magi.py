"""Serve app ``magi`` (route prefix ``/magi``): the council over HTTP.

- ``POST /magi/ask`` ``{prompt, rounds?, threshold?, quorum?, timeout?, weighted?, anonymous?,
  shufflePeers?, earlyStop?, seed?, runs?, ...}`` (every HTTP option of the council's settings
  section, camelCase) -> 200 with the JSON of ``magi ask --format json`` (``decision``,
  ``exitCode``, ``votes`` ...; a RunsReport when ``runs`` > 1). A bad body is 422, no LLM 503.
- ``POST /magi/ask/stream`` (same body) -> ``text/event-stream``: ``phase``/``sage``/``decided``
  progress events as the deliberation goes (magi/events.py), then one ``result`` event (or ``error``).
- ``GET /magi/`` the council page (deployments/pages.py): ask, watch the three sages answer live,
  read the decision, copy it as Markdown or JSON.
- ``GET /magi/decisions?limit=20&cursor=`` the caller's past decisions (owned by the API key the guard
  accepted), newest first: ``{items: [{id, createdAt, title, outcome, summary}], nextCursor}``;
  ``GET /magi/decisions/{id}`` one of them reopened: ``{record, result}`` (``result`` as ``/ask``
  answered). Another key's decision is 404, like one that does not exist.
- ``GET /magi/healthz``: ready when the store answers and an LLM is configured (deployments/base.py:
  the skeleton, guard and body cap included).

Every answered ask is kept for its caller (magi/history.py) before the answer is sent.
"""

# No ``from __future__ import annotations``: Serve's class-based FastAPI views need real annotations.
import asyncio
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from fastapi import Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from core.errors import ConfigError, InputError, LLMNotConfiguredError
from core.history import DEFAULT_PAGE, MAX_PAGE
from core.settings import Settings
from deployments.answers import event_stream, invalid_option, no_llm, progress_frames
from deployments.base import AppService, bind, builder, http_api, service
from deployments.history import page_answer, record_answer
from deployments.readiness import llm_check, store_check
from deployments.security import ClientBusyError, InFlightLimit
from deployments.settings import ServeSettings
from magi.events import EventCallback
from magi.models import SageName
from magi.settings import COUNCIL_OPTIONS

if TYPE_CHECKING:
    from ray.serve import Application

log = logging.getLogger(__name__)
APP_NAME = "magi"
ROUTE_PREFIX = "/magi"

api = http_api("MAGI council", "Three sages decide: Thinking, Debate, Voting.", pages={"/": "council.html"})


class _AskFields(BaseModel):
    """The body of ``POST /magi/ask``: the prompt, plus every council option (``COUNCIL_OPTIONS``)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)

    prompt: str = Field(description="The request the council decides on.")


class AskRequest(COUNCIL_OPTIONS.body(_AskFields, "AskRequest")):  # type: ignore[misc]  # fields from the section
    pass


# The sages are resident actors shared by every replica (magi/seats.py); the replica waits on them.
@service(api, name="MagiCouncil", max_ongoing_requests=32)
class MagiService(AppService):
    def __init__(self, settings: Settings) -> None:
        import magi.history  # noqa: F401  (its table is created when the store opens)
        from core.store import open_store
        from magi.plugins import load_plugins, overrides_for
        from magi.settings import CouncilSettings

        super().__init__(settings)
        self._store = open_store(settings)
        self._serve = ServeSettings.of(settings)
        self._in_flight = InFlightLimit(self._serve.client_in_flight)  # asks running per client
        self._overrides = overrides_for(load_plugins(CouncilSettings.of(settings)))
        self.checks = [
            store_check(self._store),
            llm_check(settings.llm, "POST /magi/ask", tuple(sage.role for sage in SageName)),
        ]

    def _prepare(self, body: AskRequest) -> tuple[str, Settings]:
        from magi.api import check_llm
        from magi.question import clean_question
        from magi.settings import CouncilSettings

        if body.runs is not None and body.runs > self._serve.max_runs:
            raise InputError(f"runs: at most {self._serve.max_runs} per request over HTTP (serve.max_runs)")
        settings = COUNCIL_OPTIONS.apply(self.settings, COUNCIL_OPTIONS.from_body(body))
        prompt = clean_question(body.prompt, max_chars=CouncilSettings.of(settings).max_prompt_chars, where="prompt")
        check_llm(settings.llm, "POST /magi/ask")
        return prompt, settings

    async def _run(
        self, prompt: str, settings: Settings, owner: str, on_event: EventCallback | None = None
    ) -> dict[str, Any]:
        """The council's answer, kept for ``owner`` before it is returned."""
        from core.runtime import RayRuntime
        from magi.api import ask
        from magi.history import remember
        from magi.output import to_json

        runtime = RayRuntime()
        try:
            result = await ask(prompt, settings, runtime, overrides=self._overrides, on_event=on_event)
        finally:
            await runtime.close()
        await asyncio.to_thread(remember, self._store, owner, result)
        return to_json(result)

    def _accepted(self, body: AskRequest) -> tuple[str, Settings] | JSONResponse:
        """The question and its settings, or the answer refusing the request (422; 503 without an LLM)."""
        try:
            return self._prepare(body)
        except LLMNotConfiguredError:
            return no_llm()
        except (ConfigError, InputError) as exc:
            return invalid_option(exc)

    def _busy(self, exc: ClientBusyError, request: Request) -> JSONResponse:
        response: JSONResponse = exc.answer(self.language(request), self._serve.retry_after_s)
        return response

    @api.post("/ask")
    async def ask(self, body: AskRequest, request: Request) -> JSONResponse:
        accepted = self._accepted(body)
        if isinstance(accepted, JSONResponse):
            return accepted
        try:
            with self._in_flight.slot(self.client(request)):
                return JSONResponse(await self._run(*accepted, self.caller(request)))
        except ClientBusyError as exc:
            return self._busy(exc, request)

    @api.post("/ask/stream")
    async def ask_stream(self, body: AskRequest, request: Request) -> Any:
        accepted = self._accepted(body)
        if isinstance(accepted, JSONResponse):
            return accepted
        prompt, settings = accepted
        owner = self.caller(request)
        slot = self._in_flight.slot(self.client(request))
        try:
            slot.__enter__()
        except ClientBusyError as exc:
            return self._busy(exc, request)

        async def frames() -> AsyncIterator[bytes]:
            try:
                async for frame in progress_frames(lambda report: self._run(prompt, settings, owner, on_event=report)):
                    yield frame
            finally:
                slot.__exit__()

        return event_stream(frames())

    @api.get("/decisions")
    async def decisions(
        self,
        request: Request,
        limit: int = Query(DEFAULT_PAGE, ge=1, le=MAX_PAGE, description="Decisions per page."),
        cursor: str | None = Query(None, description="nextCursor of the page before; omit for the newest."),
    ) -> JSONResponse:
        """The caller's past decisions, newest first."""
        from magi.history import decisions

        return await page_answer(decisions(self._store), self.caller(request), limit, cursor)

    @api.get("/decisions/{decision_id}")
    async def decision(self, decision_id: str, request: Request) -> JSONResponse:
        """One of the caller's past decisions, as it was answered."""
        from magi.history import decisions

        return await record_answer(decisions(self._store), self.caller(request), decision_id, "decision")


def build_app(settings: Settings) -> "Application":
    """The ``magi`` Serve application: ``council.replicas`` replicas, sharing the cluster's resident sages."""
    from magi.settings import CouncilSettings

    return bind(MagiService, settings, num_replicas=CouncilSettings.of(settings).replicas)


app = builder(build_app)

__all__ = ["APP_NAME", "ROUTE_PREFIX", "AskRequest", "MagiService", "api", "app", "build_app"]
