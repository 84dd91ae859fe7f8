"""The 422 every Serve app gives for a body or path that does not fit its request model.

It names each bad field and says why, and never echoes the value sent (a secret pasted in the wrong
field must not come back in a response or a log); a hostile key name is made printable first.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from core.errors import MagiError
from core.telemetry.context import request_id_field
from core.validation import printable

T = TypeVar("T")


def field_check(check: Callable[[T], T], value: T) -> T:
    """Run one of the project's own validators inside a pydantic validator: its MagiError becomes the
    ValueError pydantic turns into a 422 naming the field."""
    try:
        return check(value)
    except MagiError as exc:
        raise ValueError(str(exc)) from exc


LIMITS = ("min_length", "max_length", "ge", "le", "gt", "lt")  # the bounds a page can put in its own words


def _limits(err: Any) -> dict[str, int | float]:
    """The numeric bounds of a failed constraint (``{"max_length": 500}``), never the value sent."""
    ctx = err.get("ctx") or {}
    return {k: v for k, v in ctx.items() if k in LIMITS and isinstance(v, int | float) and not isinstance(v, bool)}


def invalid_request(exc: RequestValidationError) -> JSONResponse:
    """``{"error": "invalid request: field: why; ...", "detail": [{loc, msg, type, ctx?}, ...]}`` with status
    422; ``ctx`` holds the bound that was crossed (``max_length``, ``ge``...), so a page can say it."""
    problems: list[str] = []
    detail: list[dict[str, Any]] = []
    for err in exc.errors():
        loc = [printable(p) if isinstance(p, str) else p for p in err["loc"]]
        msg = printable(str(err["msg"]))
        problems.append(f"{'.'.join(str(p) for p in loc if p != 'body') or 'body'}: {msg}")
        detail.append({"loc": loc, "msg": msg, "type": err["type"], **({"ctx": c} if (c := _limits(err)) else {})})
    body = {"error": "invalid request: " + "; ".join(problems), "detail": detail, **request_id_field()}
    return JSONResponse(body, status_code=422)


class BodyError(ValueError):
    """A request body that is not the JSON a route takes; the message says what to send instead."""


async def read_json_body(request: Request) -> Any:
    """The request's body as JSON (the guard has bounded its size and nesting already); BodyError when it
    is not JSON, not valid Unicode, or holds NaN/Infinity."""

    def refuse_constant(name: str) -> Any:
        raise BodyError(f"{name} is not a JSON number; send finite numbers")

    try:
        value = json.loads(await request.body(), parse_constant=refuse_constant)
        json.dumps(value, ensure_ascii=False).encode("utf-8")  # a lone surrogate cannot be stored or shown
    except BodyError:
        raise
    except UnicodeError:
        raise BodyError("the body holds invalid Unicode (a lone surrogate); send UTF-8 text") from None
    except (ValueError, RecursionError):
        raise BodyError("the body is not JSON; send the input as a JSON object") from None
    return value


def answer_invalid_requests(api: FastAPI) -> None:
    """Make ``api`` answer validation failures with :func:`invalid_request`."""

    async def handler(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return invalid_request(exc)

    api.add_exception_handler(RequestValidationError, handler)


__all__ = [
    "BodyError",
    "answer_invalid_requests",
    "field_check",
    "invalid_request",
    "read_json_body",
]
