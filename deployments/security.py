"""What every HTTP app puts in front of its routes: API keys and a cap on request bodies.

:class:`HttpGuard` is a plain ASGI middleware, so it also covers what FastAPI serves outside its
routes (``/docs``, ``/openapi.json``). An app adds it once at import (:func:`guard`) and configures
it when its settings are known (:meth:`HttpGuard.configure`, in the replica's constructor).

- With ``api_keys`` set, a request needs ``Authorization: Bearer <key>``; otherwise 401 with the
  same answer for a missing, malformed or wrong key. Keys are compared in constant time
  (:func:`hmac.compare_digest` against every key, no early exit) and never logged. Two
  ``Authorization`` headers, or one holding two credentials, are 400: the guard identifies the caller
  once, from the key it accepted (deployments/identity.py), and routes read only that identity.
- A replica keeps :data:`RESERVED_SLOTS` of its ``max_ongoing_requests`` for the open paths: data
  routes beyond the rest get 503 at once, so health probes and pages answer while data routes are full.
- A body above ``serve.max_body_bytes`` gets 413: at once when ``Content-Length`` says so, and as
  soon as the count passes the cap for a chunked body, so a large body is never read in full.
- A body nested deeper than :data:`MAX_JSON_DEPTH` or holding NaN/Infinity gets 422 before any
  parser sees it (deep nesting made the parsers recurse until a RecursionError, a 500); so does one
  holding a lone surrogate (``"\\ud800"``: valid JSON, but no text any model can store or show).
- Every HTML page gets a Content-Security-Policy: scripts only from the page itself (each inline
  ``<script>`` allowed by its SHA-256, so nothing a page later puts into its document from data can
  run: no ``javascript:`` link, no injected handler) and from the origins its own ``<script src>``
  tags name; no plugins, no framing, no ``<base>``.
- ``/healthz`` of every app stays open (load balancers and probes carry no key), also under a
  route prefix (``/critic/healthz``).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import json
import re
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

from pydantic import SecretStr

from core.messages import Lang
from core.settings import Settings
from core.telemetry.context import request_id_field
from core.validation import MAX_JSON_DEPTH, json_shape_problem, lone_surrogate_in_json
from deployments.identity import (
    AmbiguousCredentials,
    Caller,
    Network,
    authorization_of,
    caller_of_key,
    client_address,
    parse_networks,
    remember,
)
from deployments.language import language_of_headers, say

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

OPEN_PATHS = frozenset({"/healthz"})
RESERVED_SLOTS = 2  # of a replica's max_ongoing_requests, kept for open paths (see GuardConfig.reserve)
UNAUTHORIZED = "missing or invalid API key; send 'Authorization: Bearer <key>' with a key from the operator"


MAX_PAGE_BYTES = 4 * 1024 * 1024  # an HTML page held back to hash its scripts; a larger one gets no script at all
_INLINE_SCRIPT = re.compile(rb"<script(?![^>]*\bsrc=)[^>]*>(.*?)</script>", re.IGNORECASE | re.DOTALL)
_SCRIPT_SRC = re.compile(rb"<script[^>]*\bsrc=[\"']?([^\"' >]+)", re.IGNORECASE)
_STYLE_HREF = re.compile(rb"<link[^>]*\bhref=[\"']?([^\"' >]+)", re.IGNORECASE)


def _origins(urls: list[bytes]) -> list[str]:
    found: list[str] = []
    for raw in urls:
        parts = urlsplit(raw.decode("ascii", "replace"))
        origin = f"{parts.scheme}://{parts.netloc}"
        if parts.scheme == "https" and parts.netloc and origin not in found:
            found.append(origin)
    return found


def content_security_policy(html: bytes) -> str:
    """The CSP of one HTML page: its own inline scripts (by hash) and the https origins its tags load."""
    hashes = [
        "'sha256-" + base64.b64encode(hashlib.sha256(body).digest()).decode() + "'"
        for body in _INLINE_SCRIPT.findall(html)
    ]
    scripts = " ".join(["'self'", *_origins(_SCRIPT_SRC.findall(html)), *hashes])
    styles = " ".join(["'self'", "'unsafe-inline'", *_origins(_STYLE_HREF.findall(html))])
    return (
        f"default-src 'self'; script-src {scripts}; style-src {styles}; img-src 'self' data: blob: https:; "
        "font-src 'self' data: https:; connect-src 'self'; worker-src 'self' blob:; object-src 'none'; "
        "base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
    )


NO_SCRIPT_POLICY = content_security_policy(b"")


class KeyCheck:
    """The configured API keys; :meth:`match` finds the one an ``Authorization`` header value presents."""

    def __init__(self, keys: Iterable[SecretStr | str]) -> None:
        texts = [k.get_secret_value() if isinstance(k, SecretStr) else k for k in keys]
        self._keys = [(text, text.encode("utf-8", "surrogatepass")) for text in texts if text]

    @property
    def enabled(self) -> bool:
        return bool(self._keys)

    def match(self, authorization: bytes | str | None) -> str | None:
        """The configured key that ``Bearer <key>`` presents, else None (also when no keys are set)."""
        if not self._keys or authorization is None:
            return None
        raw = authorization if isinstance(authorization, bytes) else authorization.encode("utf-8", "surrogatepass")
        scheme, _, token = raw.strip().partition(b" ")
        if scheme.lower() != b"bearer":
            return None
        token = token.strip()
        found: str | None = None
        for text, key in self._keys:  # every key compared, in constant time each: no timing hint which one is close
            if hmac.compare_digest(token, key):
                found = text
        return found

    def allows(self, authorization: bytes | str | None) -> bool:
        """True when no keys are configured, or the header is ``Bearer <one of the keys>``."""
        return not self._keys or self.match(authorization) is not None

    def __repr__(self) -> str:  # never show the keys, even in a debugger or a log of the object
        return f"KeyCheck({len(self._keys)} key(s))"


async def refuse(send: Send, status: int, message: str, headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
    body = json.dumps({"error": message, **request_id_field()}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class GuardConfig:
    """What an :class:`HttpGuard` enforces; mutable, so an app can add the guard at import and fill it
    in when its settings are known."""

    def __init__(
        self,
        keys: KeyCheck | None = None,
        max_body_bytes: int = 64 * 1024,
        open_paths: frozenset[str] = OPEN_PATHS,
        max_json_depth: int = MAX_JSON_DEPTH,
    ) -> None:
        self.keys = keys or KeyCheck(())
        self.max_body_bytes = max_body_bytes
        self.open_paths = open_paths
        self.max_json_depth = max_json_depth
        self.address_header: bytes | None = None  # a trusted proxy's forwarding header (deployments/identity.py)
        self.trusted_proxies: list[Network] = []
        self.data_slots: int | None = None  # requests on data routes at once on this replica (None: no bound)
        self.retry_after_s = 30

    def configure(self, settings: Settings) -> None:
        """Take the keys (``api_keys``), the cap (``serve.max_body_bytes``) and how to find a caller's
        address behind a proxy (``serve.client_address_header``, ``serve.trusted_proxies``) from ``settings``."""
        from deployments.settings import ServeSettings

        section = ServeSettings.of(settings)
        self.keys = KeyCheck(settings.api_keys)
        self.max_body_bytes = section.max_body_bytes
        header = section.client_address_header
        self.address_header = header.lower().encode("latin-1") if header else None
        self.trusted_proxies = parse_networks(section.trusted_proxies)
        self.retry_after_s = section.retry_after_s

    def reserve(self, max_ongoing_requests: int | None) -> None:
        """Keep :data:`RESERVED_SLOTS` of a replica's ``max_ongoing_requests`` for the open paths
        (health, pages): data routes beyond the rest are refused at once (503) instead of queueing in
        front of a probe."""
        if max_ongoing_requests is not None:
            self.data_slots = max(1, max_ongoing_requests - RESERVED_SLOTS)

    def caller(self, scope: Scope, authorization: bytes | None) -> Caller:
        """The caller of this request (deployments/identity.py), from the key its one header presents."""
        address = client_address(scope, self.address_header, self.trusted_proxies)
        return caller_of_key(self.keys.match(authorization), self.keys.enabled, address)


def app_path(scope: Scope) -> str:
    """The request's path inside its app: an app served under a route prefix (``/critic``) sees
    ``/critic/healthz`` with ``root_path`` ``/critic``; its open paths are those of the app."""
    path = str(scope.get("path") or "")
    root = str(scope.get("root_path") or "").rstrip("/")
    if root and (path == root or path.startswith(root + "/")):
        return path[len(root) :] or "/"
    return path


class HttpGuard:
    """ASGI middleware: API keys, then the body cap, before the app sees a request."""

    def __init__(self, app: ASGIApp, config: GuardConfig) -> None:
        self.app = app
        self.config = config
        self._busy = 0  # requests on data routes in this replica now (GuardConfig.data_slots)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        raw_headers = list(scope.get("headers") or [])
        headers = dict(raw_headers)
        lang = language_of_headers(raw_headers)
        try:
            authorization = authorization_of(raw_headers)
        except AmbiguousCredentials:
            await refuse(send, 400, say("auth.ambiguous", lang))
            return
        caller = self.config.caller(scope, authorization)
        is_open = app_path(scope) in self.config.open_paths
        if not is_open and not caller.admitted:
            await refuse(send, 401, UNAUTHORIZED, [(b"www-authenticate", b"Bearer")])
            return
        remember(scope, caller)  # the one identity the routes see (request.state.caller)
        if is_open or self.config.data_slots is None:
            await self._checked(scope, receive, send, headers, lang)
            return
        if self._busy >= self.config.data_slots:
            retry = [(b"retry-after", str(self.config.retry_after_s).encode())]
            await refuse(send, 503, say("busy.replica", lang), retry)
            return
        self._busy += 1
        try:
            await self._checked(scope, receive, send, headers, lang)
        finally:
            self._busy -= 1

    async def _checked(
        self, scope: Scope, receive: Receive, send: Send, headers: dict[bytes, bytes], lang: Lang
    ) -> None:
        """The body cap and shape checks, then the app, with each HTML answer given its policy."""
        cap = self.config.max_body_bytes
        too_large = f"request body over {cap} bytes; send less (serve.max_body_bytes)"
        length = headers.get(b"content-length")
        if length is not None and (not length.isdigit() or len(length) > 12 or int(length) > cap):
            await refuse(send, 413, too_large, [(b"connection", b"close")])
            return
        body: list[bytes] = []  # read whole before the app sees it: bounded by the cap, and checked
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client left before sending its body
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > cap:  # stop reading at once: a large body is never read in full
                await refuse(send, 413, too_large, [(b"connection", b"close")])
                return
            body.append(chunk)
            if not message.get("more_body", False):
                break
        whole = b"".join(body)
        problem = json_shape_problem(whole, self.config.max_json_depth)
        if problem is not None:
            await refuse(send, 422, f"invalid request: body: {problem}")
            return
        if lone_surrogate_in_json(whole):  # no model can store or show it; every app refuses it here
            await refuse(send, 422, say("input.unicode", lang))
            return
        replayed = False
        started = False
        page: Message | None = None  # the start of an HTML answer, held until its body is known
        page_body: list[bytes] = []

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": whole, "more_body": False}
            return await receive()  # after the body: wait for the client to leave (event streams)

        async def tracked_send(message: Message) -> None:
            nonlocal started, page
            if message["type"] == "http.response.start":
                started = True
                if _is_html(message):
                    page = message
                    return
            if page is not None and message["type"] == "http.response.body":
                page_body.append(message.get("body", b""))
                held = sum(len(b) for b in page_body)
                if message.get("more_body", False) and held <= MAX_PAGE_BYTES:
                    return
                html = b"".join(page_body)
                policy = content_security_policy(html) if held <= MAX_PAGE_BYTES else NO_SCRIPT_POLICY
                headers = [(k, v) for k, v in page["headers"] if k.lower() != b"content-security-policy"]
                await send({**page, "headers": [*headers, (b"content-security-policy", policy.encode())]})
                page = None
                page_body.clear()
                message = {**message, "body": html}
            await send(message)

        await self.app(scope, replay, tracked_send)


class ClientBusyError(Exception):
    """A client already has as many requests in flight as it may (answered 429): ``key`` names the
    bound's message in the serve catalogue (data/serve/messages.yaml), ``limit`` its value."""

    def __init__(self, limit: int, key: str = "busy.client") -> None:
        super().__init__(say(key, "en", limit=limit))
        self.limit = limit
        self.key = key

    def answer(self, lang: Lang, retry_after_s: int) -> Any:
        """The 429 of this refusal, in the caller's language."""
        return too_many(say(self.key, lang, limit=self.limit), retry_after_s)


