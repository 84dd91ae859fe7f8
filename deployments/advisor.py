"""Serve app ``advisor`` (route_prefix ``/advisor``): the price pass-through advisor over HTTP.

- ``GET /advisor/`` the chat page (data/pages/advisor.html: the pages' shared header, labels in
  Japanese or English). It holds no data, so it is served without a key; every call it makes sends
  ``Authorization: Bearer <key>`` (the key is typed once into the page and kept in the tab).
- ``POST /advisor/chat`` ``{message | consent, sessionId?, userAttributes?, threshold?}`` (the
  advisor section's options for this turn) -> Server-Sent Events:
  ``session``, ``detection``, ``mode``, ``consent``, ``tool``, ``file``, ``compressed``, ``delta``,
  ``done`` (``error`` if the turn fails midway). Input errors before the stream are 422 naming the field.
- ``GET /advisor/sessions/{id}`` mode, history and files; ``DELETE`` removes the session and its files.
- ``GET /advisor/sessions/{id}/files/{name}`` a generated file, to the session's owner only; the
  name must be one the session lists (no path ever reaches the store from the request). Names are
  Japanese (価格改定のお願い_2026-11-27.pdf): percent-encoded in the URL, and given to the browser as
  ``filename*`` (RFC 6266) with an ASCII fallback.
- ``POST /advisor/tools/{name}?sessionId=`` one tool on its own (the tool's JSON input as body).
- ``GET /advisor/healthz``: store, LLM, file store and the retention task, one part each.

Sessions are virtual actors hosted by this app's replicas (``sessions/gateway.py``), written through
the store on every change, so any replica serves any session and a killed replica loses nothing; the
page names its session in the ``serve_multiplexed_model_id`` header to reach the replica hosting it
(deployments/affinity.py). A client holds at most ``sessions.max_per_client`` live sessions (429
beyond). Sessions belong to the API key that created them; another key gets 404. Sessions and files
older than ``advisor.retention_h`` are removed by each replica at start and every hour.
"""

# No ``from __future__ import annotations``: Serve's class-based FastAPI views need real annotations.
import asyncio
import logging
import re
import uuid
from collections.abc import AsyncIterator
from typing import Any, Literal
from urllib.parse import quote

from fastapi import Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, field_validator

from advisor.events import AdvisorEvent, FileMade, SessionOpened, TurnDone
from advisor.settings import ADVISOR_OPTIONS, AdvisorSettings
from advisor.settings import LLM_ROLES as ADVISOR_ROLES
from advisor.sources import WebNotConfiguredError
from core.errors import ConfigError, InputError, LLMNotConfiguredError, first_line
from core.events import event_frame
from core.settings import Settings
from deployments.affinity import affinity_options
from deployments.answers import error_answer, event_stream, invalid_option, no_llm, stream_failed
from deployments.base import AppService, bind, builder, http_api, service
from deployments.language import say
from deployments.readiness import Check, llm_check, sessions_check, store_check, task_check
from deployments.security import ClientBusyError, InFlightLimit, too_many
from deployments.settings import ServeSettings
from deployments.validation import field_check
from sessions.ids import (
    ID_PATTERN,
    SessionNotFoundError,
    TooManySessionsError,
    session_key,
    validate_session_id,
)

log = logging.getLogger(__name__)
APP_NAME = "advisor"
ROUTE_PREFIX = "/advisor"
PURGE_EVERY_S = 3600.0
STANDALONE_SESSION = "standalone-tools"  # where a client's tool calls without a sessionId keep their files
FILE_NAME = re.compile(r"[^/\\\x00-\x1f\x7f]{1,120}")  # one name, never a path (the session must list it too)
MEDIA = {
    ".png": "image/png",
    ".pdf": "application/pdf",
    ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
}

api = http_api(
    "MAGI price pass-through advisor",
    "価格転嫁アドバイザー: chat, tools, sessions, files.",
    pages={"/": "advisor.html"},
)


class _ChatFields(BaseModel):
    """The body of ``POST /advisor/chat``: a message or a consent answer, plus every advisor option."""

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
        return field_check(validate_session_id, value)


class ChatBody(ADVISOR_OPTIONS.body(_ChatFields, "ChatBody")):  # type: ignore[misc]  # options from the section
    pass


