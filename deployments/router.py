"""Serve app ``router`` (route_prefix ``/router``): the Engineer Cafe router over HTTP.

- ``POST /router/route`` ``{query, sessionId}`` -> the spec's RouteResult (camelCase).
- ``POST /router/ask`` ``{query, sessionId}`` -> ``{route, answer, answered, answeredBy}``: MemoryAgent
  and TimeAgent answer themselves; GeneralKnowledgeAgent answers through the LLM layer when an LLM is
  configured; otherwise the answer says which agent would answer and that none is available here.
- ``GET /router/sessions/{id}`` -> the session's history (404 when missing, expired or another client's).
- ``GET /router/healthz``; ``/router/docs`` (OpenAPI).

Each session lives in its own actor (``sessions/actor.py``), found by id and written through the store,
so any replica serves any session and a replica or actor restart loses nothing. Sessions are bound to
the API key that created them (deployments/security.py checks the key first): another key gets 404,
never 403, so it cannot learn which ids exist. Without API keys the service has one client.
Malformed bodies and bad ids are 422 naming the field; a query over ``router.max_query_chars`` is 413.
"""

# No ``from __future__ import annotations``: Serve's class-based FastAPI views need real annotations.
import asyncio
import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, field_validator
from ray import serve
from ray.serve import Application

from core.errors import InputError, MagiError, first_line
from core.settings import Settings
from core.validation import printable
from deployments.app_args import settings_from_args
from deployments.security import guard
from deployments.validation import answer_invalid_requests
from router.answers import unavailable_answer
from router.conversation import Reply, Turn, TurnOutcome, check_query, shared_router
from router.options import session_policy
from router.settings import RouterSettings
from sessions.actor import SessionActor, SessionHandles, session_call
from sessions.ids import ID_PATTERN, SessionNotFoundError, owner_of_bearer, validate_session_id
from sessions.store import SessionRepository, read_session

log = logging.getLogger(__name__)
APP_NAME = "router"
ROUTE_PREFIX = "/router"

api = FastAPI(
    title="MAGI Engineer Cafe router",
    description="Routes a visitor's question to the agent that should answer it; sessions carry context.",
)
GUARD = guard(api)


answer_invalid_requests(api)