class InFlightLimit:
    """At most ``limit`` requests in flight per client (deployments/identity.py: a key, or an address)
    on this replica: one client cannot take every slot a replica has. Use ``with limit.slot(client):``;
    a full client gets :class:`ClientBusyError` at once (no queue to fill). ``key`` names the message."""

    def __init__(self, limit: int, key: str = "busy.client") -> None:
        self.limit = limit
        self.key = key
        self._in_flight: dict[str, int] = {}

    def slot(self, owner: str) -> _Slot:
        return _Slot(self, owner)

    def in_flight(self, owner: str) -> int:
        return self._in_flight.get(owner, 0)


class _Slot:
    def __init__(self, limit: InFlightLimit, owner: str) -> None:
        self._limit = limit
        self._owner = owner

    def __enter__(self) -> None:
        counts = self._limit._in_flight
        if counts.get(self._owner, 0) >= self._limit.limit:
            raise ClientBusyError(self._limit.limit, self._limit.key)
        counts[self._owner] = counts.get(self._owner, 0) + 1

    def __exit__(self, *_: object) -> None:
        counts = self._limit._in_flight
        counts[self._owner] -= 1
        if counts[self._owner] <= 0:
            del counts[self._owner]


def too_many(message: str, retry_after_s: int) -> Any:
    """The 429 answer of a per-client limit, with Retry-After."""
    from fastapi.responses import JSONResponse

    return JSONResponse(
        {"error": message, **request_id_field()}, status_code=429, headers={"Retry-After": str(retry_after_s)}
    )


