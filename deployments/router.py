"""Serve app ``router`` (route_prefix ``/router``): the Engineer Cafe router over HTTP.

- ``POST /router/route`` ``{query, sessionId, threshold?}`` -> the spec's RouteResult (camelCase);
  ``threshold`` and any other option of the router section apply to this query only.
- ``POST /router/ask`` (same body) -> ``{route, answer, answered, answeredBy}``: MemoryAgent
  and TimeAgent answer themselves; GeneralKnowledgeAgent answers through the LLM layer when an LLM is
  configured; otherwise the answer says which agent would answer and that none is available here.
  One client (a key, or an address without keys) has at most ``serve.client_in_flight`` asks running
  on a replica (429 beyond).
- ``GET /router/sessions/{id}`` -> the session's history (404 when missing, expired or another client's).
- ``GET /router/`` the café chat page (deployments/pages.py), with a staff view of each routing.
- ``GET /router/healthz``; ``/router/docs`` (OpenAPI).

Sessions are virtual actors hosted by this app's replicas (``sessions/gateway.py``): no process per
session; every turn is written through the store before the answer, so any replica serves any
session and a replica restart loses nothing. A client names its session in the
``serve_multiplexed_model_id`` header (deployments/affinity.py) to reach the replica already hosting
it. Routing runs in the replica (rules and dictionary loaded once per replica). A client holds at
most ``sessions.max_per_client`` live sessions (429 beyond). Sessions are bound to the API key that
created them (deployments/security.py checks the key first): another key gets 404, never 403, so it
cannot learn which ids exist. Without API keys the service has one client.
Malformed bodies and bad ids are 422 naming the field; a query over ``router.max_query_chars`` is 413.
"""

# No ``from __future__ import annotations``: Serve's class-based FastAPI views need real annotations.
import asyncio
import logging
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, field_validator
from ray.serve import Application
from sqlalchemy.exc import DBAPIError

from core.errors import ConfigError, InputError, MagiError, first_line
from core.events import LogSink
from core.settings import Settings
from core.store import unavailable
from deployments.affinity import affinity_options
from deployments.answers import error_answer, invalid_option
from deployments.base import AppService, bind, builder, http_api, service
from deployments.readiness import Check, sessions_check, store_check
from deployments.security import ClientBusyError, InFlightLimit, too_many
from deployments.settings import ServeSettings
from deployments.validation import field_check
from router.answers import unavailable_answer
from router.conversation import SESSION_NAMESPACE, Reply, Turn, TurnOutcome, check_query, shared_router
from router.events import RouteDecided
from router.metrics import count_route
from router.settings import ROUTER_OPTIONS, RouterSettings
from sessions.gateway import COMMIT_STORE_WAIT_S, SessionHost
from sessions.ids import ID_PATTERN, SessionNotFoundError, TooManySessionsError, session_key, validate_session_id
from sessions.settings import SessionsSettings
from sessions.store import SessionRepository

log = logging.getLogger(__name__)
DECISIONS = LogSink(logging.getLogger("router.decisions"))  # one JSON line per routed question (router.decision_log)
APP_NAME = "router"
ROUTE_PREFIX = "/router"

api = http_api(
    "MAGI Engineer Cafe router",
    "Routes a visitor's question to the agent that should answer it; sessions carry context.",
    pages={"/": "cafe.html"},
)


