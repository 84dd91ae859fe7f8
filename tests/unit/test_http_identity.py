"""One identity per request (deployments/identity.py through the guard), without Ray: a real FastAPI
app in process, called as a client would from chosen addresses."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from core.settings import load_settings
from deployments.identity import address_client, client_address, parse_networks, recalled
from deployments.security import GuardConfig, KeyCheck, guard
from sessions.ids import LOCAL_OWNER, owner_of

KEY_A, KEY_B = "identity-key-alpha", "identity-key-beta"


def _app(keys: list[str], **serve: object) -> tuple[FastAPI, GuardConfig, asyncio.Event]:
    api = FastAPI()
    release = asyncio.Event()

    @api.get("/whoami")
    async def whoami(request: Request) -> JSONResponse:
        caller = recalled(request.scope)
        return JSONResponse({"owner": caller.owner, "client": caller.client})

    @api.get("/slow")
    async def slow() -> JSONResponse:
        await release.wait()
        return JSONResponse({"done": True})

    @api.get("/healthz")
    async def healthz() -> JSONResponse:
        return JSONResponse({"status": "ok"})

    config = guard(api)
    config.configure(load_settings(overrides={"serve": serve} if serve else None))
    config.keys = KeyCheck(keys)
    return api, config, release


@asynccontextmanager
async def _client(api: FastAPI, address: str = "127.0.0.1") -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=api, client=(address, 40000))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        yield client


async def test_two_authorization_headers_are_refused_never_read_as_another_owner() -> None:
    """Issue 40 (1): the guard checked the last header and the owner came from the first."""
    api, _, _ = _app([KEY_A, KEY_B])
    async with _client(api) as client:
        two = [("Authorization", "Basic eA=="), ("Authorization", f"Bearer {KEY_A}")]
        answer = await client.get("/whoami", headers=httpx.Headers(two))
        assert answer.status_code == 400 and "Authorization" in answer.json()["error"]
        assert "認証情報" in answer.json()["error"]  # Japanese by default
        english = httpx.Headers([*two, ("Accept-Language", "en-US,en;q=0.9")])
        assert "more than one credential" in (await client.get("/whoami", headers=english)).json()["error"]
        both = {"Authorization": f"Bearer {KEY_A}, Bearer {KEY_B}"}
        assert (await client.get("/whoami", headers=both)).status_code == 400
        spaced = {"Authorization": f"Bearer {KEY_A} {KEY_B}"}
        assert (await client.get("/whoami", headers=spaced)).status_code == 400
        same_twice = httpx.Headers([("Authorization", f"Bearer {KEY_A}")] * 2)
        assert (await client.get("/whoami", headers=same_twice)).status_code == 400
        assert (await client.get("/healthz", headers=same_twice)).status_code == 400  # open paths too


async def test_the_owner_is_the_key_the_guard_accepted() -> None:
    api, _, _ = _app([KEY_A, KEY_B])
    async with _client(api) as client:
        a = (await client.get("/whoami", headers={"Authorization": f"Bearer {KEY_A}"})).json()
        b = (await client.get("/whoami", headers={"Authorization": f"bearer  {KEY_B} "})).json()
        assert a == {"owner": owner_of(KEY_A), "client": owner_of(KEY_A)}
        assert b == {"owner": owner_of(KEY_B), "client": owner_of(KEY_B)}
        assert (await client.get("/whoami", headers={"Authorization": "Bearer nope"})).status_code == 401


async def test_without_keys_callers_share_an_owner_and_are_told_apart_by_address() -> None:
    api, _, _ = _app([])
    async with _client(api, "127.0.0.1") as one, _client(api, "127.0.0.2") as two:
        first = (await one.get("/whoami", headers={"Authorization": "Bearer anything"})).json()
        second = (await two.get("/whoami")).json()
    assert first["owner"] == second["owner"] == LOCAL_OWNER
    assert first["client"] == address_client("127.0.0.1") != second["client"] == address_client("127.0.0.2")
    assert "127.0.0" not in first["client"]  # a digest, not the address


def test_a_forwarding_header_counts_only_from_a_trusted_proxy() -> None:
    trusted = parse_networks(["10.0.0.0/8"])
    header = b"x-forwarded-for"

    def scope(peer: str, forwarded: str | None) -> dict[str, object]:
        headers = [(header, forwarded.encode())] if forwarded is not None else []
        return {"client": (peer, 1), "headers": headers}

    assert client_address(scope("10.1.2.3", "203.0.113.7"), header, trusted) == "203.0.113.7"
    assert client_address(scope("10.1.2.3", "6.6.6.6, 203.0.113.7, 10.9.9.9"), header, trusted) == "203.0.113.7"
    assert client_address(scope("198.51.100.4", "203.0.113.7"), header, trusted) == "198.51.100.4"  # not trusted
    assert client_address(scope("10.1.2.3", "203.0.113.7"), None, trusted) == "10.1.2.3"  # no header configured
    assert client_address(scope("10.1.2.3", "not-an-address"), header, trusted) == "10.1.2.3"
    assert client_address(scope("10.1.2.3", None), header, trusted) == "10.1.2.3"


async def test_a_trusted_proxy_forwards_the_address_through_the_guard() -> None:
    api, _, _ = _app([], client_address_header="X-Real-IP", trusted_proxies=["127.0.0.1"])
    async with _client(api, "127.0.0.1") as proxy, _client(api, "127.0.0.9") as stranger:
        via = (await proxy.get("/whoami", headers={"X-Real-IP": "192.0.2.10"})).json()
        spoofed = (await stranger.get("/whoami", headers={"X-Real-IP": "192.0.2.10"})).json()
    assert via["client"] == address_client("192.0.2.10")
    assert spoofed["client"] == address_client("127.0.0.9")


async def test_open_paths_answer_while_the_data_slots_are_taken() -> None:
    """Issue 40 (4): 110 open event streams made /healthz and the pages time out."""
    api, config, release = _app([])
    config.reserve(3)  # one data slot left beside the two reserved
    async with _client(api) as client:
        held = asyncio.ensure_future(client.get("/slow"))
        while (await client.get("/whoami")).status_code != 503:  # until the slow one holds the slot
            await asyncio.sleep(0)
        refused = await client.get("/whoami", headers={"Accept-Language": "en"})
        assert refused.status_code == 503 and int(refused.headers["retry-after"]) > 0
        assert "busy" in refused.json()["error"]
        assert (await client.get("/healthz")).status_code == 200
        release.set()
        assert (await held).status_code == 200
        assert (await client.get("/whoami")).status_code == 200


@pytest.mark.parametrize(
    "body", [b'{"text": "\\ud800"}', b'{"\\udc00": 1}', b'{"list": ["ok", {"deep": "a\\udbffb"}]}']
)
async def test_a_lone_surrogate_in_any_body_is_422(body: bytes) -> None:
    api = FastAPI()

    @api.post("/take")
    async def take(request: Request) -> JSONResponse:
        return JSONResponse({"got": len(await request.body())})

    guard(api)
    async with _client(api) as client:
        answer = await client.post("/take", content=body, headers={"content-type": "application/json"})
        assert answer.status_code == 422 and "サロゲート" in answer.json()["error"]
        paired = await client.post("/take", content=b'{"text": "\\ud83d\\ude00"}')
        assert paired.status_code == 200