def file_href(session_id: str, name: str) -> str:
    return f"{ROUTE_PREFIX}/sessions/{session_id}/files/{quote(name, safe='')}"


def disposition(name: str, inline: bool) -> str:
    """``Content-Disposition`` naming the file as the person will save it: UTF-8 ``filename*`` for the
    Japanese name, and an ASCII ``filename`` for clients that read only that."""
    suffix = name[name.rfind(".") :] if "." in name else ""
    fallback = (name.encode("ascii", "ignore").decode().strip("_. ") or "file").replace('"', "")
    if not fallback.endswith(suffix):
        fallback += suffix
    kind = "inline" if inline else "attachment"
    return f"{kind}; filename=\"{fallback}\"; filename*=UTF-8''{quote(name, safe='')}"


def public(value: Any, session_id: str) -> Any:
    """``value`` fit for a caller: every generated file described by its name and ``href`` under the
    caller's own session id; where it is stored (a server path, the storage key) is left out."""
    if isinstance(value, dict):
        if {"key", "name", "url"} <= value.keys():
            kept = {k: v for k, v in value.items() if k not in ("key", "url")}
            return {**kept, "href": file_href(session_id, str(value["name"]))}
        if {"key", "image_url"} <= value.keys():  # generate_chart's own output names its file too
            name = str(value["key"]).rsplit("/", 1)[-1]
            value = {**{k: v for k, v in value.items() if k != "key"}, "image_url": file_href(session_id, name)}
        return {k: public(v, session_id) for k, v in value.items()}
    if isinstance(value, list):
        return [public(v, session_id) for v in value]
    return value


def with_href(session_id: str, event: AdvisorEvent) -> AdvisorEvent:
    """The event with the URL of each file it names, under this app's routes (and no storage path)."""
    if isinstance(event, FileMade):
        return event.model_copy(update={"file": public(event.file, session_id)})
    if isinstance(event, TurnDone) and event.files:
        return event.model_copy(update={"files": public(event.files, session_id)})
    return event


