"""What crosses a process boundary with a call: the request id (core/telemetry/request_id.py), the
trace context (core/telemetry/tracing.py) and how the caller logs (core/telemetry/logs.py).

The runtime packs :func:`carried` with every call to a Ray actor and the actor side runs the method
inside :func:`adopted`, so the id and the trace cross actors and nodes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from core.telemetry.logs import adopt_logging, logging_choice
from core.telemetry.metrics import ENABLED
from core.telemetry.request_id import (
    HEADER,
    _request_id,
    accept_request_id,
    current_request_id,
    new_request_id,
    request_scope,
)
from core.telemetry.tracing import extracted, inject


def carried() -> dict[str, Any] | None:
    """What an actor call carries to the callee: the request id and the trace context (None when
    there is neither, so a call outside any request carries nothing)."""
    if not ENABLED:
        return None
    rid = _request_id.get()
    trace = inject()
    if rid is None and not trace:
        return None
    return {"request_id": rid, "trace": trace, "log": logging_choice()}


@contextmanager
def adopted(context: Mapping[str, Any] | None) -> Iterator[None]:
    """Run the block in the caller's context (see :func:`carried`)."""
    if not context:
        yield
        return
    adopt_logging(context.get("log"))
    token = _request_id.set(context.get("request_id"))
    try:
        with extracted(context.get("trace") or {}):
            yield
    finally:
        _request_id.reset(token)


__all__ = [
    "HEADER",
    "accept_request_id",
    "adopted",
    "carried",
    "current_request_id",
    "new_request_id",
    "request_id_field",
    "request_scope",
]


def request_id_field() -> dict[str, str]:
    """``{"requestId": id}`` for an error answer or a stored row (empty outside a request)."""
    rid = _request_id.get()
    return {"requestId": rid} if rid else {}
