"""The answers every Serve app gives when it refuses or fails: one JSON shape, no server paths.

Every error body is ``{"error": "what was wrong; what to do", ...}``; one that concerns a field adds
``detail: [{loc, msg, type}]`` like a validation failure (deployments/validation.py). The ``error`` text
is English, for whoever calls the API; a page says the same to its visitor in their language from its
own catalogue, read from the status, ``code`` (``no_llm``: the service has no model) and ``detail``. Text the app
writes itself goes through :func:`printable`; text that comes from an exception may name folders of
the server or ``/proc/<pid>``, so it goes through :func:`without_server_paths` first.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse
from sqlalchemy.exc import DBAPIError

from core.errors import first_line
from core.events import Event, StreamFailed, event_frame, json_frame
from core.store import STORE_RETRY_AFTER_S, unavailable
from core.telemetry.context import request_id_field
from core.validation import printable

log = logging.getLogger(__name__)
_SERVER_PATH = re.compile(r"(?<![\w.:/])/[^\s'\",;)]+")
INVALID_SETTING = "invalid setting: "  # how a ConfigError about one option starts (core/settings.py)
NO_LLM = (
    "no LLM is configured on this service; ask its operator (the operator: `magi doctor` names the shipped "
    "offline models and the magi.yaml that runs every system on them)"
)
NO_LLM_CODE = "no_llm"
STORE_DOWN = "the service's store cannot be reached right now (restarting?); nothing was done: send it again shortly"
SSE_HEADERS = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}


def without_server_paths(message: str) -> str:
    """An error message fit for a remote caller: absolute paths (folders, /proc/<pid>) replaced."""
    return printable(_SERVER_PATH.sub("<server path>", message))


def failure_text(exc: BaseException) -> str:
    """The first line of an exception's message, fit for a remote caller."""
    return without_server_paths(first_line(exc))


def failure_code(exc: BaseException) -> str:
    """What kind of failure ended a stream, for a page to explain in its visitor's language: ``no_llm``
    (no model for a step), ``llm_failed`` (the model failed or could not answer), ``invalid`` (the input
    was refused), ``timeout``, or ``failed``."""
    from core.errors import InputError, LLMError, LLMNotConfiguredError

    if isinstance(exc, LLMNotConfiguredError):
        return NO_LLM_CODE
    if isinstance(exc, LLMError):
        return "llm_failed"
    if isinstance(exc, InputError):
        return "invalid"
    if isinstance(exc, TimeoutError):
        return "timeout"
    return "failed"


def stream_failed(exc: BaseException) -> StreamFailed:
    """The ``error`` event that ends a stream on ``exc``: its first line, fit for a remote caller, and its code."""
    return StreamFailed(message=failure_text(exc), code=failure_code(exc))


def error_answer(
    status: int,
    message: str,
    *,
    loc: Sequence[str] | None = None,
    headers: Mapping[str, str] | None = None,
    **extra: Any,
) -> JSONResponse:
    """``{"error": message, **extra}`` with ``status``; ``loc`` (``("body", "query")``) adds the
    validation-style ``detail`` naming the field."""
    text = printable(message)
    body: dict[str, Any] = {"error": text, **extra, **request_id_field()}
    if loc is not None:
        body["detail"] = [{"loc": list(loc), "msg": text.removeprefix("invalid request: "), "type": "value_error"}]
    return JSONResponse(body, status_code=status, headers=dict(headers or {}))


def invalid_option(exc: BaseException, *, loc: Sequence[str] | None = None) -> JSONResponse:
    """422 for a request whose option the settings refuse (a ConfigError or InputError naming it)."""
    message = first_line(exc).removeprefix(INVALID_SETTING)
    return error_answer(422, f"invalid request: {without_server_paths(message)}", loc=loc)


def no_llm() -> JSONResponse:
    """503: the route needs an LLM and the service has none (the operator's fix, not the caller's)."""
    return error_answer(503, NO_LLM, code=NO_LLM_CODE)


def store_unavailable() -> JSONResponse:
    """503 with Retry-After: the store is down (a PostgreSQL restart); the request was not done."""
    return error_answer(503, STORE_DOWN, headers={"Retry-After": str(STORE_RETRY_AFTER_S)}, code="store_unavailable")


def answer_store_outages(api: FastAPI) -> None:
    """Make ``api`` answer :func:`store_unavailable` when a route fails because the store cannot be
    reached, instead of a 500; any other database error stays a 500 (a bug, logged as one)."""

    async def handler(_request: Request, exc: Exception) -> JSONResponse:
        if not unavailable(exc):
            raise exc
        log.warning("store unavailable; answered 503: %s", first_line(exc))
        return store_unavailable()

    api.add_exception_handler(DBAPIError, handler)


def event_stream(frames: AsyncIterator[bytes], headers: Mapping[str, str] | None = None) -> StreamingResponse:
    """A ``text/event-stream`` response of SSE frames (core/events.py encodes them), never cached."""
    return StreamingResponse(frames, media_type="text/event-stream", headers={**SSE_HEADERS, **(headers or {})})


async def progress_frames(
    work: Callable[[Callable[[Event], None]], Awaitable[Any]], *, poll_s: float = 0.25
) -> AsyncIterator[bytes]:
    """SSE frames of a piece of work that reports events as it goes: each event when it comes, then the
    work's JSON result as one ``result`` frame, or an ``error`` frame saying why it failed. ``work``
    gets the function to report with. A client that goes away cancels the work."""
    queue: asyncio.Queue[Event] = asyncio.Queue()
    task = asyncio.ensure_future(work(queue.put_nowait))
    try:
        while not task.done() or not queue.empty():
            try:
                event = await asyncio.wait_for(queue.get(), timeout=poll_s)
            except TimeoutError:
                continue
            yield event_frame(event)
        try:
            yield json_frame("result", task.result())
        except Exception as exc:  # the client sees why; the log keeps the detail
            log.warning("streamed work failed: %s", first_line(exc))
            yield event_frame(stream_failed(exc))
    finally:
        if not task.done():
            task.cancel()


__all__ = [
    "INVALID_SETTING",
    "NO_LLM",
    "NO_LLM_CODE",
    "SSE_HEADERS",
    "STORE_DOWN",
    "answer_store_outages",
    "error_answer",
    "event_stream",
    "failure_code",
    "failure_text",
    "invalid_option",
    "no_llm",
    "progress_frames",
    "store_unavailable",
    "stream_failed",
    "without_server_paths",
]
