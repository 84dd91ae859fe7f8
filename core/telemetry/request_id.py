"""The request id: one per HTTP request, CLI command or batch job, in a context variable.

It is accepted from an ``X-Request-ID`` header when it looks like an id (:func:`accept_request_id`),
made otherwise (:func:`new_request_id`), and carried wherever the work goes: log records (the logging
filter reads it), events, stored rows, error answers (``requestId``), and actor calls: the runtime
packs ``carried`` (core/telemetry/context.py) with every call to another process and runs it inside
``adopted`` there, so the id (and the trace context) crosses Ray actors and
nodes.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

HEADER = "X-Request-ID"
_VALID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")  # what a proxy's or a client's id looks like

_request_id: ContextVar[str | None] = ContextVar("magi_request_id", default=None)


def new_request_id() -> str:
    """A fresh id (32 hex characters, as Ray Serve makes its own)."""
    return uuid.uuid4().hex


def acceptable_request_id(given: str | None) -> str | None:
    """``given`` when it is a plausible id (1-128 of letters, digits and ``._:-``) and nothing shaped
    like a credential (a key sent as an id would land in every log line), else None."""
    from core.telemetry.scrub import scrubbed

    if given and _VALID.fullmatch(given) and scrubbed(given) == given:
        return given
    return None


def accept_request_id(given: str | None) -> str:
    """``given`` when :func:`acceptable_request_id` takes it, else a new id: a header is caller data,
    and an id lands in logs and rows, so nothing else is taken over."""
    return acceptable_request_id(given) or new_request_id()


def current_request_id() -> str | None:
    """The id of the request being served in this context, if any."""
    return _request_id.get()


@contextmanager
def request_scope(request_id: str | None = None) -> Iterator[str]:
    """Run the block as request ``request_id`` (made when None)."""
    rid = request_id or new_request_id()
    token = _request_id.set(rid)
    try:
        yield rid
    finally:
        _request_id.reset(token)


__all__ = [
    "HEADER",
    "accept_request_id",
    "acceptable_request_id",
    "current_request_id",
    "new_request_id",
    "request_scope",
]
