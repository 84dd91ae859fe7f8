"""Serve app ``advisor`` (route_prefix ``/advisor``): the price pass-through advisor over HTTP.

- ``GET /advisor/`` the chat page (plain HTML+JS, Japanese). It holds no data, so it is served
  without a key; every call it makes sends ``Authorization: Bearer <key>`` (the key is typed once
  into the page and kept in the tab's sessionStorage).
- ``POST /advisor/chat`` ``{message | consent, sessionId?, userAttributes?}`` -> Server-Sent Events:
  ``session``, ``detection``, ``mode``, ``consent``, ``tool``, ``file``, ``compressed``, ``delta``,
  ``done`` (``error`` if the turn fails midway). Input errors before the stream are 422 naming the field.
- ``GET /advisor/sessions/{id}`` mode, history and files; ``DELETE`` removes the session and its files.
- ``GET /advisor/sessions/{id}/files/{name}`` a generated file, to the session's owner only; the
  name must be one the session lists (no path ever reaches the store from the request).
- ``POST /advisor/tools/{name}?sessionId=`` one tool on its own (the tool's JSON input as body).
- ``GET /advisor/healthz``.

Sessions live in their session actors (``sessions/actor.py``) written through the store, so any
replica serves any session and a killed actor loses nothing. Sessions belong to the API key that
created them; another key gets 404. Sessions and files older than ``advisor.retention_h`` are
removed by each replica at start and every hour.
"""

# No ``from __future__ import annotations``: Serve's class-based FastAPI views need real annotations.
import asyncio
import json
import logging
import re
import uuid
from collections.abc import AsyncIterator
from typing import Any, Literal

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, field_validator
from ray import serve
from ray.serve import Application

from core.errors import InputError, LLMNotConfiguredError, MagiError, first_line
from core.settings import Settings
from core.validation import printable
from deployments.app_args import settings_from_args
from deployments.security import guard
from deployments.validation import answer_invalid_requests
from sessions.ids import ID_PATTERN, SessionNotFoundError, owner_of_bearer, validate_session_id

log = logging.getLogger(__name__)
APP_NAME = "advisor"
ROUTE_PREFIX = "/advisor"
PURGE_EVERY_S = 3600.0
FILE_NAME = re.compile(r"[A-Za-z0-9_.-]{1,120}")
MEDIA = {
    ".png": "image/png",
    ".pdf": "application/pdf",
    ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
}

api = FastAPI(
    title="MAGI price pass-through advisor", description="価格転嫁アドバイザー: chat, tools, sessions, files."
)
GUARD = guard(api, open_paths=("/",))


answer_invalid_requests(api)


class ChatBody(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    message: str | None = Field(None, description="The user's message (omit when answering a consent question).")
    consent: Literal["accept", "refuse"] | None = Field(None, description="Answer to a pending mode change.")
    session_id: str | None = Field(None, alias="sessionId", description="Session id; omitted: a new session.")
    user_attributes: dict[str, str] | None = Field(None, alias="userAttributes", description="業種, 企業規模 ...")

    @field_validator("session_id")
    @classmethod
    def _session_id(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            return validate_session_id(value)
        except MagiError as exc:
            raise ValueError(str(exc)) from exc


def _error(status: int, message: str, field: str | None = None) -> JSONResponse:
    body: dict[str, Any] = {"error": message}
    if field:
        body["detail"] = [{"loc": ["body", field], "msg": message, "type": "value_error"}]
    return JSONResponse(body, status_code=status)


def _sse(event: dict[str, Any]) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event, ensure_ascii=False, default=str)}\n\n".encode()


def file_href(session_id: str, name: str) -> str:
    return f"{ROUTE_PREFIX}/sessions/{session_id}/files/{name}"


def _with_href(session_id: str, event: dict[str, Any]) -> dict[str, Any]:
    if event["type"] == "file":
        f = dict(event["file"])
        f["href"] = file_href(session_id, f["name"])
        return {**event, "file": f}
    if event["type"] == "done" and event.get("files"):
        return {**event, "files": [{**f, "href": file_href(session_id, f["name"])} for f in event["files"]]}
    return event


