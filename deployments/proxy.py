"""What runs in Ray Serve's own HTTP proxy, in front of every app, before Serve reads a request.

Serve's proxy reads a few headers itself before any app sees the request: it decodes
``X-Request-ID`` (and uses it as the request's id in its logs and answer), ``serve_multiplexed_model_id``
(the session affinity of the router and the advisor), ``x-session-id``, the timeout and disconnect
hints and ``traceparent`` as UTF-8, so one byte that is not UTF-8 answered 500 with no app code
involved; and it serves ``/-/routes`` (every app and its route prefix) to anyone. :class:`ProxyGuard`
sits in front of that (Serve's ``RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH`` hook, set by
:func:`install` before Ray starts, so every proxy of the cluster has it):

- ``X-Request-ID`` is kept only when it is a short id of a safe alphabet and nothing shaped like a
  secret (core/telemetry/request_id.py); otherwise it is dropped and Serve makes a new one, so no
  oversized or secret value reaches a log, a row or an answer.
- a header Serve decodes that is not UTF-8 text, or a ``serve_multiplexed_model_id`` that is not a
  session id, is 400 with a message in the caller's language;
- ``/-/routes`` needs an API key when keys are set; ``/-/healthz`` (a bare "success") stays open.

The proxy's own log lines (Serve's access lines) are scrubbed like every other line
(core/telemetry/logs.py).
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

from core.telemetry.logs import ContextFilter
from core.telemetry.request_id import acceptable_request_id
from deployments.identity import AmbiguousCredentials, authorization_of
from deployments.language import language_of_headers, say
from deployments.security import KeyCheck, Receive, Scope, Send, refuse
from sessions.ids import ID_PATTERN

CALLBACK_ENV = "RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH"
CALLBACK = "deployments.proxy:middlewares"
# Serve gives a new proxy 5 s to be ready and kills it otherwise; importing the guard (pydantic, the
# message catalogues) takes about 0.6 s on a quiet node and several seconds on a busy one.
READY_TIMEOUT_ENV = "RAY_SERVE_PROXY_READY_CHECK_TIMEOUT_S"
READY_TIMEOUT_S = "30"
PROXY_WAIT_S = 600.0  # past Serve's own fixed 60 s wait for its proxies in serve.start
REQUEST_ID = b"x-request-id"
AFFINITY = frozenset({b"serve_multiplexed_model_id", b"serve-multiplexed-model-id"})
DECODED = frozenset(  # the headers Serve's proxy decodes as UTF-8 (ray/serve/_private/proxy.py, http_util.py)
    {b"x-session-id", b"x-request-timeout-seconds", b"x-request-disconnect-disabled", b"traceparent", *AFFINITY}
)
ROUTES = "/-/routes"
log = logging.getLogger(__name__)


def install() -> None:
    """Have every Serve proxy started from now on by this process's Ray run :class:`ProxyGuard` (the
    proxies inherit the environment; a cluster started elsewhere needs the variables on ``ray start``),
    and give a proxy time to import it on a busy node."""
    os.environ.setdefault(CALLBACK_ENV, CALLBACK)
    os.environ.setdefault(READY_TIMEOUT_ENV, READY_TIMEOUT_S)


def _text(value: bytes) -> str | None:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _configured_keys() -> KeyCheck | None:
    """The service's API keys as this proxy's environment gives them; None when they cannot be read
    (then ``/-/routes`` stays closed: a proxy that cannot tell keys apart shows nothing)."""
    from core.errors import ConfigError
    from core.settings import load_settings

    try:
        return KeyCheck(load_settings().api_keys)
    except ConfigError as exc:
        log.warning("proxy guard: cannot read the API keys (%s); /-/routes stays closed", exc)
        return None


class ProxyGuard:
    """ASGI middleware of Serve's proxy (see the module docstring)."""

    def __init__(self, app: Any, keys: KeyCheck | None = None) -> None:
        self.app = app
        self.keys = keys if keys is not None else _configured_keys()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers: list[tuple[bytes, bytes]] = []
        lang = language_of_headers(scope.get("headers") or [])
        for name, value in scope.get("headers") or []:
            lowered = name.lower()
            if lowered == REQUEST_ID:
                text = _text(value)
                if text is None or acceptable_request_id(text) is None:
                    continue  # dropped: Serve gives the request an id of its own
            elif lowered in DECODED:
                text = _text(value)
                if text is None:
                    await refuse(send, 400, say("header.not_text", lang, header=lowered.decode("latin-1")))
                    return
                if lowered in AFFINITY and not ID_PATTERN.fullmatch(text):
                    await refuse(send, 400, say("header.not_session", lang, header=lowered.decode("latin-1")))
                    return
            headers.append((name, value))
        scope = {**scope, "headers": headers}
        if scope.get("path") == ROUTES and not self._admitted(headers):
            await refuse(send, 401, say("routes.key", lang), [(b"www-authenticate", b"Bearer")])
            return
        await self.app(scope, receive, send)

    def _admitted(self, headers: list[tuple[bytes, bytes]]) -> bool:
        if self.keys is None:
            return False
        if not self.keys.enabled:
            return True
        try:
            return self.keys.match(authorization_of(headers)) is not None
        except AmbiguousCredentials:
            return False


def scrub_proxy_logs() -> None:
    """Scrub the proxy's own log lines (Serve's access lines carry the request id and path)."""
    for handler in logging.getLogger("ray.serve").handlers:
        if not any(isinstance(f, ContextFilter) for f in handler.filters):
            handler.addFilter(ContextFilter())


PROBE_ID = "magi proxy guard probe"  # not an acceptable request id: a guarded proxy never echoes it


def guarded(base_url: str) -> bool:
    """Whether the Serve proxy at ``base_url`` runs :class:`ProxyGuard`: it replaces an unacceptable
    ``X-Request-ID`` instead of echoing it (a cluster whose Ray was started without :func:`install`)."""
    import httpx

    answer = httpx.get(f"{base_url}/-/healthz", headers={"X-Request-ID": PROBE_ID}, timeout=30)
    echoed: str | None = answer.headers.get("x-request-id")
    return echoed != PROBE_ID


def start_serve(host: str, port: int, wait_s: float = PROXY_WAIT_S) -> None:
    """``serve.start`` on ``host:port``, waiting until every proxy is healthy. Serve itself gives its
    proxies a fixed 60 s and raises, with the controller left running; a busy node can take longer
    only to start the proxy's worker process, and Serve keeps restarting a proxy until it is ready."""
    from ray import serve
    from ray.serve.schema import ProxyStatus

    options = {"host": host, "port": port}
    try:
        serve.start(http_options=options)
    except TimeoutError:
        serve.start(http_options=options)  # the controller is up: this connects to it
        deadline = time.monotonic() + wait_s
        while not all(s == ProxyStatus.HEALTHY for s in serve.status().proxies.values()):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def middlewares() -> list[Any]:
    """Serve's proxy callback: the middlewares of every HTTP proxy (see :func:`install`)."""
    from starlette.middleware import Middleware

    scrub_proxy_logs()
    return [Middleware(ProxyGuard)]


__all__ = [
    "AFFINITY",
    "CALLBACK",
    "CALLBACK_ENV",
    "DECODED",
    "PROBE_ID",
    "PROXY_WAIT_S",
    "READY_TIMEOUT_ENV",
    "READY_TIMEOUT_S",
    "REQUEST_ID",
    "ROUTES",
    "ProxyGuard",
    "guarded",
    "install",
    "middlewares",
    "scrub_proxy_logs",
    "start_serve",
]