@service(api, name="AdvisorService", max_ongoing_requests=64)
class AdvisorService(AppService):
    def __init__(self, settings: Settings) -> None:
        from advisor.conversation import SESSION_NAMESPACE
        from core.storage import open_artifacts
        from core.store import open_store
        from sessions.gateway import SessionHost
        from sessions.settings import SessionsSettings
        from sessions.store import SessionRepository

        super().__init__(settings)
        self._serve = ServeSettings.of(settings)
        self._in_flight = InFlightLimit(self._serve.client_in_flight)  # turns and tool calls per client
        self._section = AdvisorSettings.of(settings)
        self._policy = self._section.session_policy()
        store = open_store(settings)
        self._sessions = SessionHost.bounded(
            SessionRepository(store), self._policy, SESSION_NAMESPACE, SessionsSettings.of(settings)
        )
        self._passivation = asyncio.get_event_loop().create_task(self._sessions.passivate_forever())
        self._artifacts = open_artifacts(settings)
        self._orchestrator: Any = None
        self._purger = asyncio.get_event_loop().create_task(self._purge_forever())
        self.checks = [
            store_check(store),
            llm_check(settings.llm, "POST /advisor/chat", ADVISOR_ROLES),
            Check("files", self._artifacts_reachable),
            task_check("retention", lambda: self._purger),
            sessions_check(lambda: len(self._sessions), lambda: self._passivation),
        ]

    async def _artifacts_reachable(self) -> str:
        """The file store answers (a listing of the advisor's folder)."""
        await asyncio.to_thread(self._artifacts.exists, "advisor")
        return "reachable"

    async def _purge_forever(self) -> None:
        from advisor.retention import purge

        while True:
            try:
                report = await asyncio.to_thread(purge, self.settings)
                if report.sessions or report.files:
                    log.info("retention: removed %d sessions, %d files", len(report.sessions), report.files)
            except Exception as exc:  # a failed purge is retried next hour; serving goes on
                log.warning("retention purge failed: %s", first_line(exc))
            await asyncio.sleep(PURGE_EVERY_S)

    def _llm_orchestrator(self) -> Any:
        if self._orchestrator is None:
            from advisor.orchestrator import Orchestrator

            self._orchestrator = Orchestrator(self.settings, self._sessions)
        return self._orchestrator

    def _key(self, session_id: str, owner: str) -> str:
        """Where the caller's session ``session_id`` is stored and hosted (sessions.ids.session_key)."""
        from advisor.conversation import SESSION_NAMESPACE

        return session_key(SESSION_NAMESPACE, owner, session_id)

    async def _state(self, session_id: str, owner: str) -> Any:
        return await self._sessions.read(self._key(session_id, owner), owner)

    def _too_many(self, exc: Exception, request: Request) -> JSONResponse:
        if isinstance(exc, ClientBusyError):
            busy: JSONResponse = exc.answer(self.language(request), self._serve.retry_after_s)
            return busy
        response: JSONResponse = too_many(first_line(exc), self._serve.retry_after_s)
        return response

    @api.post("/chat")
    async def chat(self, body: ChatBody, request: Request) -> Response:
        if (body.message is None) == (body.consent is None):
            return error_answer(
                422, "invalid request: give either message or consent (accept/refuse)", loc=("body", "message")
            )
        try:
            orchestrator = self._llm_orchestrator()
        except LLMNotConfiguredError:
            return no_llm()
        try:
            section = ADVISOR_OPTIONS.section(AdvisorSettings, self.settings, ADVISOR_OPTIONS.from_body(body))
        except ConfigError as exc:
            return invalid_option(exc)
        session_id = body.session_id or f"adv-{uuid.uuid4().hex[:16]}"
        owner = self.caller(request)
        try:
            if body.message is not None:
                orchestrator.check_message(body.message)  # a bad message costs no session
            slot = self._in_flight.slot(self.client(request))
            slot.__enter__()
        except InputError as exc:
            return error_answer(422, f"invalid request: message: {first_line(exc)}", loc=("body", "message"))
        except (TooManySessionsError, ClientBusyError) as exc:
            return self._too_many(exc, request)
        events = orchestrator.turn(
            self._key(session_id, owner),
            owner,
            body.message,
            body.consent,
            body.user_attributes,
            section,
            client=self.client(request),
        )
        try:
            first = await events.__anext__()
        except InputError as exc:
            slot.__exit__()
            field = "consent" if body.consent else "message"
            return error_answer(422, f"invalid request: {field}: {first_line(exc)}", loc=("body", field))
        except SessionNotFoundError:
            slot.__exit__()
            return error_answer(404, f"no session {session_id!r} for this client; omit sessionId to start one")
        except TooManySessionsError as exc:
            slot.__exit__()
            return self._too_many(exc, request)
        except BaseException:
            slot.__exit__()
            raise

        async def stream() -> AsyncIterator[bytes]:
            try:
                yield event_frame(SessionOpened(session_id=session_id))
                yield event_frame(with_href(session_id, first))
                async for event in events:
                    yield event_frame(with_href(session_id, event))
            except Exception as exc:
                log.exception("advisor turn failed")
                yield event_frame(stream_failed(exc))
            finally:
                slot.__exit__()

        return event_stream(stream())

    @api.get("/sessions/{session_id}")
    async def session(self, session_id: str, request: Request) -> JSONResponse:
        if not ID_PATTERN.fullmatch(session_id):
            return error_answer(422, "invalid request: session_id: not a session id", loc=("path", "session_id"))
        try:
            state = await self._state(session_id, self.caller(request))
        except SessionNotFoundError:
            return error_answer(404, f"no session {session_id!r} for this client")
        files = public(state.attributes.get("files", []), session_id)
        return JSONResponse(
            {
                "sessionId": session_id,
                "mode": state.mode,
                "pending": (state.attributes.get("pending") or {}).get("to"),
                "history": [e.model_dump(mode="json", by_alias=True) for e in state.history],
                "files": files,
                "negotiation": public(state.attributes.get("negotiation", []), session_id),
                "updatedAt": state.updated_at.isoformat(),
            }
        )

    @api.delete("/sessions/{session_id}")
    async def delete(self, session_id: str, request: Request) -> JSONResponse:
        from advisor.retention import delete_session_files

        if not ID_PATTERN.fullmatch(session_id):
            return error_answer(422, "invalid request: session_id: not a session id", loc=("path", "session_id"))
        owner = self.caller(request)
        try:
            await self._state(session_id, owner)
        except SessionNotFoundError:
            return error_answer(404, f"no session {session_id!r} for this client")
        key = self._key(session_id, owner)
        removed = await asyncio.to_thread(delete_session_files, self.settings, key)
        await self._sessions.delete(key)
        return JSONResponse({"deleted": session_id, "files": removed})

    @api.get("/sessions/{session_id}/files/{name}")
    async def file(self, session_id: str, name: str, request: Request) -> Response:
        from advisor.tools.base import artifact_prefix

        if not ID_PATTERN.fullmatch(session_id) or not FILE_NAME.fullmatch(name) or name.startswith("."):
            return error_answer(404, "no such file")
        owner = self.caller(request)
        try:
            state = await self._state(session_id, owner)
        except SessionNotFoundError:
            return error_answer(404, "no such file")
        key = artifact_prefix(self._key(session_id, owner)) + name
        if key not in state.generated_files or not await asyncio.to_thread(self._artifacts.exists, key):
            return error_answer(404, "no such file")
        data = await asyncio.to_thread(self._artifacts.get_bytes, key)
        suffix = name[name.rfind(".") :].lower()
        return Response(
            data,
            media_type=MEDIA.get(suffix, "application/octet-stream"),
            headers={
                "content-disposition": disposition(name, inline=suffix == ".png"),
                "x-content-type-options": "nosniff",
                "cache-control": "private",
            },
        )

    @api.post("/tools/{name}")
    async def tool(self, name: str, request: Request, sessionId: str | None = None) -> JSONResponse:
        from advisor.conversation import Begin, Commit
        from advisor.tools import REGISTRY, dump, validate_input
        from advisor.tools.base import ToolContext
        from core.llm.factory import make_llm
        from deployments.validation import BodyError, read_json_body

        if name not in REGISTRY:
            return error_answer(404, f"no tool {name!r}; the tools are {', '.join(REGISTRY)}")
        try:
            session_id = validate_session_id(sessionId, "sessionId") if sessionId else STANDALONE_SESSION
        except InputError as exc:
            return error_answer(422, f"invalid request: {first_line(exc)}", loc=("query", "sessionId"))
        try:
            raw = await read_json_body(request)
            data = validate_input(REGISTRY[name], raw)  # a bad input costs no session
        except BodyError as exc:
            return error_answer(422, f"invalid request: {exc}", loc=("body",))
        except InputError as exc:
            return error_answer(422, f"invalid request: {first_line(exc)}", loc=("body",))
        owner = self.caller(request)
        key = self._key(session_id, owner)
        try:
            with self._in_flight.slot(self.client(request)):
                state = await self._sessions.update(key, owner, Begin(), self.client(request))
                ctx = ToolContext(
                    self.settings,
                    session_id=key,
                    llm=make_llm(self.settings.llm, ADVISOR_ROLES[-1]),  # the tools run in the specialist mode
                    earlier=list(state.attributes.get("tool_results", [])),
                    negotiation_rounds=list(state.attributes.get("negotiation", [])),
                    files=list(state.attributes.get("files", [])),
                )
                result = dump(await REGISTRY[name].run(data, ctx))
                files = result.get("files") or []
                record = {"tool": name, "input": raw, "output": result}
                await self._sessions.update(key, owner, Commit([], self._policy, files=files, tool_results=[record]))
        except SessionNotFoundError:
            return error_answer(404, f"no session {session_id!r} for this client")
        except (TooManySessionsError, ClientBusyError) as exc:
            return self._too_many(exc, request)
        except InputError as exc:
            return error_answer(422, f"invalid request: {first_line(exc)}", loc=("body",))
        except LLMNotConfiguredError:
            return no_llm()
        except WebNotConfiguredError:  # the operator's fix, not the caller's
            return error_answer(503, say("web.off", self.language(request)))
        return JSONResponse({"sessionId": session_id, "output": public(result, session_id)})


def build_app(settings: Settings) -> Any:
    """The ``advisor`` Serve application for these settings (``advisor.replicas`` replicas)."""
    return bind(AdvisorService, settings, num_replicas=AdvisorSettings.of(settings).replicas, **affinity_options())


app = builder(build_app)

__all__ = [
    "APP_NAME",
    "ROUTE_PREFIX",
    "AdvisorService",
    "ChatBody",
    "api",
    "app",
    "build_app",
    "disposition",
    "file_href",
    "public",
    "with_href",
]
