"""The guard in Serve's HTTP proxy (deployments/proxy.py), without Ray: in front of a stand-in for
Serve's own ASGI app, which (like Serve's) decodes the headers it reads as UTF-8 and serves /-/routes."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from deployments.proxy import ProxyGuard
from deployments.security import KeyCheck

KEY = "proxy-key-1"


async def serve_like(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Decodes what Serve's proxy decodes (a UnicodeDecodeError here is Serve's 500) and echoes the id."""
    decoded = {name.decode(): value.decode("utf-8") for name, value in scope["headers"]}
    body = b'{"routes": {"/router": "router"}}' if scope["path"] == "/-/routes" else b"{}"
    rid = decoded.get("x-request-id", "made-by-serve").encode()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"x-request-id", rid)]})
    await send({"type": "http.response.body", "body": body})


def client(keys: list[str]) -> httpx.AsyncClient:
    guard = ProxyGuard(serve_like, KeyCheck(keys))
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=guard), base_url="http://proxy")


@pytest.mark.parametrize(
    "header",
    [
        (b"serve_multiplexed_model_id", b"\xff"),
        (b"serve-multiplexed-model-id", b"../../etc"),
        (b"x-session-id", b"\xc3\x28"),
        (b"x-request-timeout-seconds", b"\xfe"),
        (b"x-request-disconnect-disabled", b"\x80"),
        (b"traceparent", b"\xff\xff"),
    ],
)
async def test_headers_serve_would_fail_to_decode_are_400_in_the_callers_language(header: tuple[bytes, bytes]) -> None:
    async with client([]) as proxy:
        answer = await proxy.get("/router/route", headers=[header])
        assert answer.status_code == 400 and "ヘッダー" in answer.json()["error"]
        english = await proxy.get("/router/route", headers=[header, (b"accept-language", b"en")])
        assert "header" in english.json()["error"]
        assert (await proxy.get("/router/route", headers=[(header[0], b"session-1")])).status_code == 200


@pytest.mark.parametrize(
    "given", [b"\xff\xfe", b"x" * 129, b"has space", b"sk-ant-api03-" + b"a" * 30, b"Bearer abcdefghijkl", b""]
)
async def test_an_unacceptable_request_id_is_replaced_before_serve_reads_it(given: bytes) -> None:
    async with client([]) as proxy:
        answer = await proxy.get("/magi/healthz", headers=[(b"x-request-id", given)])
    assert answer.status_code == 200 and answer.headers["x-request-id"] == "made-by-serve"


async def test_a_safe_request_id_is_kept() -> None:
    async with client([]) as proxy:
        answer = await proxy.get("/magi/healthz", headers={"X-Request-ID": "trace-7.a:b"})
    assert answer.headers["x-request-id"] == "trace-7.a:b"


async def test_the_routes_list_needs_the_key_when_keys_are_set() -> None:
    """Issue 40 (9): /-/routes named every app and prefix to anyone."""
    async with client([KEY]) as proxy:
        refused = await proxy.get("/-/routes")
        assert refused.status_code == 401 and "API" in refused.json()["error"]
        assert (await proxy.get("/-/routes", headers={"Authorization": "Bearer wrong"})).status_code == 401
        two = [(b"authorization", f"Bearer {KEY}".encode())] * 2
        assert (await proxy.get("/-/routes", headers=two)).status_code == 401
        allowed = await proxy.get("/-/routes", headers={"Authorization": f"Bearer {KEY}"})
        assert allowed.status_code == 200 and "router" in allowed.text
        assert (await proxy.get("/-/healthz")).status_code == 200  # the proxy's own probe stays open
    async with client([]) as open_proxy:
        assert (await open_proxy.get("/-/routes")).status_code == 200  # no keys: nothing to check