@serve.deployment(
    name="AdvisorService",
    num_replicas=1,
    ray_actor_options={"num_cpus": 0},
    max_ongoing_requests=64,
    graceful_shutdown_wait_loop_s=0.5,
    graceful_shutdown_timeout_s=2,
)
@serve.ingress(api)
class AdvisorService:
    def __init__(self, settings: Settings) -> None:
        from advisor.options import session_policy
        from advisor.settings import AdvisorSettings
        from core.resources import data_path
        from core.runtime import RayRuntime
        from core.storage import open_artifacts
        from core.store import open_store
        from sessions.gateway import ActorSessions
        from sessions.store import SessionRepository

        GUARD.configure(settings)
        self._settings = settings
        self._section = AdvisorSettings.of(settings)
        self._policy = session_policy(settings)
        self._keys = bool(settings.api_keys)
        self._sessions = ActorSessions(RayRuntime(), settings, self._policy, self._section.session_idle_s)
        self._repo = SessionRepository(open_store(settings))
        self._artifacts = open_artifacts(settings)
        self._page = data_path("advisor", "chat.html").read_text(encoding="utf-8")
        self._orchestrator: Any = None
        self._purger = asyncio.get_event_loop().create_task(self._purge_forever())

    async def _purge_forever(self) -> None:
        from advisor.retention import purge

        while True:
            try:
                report = await asyncio.to_thread(purge, self._settings)
                if report.sessions or report.files:
                    log.info("retention: removed %d sessions, %d files", len(report.sessions), report.files)
            except Exception as exc:  # a failed purge is retried next hour; serving goes on
                log.warning("retention purge failed: %s", first_line(exc))
            await asyncio.sleep(PURGE_EVERY_S)

    def _owner(self, request: Request) -> str:
        return owner_of_bearer(request.headers.get("authorization"), self._keys)

    def _llm_orchestrator(self) -> Any:
        if self._orchestrator is None:
            from advisor.orchestrator import Orchestrator

            self._orchestrator = Orchestrator(self._settings, self._sessions)
        return self._orchestrator

    def _state(self, session_id: str, owner: str) -> Any:
        from sessions.store import read_session

        return read_session(self._repo, session_id, owner, self._policy)

    @api.get("/healthz")
    async def healthz(self) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    @api.get("/")
    async def page(self) -> HTMLResponse:
        return HTMLResponse(self._page, headers={"cache-control": "no-store", "x-content-type-options": "nosniff"})

    @api.post("/chat")
    async def chat(self, body: ChatBody, request: Request) -> Response:
        if (body.message is None) == (body.consent is None):
            return _error(422, "invalid request: give either message or consent (accept/refuse)", "message")
        try:
            orchestrator = self._llm_orchestrator()
        except LLMNotConfiguredError as exc:
            return _error(503, first_line(exc))
        session_id = body.session_id or f"adv-{uuid.uuid4().hex[:16]}"
        owner = self._owner(request)
        events = orchestrator.turn(session_id, owner, body.message, body.consent, body.user_attributes)
        try:
            first = await events.__anext__()
        except InputError as exc:
            field = "consent" if body.consent else "message"
            return _error(422, f"invalid request: {field}: {printable(first_line(exc))}", field)
        except SessionNotFoundError:
            return _error(404, f"no session {session_id!r} for this client; omit sessionId to start one")

        async def stream() -> AsyncIterator[bytes]:
            yield _sse({"type": "session", "sessionId": session_id})
            yield _sse(_with_href(session_id, first))
            try:
                async for event in events:
                    yield _sse(_with_href(session_id, event))
            except Exception as exc:
                log.exception("advisor turn failed (session %s)", session_id)
                yield _sse({"type": "error", "message": printable(first_line(exc))})

        return StreamingResponse(stream(), media_type="text/event-stream", headers={"cache-control": "no-store"})

    @api.get("/sessions/{session_id}")
    async def session(self, session_id: str, request: Request) -> JSONResponse:
        if not ID_PATTERN.fullmatch(session_id):
            return _error(422, "invalid request: session_id: not a session id", "session_id")
        try:
            state = await asyncio.to_thread(self._state, session_id, self._owner(request))
        except SessionNotFoundError:
            return _error(404, f"no session {printable(session_id)!r} for this client")
        files = [{**f, "href": file_href(session_id, f["name"])} for f in state.attributes.get("files", [])]
        return JSONResponse(
            {
                "sessionId": session_id,
                "mode": state.mode,
                "pending": (state.attributes.get("pending") or {}).get("to"),
                "history": [e.model_dump(mode="json", by_alias=True) for e in state.history],
                "files": files,
                "negotiation": state.attributes.get("negotiation", []),
                "updatedAt": state.updated_at.isoformat(),
            }
        )

    @api.delete("/sessions/{session_id}")
    async def delete(self, session_id: str, request: Request) -> JSONResponse:
        from advisor.retention import delete_session_files

        if not ID_PATTERN.fullmatch(session_id):
            return _error(422, "invalid request: session_id: not a session id", "session_id")
        try:
            await asyncio.to_thread(self._state, session_id, self._owner(request))
        except SessionNotFoundError:
            return _error(404, f"no session {printable(session_id)!r} for this client")
        removed = await asyncio.to_thread(delete_session_files, self._settings, session_id)
        await asyncio.to_thread(self._repo.delete, session_id)
        return JSONResponse({"deleted": session_id, "files": removed})

    @api.get("/sessions/{session_id}/files/{name}")
    async def file(self, session_id: str, name: str, request: Request) -> Response:
        if not ID_PATTERN.fullmatch(session_id) or not FILE_NAME.fullmatch(name) or name.startswith("."):
            return _error(404, "no such file")
        try:
            state = await asyncio.to_thread(self._state, session_id, self._owner(request))
        except SessionNotFoundError:
            return _error(404, "no such file")
        key = f"advisor/{session_id}/{name}"
        if key not in state.generated_files or not await asyncio.to_thread(self._artifacts.exists, key):
            return _error(404, "no such file")
        data = await asyncio.to_thread(self._artifacts.get_bytes, key)
        suffix = name[name.rfind(".") :].lower()
        disposition = "inline" if suffix == ".png" else f'attachment; filename="{name}"'
        return Response(
            data,
            media_type=MEDIA.get(suffix, "application/octet-stream"),
            headers={
                "content-disposition": disposition,
                "x-content-type-options": "nosniff",
                "cache-control": "private",
            },
        )

    @api.post("/tools/{name}")
    async def tool(self, name: str, request: Request, sessionId: str | None = None) -> JSONResponse:
        from advisor.conversation import Begin, Commit
        from advisor.tools import REGISTRY, call_tool, dump
        from advisor.tools.base import ToolContext
        from core.llm.factory import make_llm

        if name not in REGISTRY:
            return _error(404, f"no tool {printable(name)!r}; the tools are {', '.join(REGISTRY)}")
        try:
            session_id = validate_session_id(sessionId, "sessionId") if sessionId else f"tool-{uuid.uuid4().hex[:16]}"
        except InputError as exc:
            return _error(422, f"invalid request: {first_line(exc)}", "sessionId")
        try:
            raw = json.loads(await request.body())
        except ValueError:
            return _error(422, "invalid request: the body is not JSON; send the tool's input as a JSON object", "body")
        owner = self._owner(request)
        try:
            state = await self._sessions.update(session_id, owner, Begin())
        except SessionNotFoundError:
            return _error(404, f"no session {session_id!r} for this client")
        ctx = ToolContext(
            self._settings,
            session_id=session_id,
            llm=make_llm(self._settings),
            earlier=list(state.attributes.get("tool_results", [])),
            negotiation_rounds=list(state.attributes.get("negotiation", [])),
        )
        try:
            result = dump(await call_tool(name, raw, ctx))
        except InputError as exc:
            return _error(422, f"invalid request: {printable(first_line(exc))}", "body")
        except LLMNotConfiguredError as exc:
            return _error(503, first_line(exc))
        files = result.get("files") or []
        record = {"tool": name, "input": raw, "output": result}
        await self._sessions.update(session_id, owner, Commit([], self._policy, files=files, tool_results=[record]))
        for f in files:
            f["href"] = file_href(session_id, f["name"])
        return JSONResponse({"sessionId": session_id, "output": result})


def build_app(settings: Settings) -> Application:
    """The ``advisor`` Serve application for these settings (their store holds the sessions)."""
    application: Application = AdvisorService.bind(settings)  # type: ignore[attr-defined]
    return application


def app(args: dict[str, Any]) -> Application:
    """Application builder for ``serve.yaml`` (``import_path: deployments.advisor:app``)."""
    return build_app(settings_from_args(args))


__all__ = ["APP_NAME", "GUARD", "ROUTE_PREFIX", "AdvisorService", "ChatBody", "app", "build_app", "file_href"]