class RouteBody(BaseModel):
    """The spec's RouterInput."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)

    query: str = Field(description="The visitor's question, in Japanese or English.")
    session_id: str = Field(alias="sessionId", description="Session id: 1-128 of A-Z a-z 0-9 _ - . (first alnum).")

    @field_validator("session_id")
    @classmethod
    def _session_id(cls, value: str) -> str:
        try:
            return validate_session_id(value)
        except MagiError as exc:
            raise ValueError(str(exc)) from exc


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def _not_found(session_id: str) -> JSONResponse:
    return _error(404, f"no session {printable(session_id)!r} for this client; POST /router/route to start one")


@serve.deployment(
    name="RouterService",
    num_replicas=1,
    ray_actor_options={"num_cpus": 0},
    max_ongoing_requests=256,
    graceful_shutdown_wait_loop_s=0.5,
    graceful_shutdown_timeout_s=2,
)
@serve.ingress(api)
class RouterService:
    def __init__(self, settings: Settings) -> None:
        from core.runtime import RayRuntime
        from core.store import open_store

        GUARD.configure(settings)
        self._settings = settings
        self._section = RouterSettings.of(settings)
        self._policy = session_policy(settings)
        self._keys = bool(settings.api_keys)
        self._runtime = RayRuntime()
        self._handles = SessionHandles()
        self._repo = SessionRepository(open_store(settings))
        shared_router(self._section.confidence_threshold).route("warm up")  # rules and tokenizer loaded now

    def _owner(self, request: Request) -> str:
        return owner_of_bearer(request.headers.get("authorization"), self._keys)

    def _query(self, body: RouteBody) -> str | JSONResponse:
        if len(body.query) > self._section.max_query_chars:
            return _error(413, f"query has {len(body.query)} characters; keep it under {self._section.max_query_chars}")
        try:
            return check_query(body.query, self._section.max_query_chars)
        except InputError as exc:
            return JSONResponse(
                {
                    "error": f"invalid request: query: {printable(first_line(exc))}",
                    "detail": [{"loc": ["body", "query"], "msg": printable(first_line(exc)), "type": "value_error"}],
                },
                status_code=422,
            )

    async def _turn(self, session_id: str, owner: str, turn: Turn | Reply) -> Any:
        return await session_call(
            self._runtime,
            self._settings,
            session_id,
            self._policy,
            self._section.session_idle_s,
            lambda handle: handle.call(SessionActor.update, owner, turn),
            self._handles,
        )

    async def _routed(self, body: RouteBody, request: Request, answer: bool) -> TurnOutcome | JSONResponse:
        query = self._query(body)
        if isinstance(query, JSONResponse):
            return query
        turn = Turn(query, self._section.confidence_threshold, self._policy, answer=answer)
        try:
            outcome: TurnOutcome = await self._turn(body.session_id, self._owner(request), turn)
            return outcome
        except SessionNotFoundError:
            return _not_found(body.session_id)
        except Exception as exc:  # the spec: a memory failure leaves the request type as found, and goes on
            log.error("[RouterAgent] Failed to get previous request type: %s", first_line(exc))
            return TurnOutcome.of(shared_router(self._section.confidence_threshold).route(query), None, query)

    @api.get("/healthz")
    async def healthz(self) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    @api.post("/route")
    async def route(self, body: RouteBody, request: Request) -> Response:
        outcome = await self._routed(body, request, answer=False)
        if isinstance(outcome, JSONResponse):
            return outcome
        return Response(outcome.result_json, media_type="application/json")

    @api.post("/ask")
    async def ask(self, body: RouteBody, request: Request) -> JSONResponse:
        from router.general import general_answer, llm_configured

        outcome = await self._routed(body, request, answer=True)
        if isinstance(outcome, JSONResponse):
            return outcome
        result = outcome.result
        answer, answered = outcome.answer, outcome.answer is not None
        if not answered and result.agent == "GeneralKnowledgeAgent" and llm_configured(self._settings):
            try:
                answer = await general_answer(self._settings, outcome.query, list(outcome.context))
            except MagiError as exc:
                log.warning("GeneralKnowledgeAgent could not answer: %s", first_line(exc))
                answer = None
            answered = answer is not None
            if answer is not None:
                reply = Reply(answer, result.language, result.agent, self._policy)
                await self._turn(body.session_id, self._owner(request), reply)
        if answer is None:
            answer = unavailable_answer(result.agent, result.language)
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
            return JSONResponse(
                {
                    "error": f"invalid request: {message}",
                    "detail": [{"loc": ["path", "session_id"], "msg": message, "type": "value_error"}],
                },
                status_code=422,
            )
        try:
            state = await asyncio.to_thread(read_session, self._repo, session_id, self._owner(request), self._policy)
        except SessionNotFoundError:
            return _not_found(session_id)
        return JSONResponse(state.model_dump(mode="json", by_alias=True, exclude={"owner", "revision", "history_from"}))


def build_app(settings: Settings) -> Application:
    """The ``router`` Serve application for these settings (their store holds the sessions)."""
    replicas = RouterSettings.of(settings).replicas
    application: Application = RouterService.options(num_replicas=replicas).bind(settings)  # type: ignore[attr-defined]
    return application


def app(args: dict[str, Any]) -> Application:
    """Application builder for ``serve.yaml`` (``import_path: deployments.router:app``); ``args`` are
    settings in ``magi.yaml`` shape over ``magi.yaml`` and the environment, ``config`` another file."""
    return build_app(settings_from_args(args))


__all__ = ["APP_NAME", "GUARD", "ROUTE_PREFIX", "RouteBody", "RouterService", "app", "build_app"]