class _RouteFields(BaseModel):
    """The spec's RouterInput, plus every router option (``ROUTER_OPTIONS``)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)

    query: str = Field(description="The visitor's question, in Japanese or English.")
    session_id: str = Field(alias="sessionId", description="Session id: 1-128 of A-Z a-z 0-9 _ - . (first alnum).")

    @field_validator("session_id")
    @classmethod
    def _session_id(cls, value: str) -> str:
        return field_check(validate_session_id, value)


class RouteBody(ROUTER_OPTIONS.body(_RouteFields, "RouteBody")):  # type: ignore[misc]  # options from the section
    pass


def _not_found(session_id: str) -> JSONResponse:
    return error_answer(404, f"no session {session_id!r} for this client; POST /router/route to start one")


@service(api, name="RouterService", max_ongoing_requests=256)
class RouterService(AppService):
    def __init__(self, settings: Settings) -> None:
        from core.store import open_store

        super().__init__(settings)
        self._serve = ServeSettings.of(settings)
        self._in_flight = InFlightLimit(self._serve.client_in_flight)  # asks (they may call the model) per client
        self._section = RouterSettings.of(settings)
        self._policy = self._section.session_policy()
        store = open_store(settings)
        self._sessions = SessionHost.bounded(
            SessionRepository(store), self._policy, SESSION_NAMESPACE, SessionsSettings.of(settings)
        )
        self._passivation = asyncio.get_event_loop().create_task(self._sessions.passivate_forever())
        shared_router(self._section.confidence_threshold).route("warm up")  # rules and tokenizer loaded now
        self.checks = [
            store_check(store),
            Check("rules", self._rules_loaded),
            sessions_check(lambda: len(self._sessions), lambda: self._passivation),
        ]

    async def _rules_loaded(self) -> str:
        """The routing rules answer (loaded at start, shared by the requests)."""
        result = shared_router(self._section.confidence_threshold).route("warm up")
        return f"loaded (a test query goes to {result.agent})"

    def _query(self, body: RouteBody) -> str | JSONResponse:
        if len(body.query) > self._section.max_query_chars:
            return error_answer(
                413, f"query has {len(body.query)} characters; keep it under {self._section.max_query_chars}"
            )
        try:
            return check_query(body.query, self._section.max_query_chars)
        except InputError as exc:
            return error_answer(422, f"invalid request: query: {first_line(exc)}", loc=("body", "query"))

    async def _turn(
        self, session_id: str, owner: str, turn: Turn | Reply, client: str, store_wait_s: float = 0.0
    ) -> Any:
        """The turn in the session hosted under its key (sessions.ids.session_key): the client's own id,
        in the router's own namespace, never a name another client or system shares."""
        key = session_key(SESSION_NAMESPACE, owner, session_id)
        return await self._sessions.update(key, owner, turn, client, store_wait_s=store_wait_s)

    async def _routed(self, body: RouteBody, request: Request, answer: bool) -> TurnOutcome | JSONResponse:
        query = self._query(body)
        if isinstance(query, JSONResponse):
            return query
        given = ROUTER_OPTIONS.from_body(body)
        try:
            section = ROUTER_OPTIONS.section(RouterSettings, self.settings, given) if given.values else self._section
        except ConfigError as exc:
            return invalid_option(exc)
        turn = Turn(query, section.confidence_threshold, self._policy, answer=answer)
        owner = self.caller(request)
        try:
            outcome: TurnOutcome = await self._turn(body.session_id, owner, turn, self.client(request))
        except TooManySessionsError as exc:
            response: JSONResponse = too_many(first_line(exc), self._serve.retry_after_s)
            return response
        except SessionNotFoundError:
            return _not_found(body.session_id)
        except DBAPIError as exc:
            if unavailable(exc):
                raise  # the store restarts: a 503 (the turn was not kept), not an answer that forgets it
            log.error("[RouterAgent] Failed to get previous request type: %s", first_line(exc))
            outcome = TurnOutcome.of(shared_router(section.confidence_threshold).route(query), None, query)
        except Exception as exc:  # the spec: a memory failure leaves the request type as found, and goes on
            log.error("[RouterAgent] Failed to get previous request type: %s", first_line(exc))
            outcome = TurnOutcome.of(shared_router(section.confidence_threshold).route(query), None, query)
        count_route(outcome.result)
        if self._section.decision_log and DECISIONS.enabled:
            DECISIONS.emit(RouteDecided.of(outcome.result, body.session_id))
        return outcome

    @api.post("/route")
    async def route(self, body: RouteBody, request: Request) -> Response:
        outcome = await self._routed(body, request, answer=False)
        if isinstance(outcome, JSONResponse):
            return outcome
        return Response(outcome.result_json, media_type="application/json")

    @api.post("/ask")
    async def ask(self, body: RouteBody, request: Request) -> JSONResponse:
        try:
            with self._in_flight.slot(self.client(request)):  # an ask may wait on the model
                return await self._ask(body, request)
        except ClientBusyError as exc:
            busy: JSONResponse = exc.answer(self.language(request), self._serve.retry_after_s)
            return busy

    async def _ask(self, body: RouteBody, request: Request) -> JSONResponse:
        from router.general import general_answer, llm_configured

        outcome = await self._routed(body, request, answer=True)
        if isinstance(outcome, JSONResponse):
            return outcome
        result = outcome.result
        answer, answered = outcome.answer, outcome.answer is not None
        configured, failed = llm_configured(self.settings.llm), False
        if not answered and result.agent == "GeneralKnowledgeAgent" and configured:
            try:
                answer = await general_answer(
                    self.settings.llm,
                    outcome.query,
                    list(outcome.context),
                    result.language,
                    RouterSettings.of(self.settings).official_site,
                )
            except MagiError as exc:
                log.warning("GeneralKnowledgeAgent could not answer: %s", first_line(exc))
                answer, failed = None, True
            answered = answer is not None
            if answer is not None:
                reply = Reply(answer, result.language, result.agent, self._policy)
                await self._turn(
                    body.session_id, self.caller(request), reply, self.client(request), COMMIT_STORE_WAIT_S
                )
        if answer is None:
            answer = unavailable_answer(
                result.agent,
                result.language,
                category=result.category,
                request_type=result.request_type,
                llm_configured=configured,
                llm_failed=failed,
                official_site=RouterSettings.of(self.settings).official_site,
            )
        return JSONResponse(
            {
                "route": result.model_dump(mode="json", by_alias=True),
                "answer": answer,
                "answered": answered,
                "answeredBy": result.agent if answered else None,
            }
        )

    @api.get("/sessions/{session_id}")
    async def session(self, session_id: str, request: Request) -> JSONResponse:
        if not ID_PATTERN.fullmatch(session_id):
            message = "session_id: not a session id (1-128 of A-Z a-z 0-9 _ - ., starting with a letter or digit)"
            return error_answer(422, f"invalid request: {message}", loc=("path", "session_id"))
        owner = self.caller(request)
        key = session_key(SESSION_NAMESPACE, owner, session_id)
        try:
            state = await self._sessions.read(key, owner)
        except SessionNotFoundError:
            return _not_found(session_id)
        shown = state.model_dump(mode="json", by_alias=True, exclude={"owner", "revision", "history_from"})
        return JSONResponse({**shown, "sessionId": session_id})


def build_app(settings: Settings) -> Application:
    """The ``router`` Serve application for these settings (their store holds the sessions)."""
    return bind(RouterService, settings, num_replicas=RouterSettings.of(settings).replicas, **affinity_options())


app = builder(build_app)

__all__ = ["APP_NAME", "ROUTE_PREFIX", "RouteBody", "RouterService", "api", "app", "build_app"]
