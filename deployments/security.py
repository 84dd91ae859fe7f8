"""What every HTTP app puts in front of its routes: API keys and a cap on request bodies.

:class:`HttpGuard` is a plain ASGI middleware, so it also covers what FastAPI serves outside its
routes (``/docs``, ``/openapi.json``). An app adds it once at import (:func:`guard`) and configures
it when its settings are known (:meth:`HttpGuard.configure`, in the replica's constructor).

- With ``api_keys`` set, a request needs ``Authorization: Bearer <key>``; otherwise 401 with the
  same answer for a missing, malformed or wrong key. Keys are compared in constant time
  (:func:`hmac.compare_digest` against every key, no early exit) and never logged.
- A body above ``serve.max_body_bytes`` gets 413: at once when ``Content-Length`` says so, and as
  soon as the count passes the cap for a chunked body, so a large body is never read in full.
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

from core.settings import Settings

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

OPEN_PATHS = frozenset({"/healthz"})
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
    """The configured API keys; :meth:`allows` answers for one ``Authorization`` header value."""

    def __init__(self, keys: Iterable[SecretStr | str]) -> None:
        self._keys = [
            (k.get_secret_value() if isinstance(k, SecretStr) else k).encode("utf-8", "surrogatepass") for k in keys
        ]
        self._keys = [k for k in self._keys if k]

    @property
    def enabled(self) -> bool:
        return bool(self._keys)

    def allows(self, authorization: bytes | str | None) -> bool:
        """True when no keys are configured, or the header is ``Bearer <one of the keys>``."""
        if not self._keys:
            return True
        if authorization is None:
            return False
        raw = authorization if isinstance(authorization, bytes) else authorization.encode("utf-8", "surrogatepass")
        scheme, _, token = raw.strip().partition(b" ")
        if scheme.lower() != b"bearer":
            return False
        token = token.strip()
        matched = False
        for key in self._keys:  # every key compared, in constant time each: no timing hint which one is close
            matched |= hmac.compare_digest(token, key)
        return matched

    def __repr__(self) -> str:  # never show the keys, even in a debugger or a log of the object
        return f"KeyCheck({len(self._keys)} key(s))"


async def _answer(send: Send, status: int, message: str, headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
    body = json.dumps({"error": message}).encode()
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
        self, keys: KeyCheck | None = None, max_body_bytes: int = 64 * 1024, open_paths: frozenset[str] = OPEN_PATHS
    ) -> None:
        self.keys = keys or KeyCheck(())
        self.max_body_bytes = max_body_bytes
        self.open_paths = open_paths

    def configure(self, settings: Settings) -> None:
        """Take the keys (``api_keys``) and the cap (``serve.max_body_bytes``) from ``settings``."""
        from deployments.settings import ServeSettings

        self.keys = KeyCheck(settings.api_keys)
        self.max_body_bytes = ServeSettings.of(settings).max_body_bytes


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

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        if app_path(scope) not in self.config.open_paths and not self.config.keys.allows(headers.get(b"authorization")):
            await _answer(send, 401, UNAUTHORIZED, [(b"www-authenticate", b"Bearer")])
            return
        cap = self.config.max_body_bytes
        too_large = f"request body over {cap} bytes; send less (serve.max_body_bytes)"
        length = headers.get(b"content-length")
        if length is not None and (not length.isdigit() or len(length) > 12 or int(length) > cap):
            await _answer(send, 413, too_large, [(b"connection", b"close")])
            return
        seen = 0
        over = False  # the body passed the cap: the app is told the client left, and its answer replaced
        started = False
        page: Message | None = None  # the start of an HTML answer, held until its body is known
        page_body: list[bytes] = []

        async def counted_receive() -> Message:
            nonlocal seen, over
            if over:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > cap:
                    over = True
                    return {"type": "http.disconnect"}
            return message

        async def tracked_send(message: Message) -> None:
            nonlocal started, page
            if over:  # whatever the app makes of the cut body (FastAPI: 400), the caller gets the 413
                if not started:
                    started = True
                    await _answer(send, 413, too_large, [(b"connection", b"close")])
                return
            if message["type"] == "http.response.start":
                started = True
                if _is_html(message):
                    page = message
                    return
            if page is not None and message["type"] == "http.response.body":
                page_body.append(message.get("body", b""))
                size = sum(len(b) for b in page_body)
                if message.get("more_body", False) and size <= MAX_PAGE_BYTES:
                    return
                html = b"".join(page_body)
                policy = content_security_policy(html) if size <= MAX_PAGE_BYTES else NO_SCRIPT_POLICY
                headers = [(k, v) for k, v in page["headers"] if k.lower() != b"content-security-policy"]
                await send({**page, "headers": [*headers, (b"content-security-policy", policy.encode())]})
                page = None
                page_body.clear()
                message = {**message, "body": html}
            await send(message)

        try:
            await self.app(scope, counted_receive, tracked_send)
        except Exception:
            if not over:
                raise
        if over and not started:
            await _answer(send, 413, too_large, [(b"connection", b"close")])


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
    "MAX_PAGE_BYTES",
    "NO_SCRIPT_POLICY",
    "OPEN_PATHS",
    "UNAUTHORIZED",
    "GuardConfig",
    "HttpGuard",
    "KeyCheck",
    "app_path",
    "content_security_policy",
    "exposed_without_keys",
    "guard",
]