def _is_html(start: Message) -> bool:
    for key, value in start.get("headers") or []:
        if key.lower() == b"content-type":
            return bytes(value).lower().startswith(b"text/html")
    return False


def guard(api: Any, open_paths: Iterable[str] = ()) -> GuardConfig:
    """Wrap the FastAPI/Starlette app ``api`` in an :class:`HttpGuard`; configure the returned config
    once the settings are known (until then no keys are asked and the default cap holds).
    ``open_paths`` (app paths) join ``/healthz`` without a key: only pages that hold no data."""
    config = GuardConfig(open_paths=OPEN_PATHS | frozenset(open_paths))
    api.add_middleware(HttpGuard, config=config)
    return config


def exposed_without_keys(host: str, settings: Settings) -> bool:
    """True when ``host`` is reachable beyond this machine and no API keys are configured."""
    if settings.api_keys:
        return False
    if host in ("localhost", ""):
        return host == ""
    try:
        return not ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: assume it is reachable
        return True


__all__ = [
    "MAX_JSON_DEPTH",
    "MAX_PAGE_BYTES",
    "NO_SCRIPT_POLICY",
    "OPEN_PATHS",
    "RESERVED_SLOTS",
    "UNAUTHORIZED",
    "ClientBusyError",
    "GuardConfig",
    "HttpGuard",
    "InFlightLimit",
    "KeyCheck",
    "app_path",
    "content_security_policy",
    "exposed_without_keys",
    "guard",
    "json_shape_problem",
    "refuse",
    "too_many",
]
