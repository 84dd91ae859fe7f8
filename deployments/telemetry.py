"""What every Serve app does for operators on each request: a request id, a span, two metrics.

:class:`RequestTelemetry` is the outermost ASGI middleware of each app (deployments/base.py puts it
there), so even the guard's refusals carry the id: it takes the id Ray Serve gave the request (Serve
uses a valid ``X-Request-ID`` as its own), else the header, else a new one
(core/telemetry/context.py), serves the request inside it, and answers with it in ``X-Request-ID``
(in a replica Serve's proxy does that).
"""

from __future__ import annotations

import time
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from core.telemetry.context import HEADER, accept_request_id, request_scope
from core.telemetry.metrics import MetricSet
from core.telemetry.tracing import span

METRICS = MetricSet("http")
REQUESTS = METRICS.counter("requests", "HTTP requests, by app, method and status class.", ("app", "method", "status"))
LATENCY = METRICS.histogram("request_seconds", "Time to the first byte of the answer, by app.", ("app",))
_HEADER_BYTES = HEADER.lower().encode()


class RequestTelemetry:
    """ASGI middleware: request id, ``http.request`` span, ``magi_http_requests`` and latency."""

    def __init__(self, app: ASGIApp, name: str = "") -> None:
        self.app = app
        self.name = name

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = dict(scope.get("headers") or []).get(_HEADER_BYTES, b"").decode("latin-1")
        serve_rid = _serve_request_id()
        rid = accept_request_id(serve_rid or given)
        answers_id = serve_rid is None  # in a replica Serve's proxy puts its id on the answer itself
        app = self.name or _app_name()
        method = scope.get("method", "GET")
        started = time.perf_counter()
        status = 500

        async def answer(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                if answers_id:
                    headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != _HEADER_BYTES]
                    message = {**message, "headers": [*headers, (_HEADER_BYTES, rid.encode())]}
                LATENCY.observe(time.perf_counter() - started, app=app)
            await send(message)

        with request_scope(rid), span("http.request", app=app, method=method, path=scope.get("path", "")):
            try:
                await self.app(scope, receive, answer)
            finally:
                REQUESTS.inc(app=app, method=method, status=f"{status // 100}xx")


def _serve_request_id() -> str | None:
    try:
        from ray.serve.context import _get_serve_request_context

        rid: Any = _get_serve_request_context().request_id
    except Exception:  # outside a replica (an in-process test of the app)
        return None
    return str(rid) if rid else None


def _app_name() -> str:
    try:
        from ray.serve.context import _get_internal_replica_context

        context = _get_internal_replica_context()  # type: ignore[no-untyped-call]
    except Exception:  # outside a replica
        return "local"
    return context.app_name if context is not None and context.app_name else "local"


__all__ = ["LATENCY", "REQUESTS", "RequestTelemetry"]
