"""deployments.security and the ``serve`` settings, without Ray: a real Starlette app in process."""

from __future__ import annotations

import hmac
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from pydantic import BaseModel
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from core.errors import ConfigError
from core.settings import describe, load_settings
from deployments.answers import without_server_paths
from deployments.research import inside_roots
from deployments.security import UNAUTHORIZED, GuardConfig, KeyCheck, exposed_without_keys, guard
from deployments.settings import ServeSettings, corpus_roots


def test_key_check_accepts_only_a_bearer_key() -> None:
    check = KeyCheck(["alpha-key", "beta-key"])
    assert check.enabled and check.allows("Bearer beta-key") and check.allows(b"bearer alpha-key")
    for bad in (None, "", "beta-key", "Basic beta-key", "Bearer beta", "Bearer beta-key2", "Bearer  ", "Bearer \ud800"):
        assert not check.allows(bad), bad
    assert "alpha" not in repr(check) and "beta" not in repr(check)
    assert KeyCheck([]).allows(None) and not KeyCheck([]).enabled


def test_keys_are_compared_in_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every key is compared with hmac.compare_digest, also after a match: no early exit to time."""
    calls: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def recording(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", recording)
    assert KeyCheck(["k1", "k2", "k3"]).allows("Bearer k1")
    assert [b for _, b in calls] == [b"k1", b"k2", b"k3"]


def test_api_keys_come_from_the_environment_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAGI_API_KEYS", "key-uno, key-dos ,")
    settings = load_settings()
    assert [k.get_secret_value() for k in settings.api_keys] == ["key-uno", "key-dos"]
    assert "key-uno" not in str(describe(settings)) and "key-uno" not in repr(settings)
    config = tmp_path / "magi.yaml"
    config.write_text("api_keys: [leaked]\n")
    with pytest.raises(ConfigError, match="api_keys: secrets are read from the environment only"):
        load_settings(config)


def test_serve_section_defaults_and_roots(tmp_path: Path) -> None:
    settings = load_settings()
    serve = ServeSettings.of(settings)
    assert (serve.max_body_bytes, serve.queue_size) == (64 * 1024, 10)
    roots = corpus_roots(settings)
    assert roots[1] == settings.data_dir.resolve() / "corpora" and roots[0].name == "corpus"
    (tmp_path / "allowed" / "sub").mkdir(parents=True)
    (tmp_path / "allowed" / "out").symlink_to("/etc")
    (tmp_path / "allowed" / "dangling").symlink_to("/etc/nothing-here")
    mine = corpus_roots(settings.updated({"serve": {"corpus_roots": [str(tmp_path / "allowed")]}}))
    assert inside_roots(str(tmp_path / "allowed" / "sub"), mine)
    assert not inside_roots(str(tmp_path / "allowed" / "missing"), mine)  # missing: refused like outside
    for outside in (
        "/etc",
        "/",
        str(tmp_path / "allowed" / "out"),
        str(tmp_path / "allowed" / "dangling"),
        str(tmp_path / "allowed" / ".." / "allowed-not"),
        str(tmp_path / "allowed" / "sub" / ".." / ".."),
    ):
        assert not inside_roots(outside, mine), outside


def test_error_messages_lose_server_paths() -> None:
    message = "corpus directory /proc/self/fd does not exist; pass --corpus /srv/x, e.g. 'a/b'\x1b[2J"
    assert without_server_paths(message) == (
        "corpus directory <server path> does not exist; pass --corpus <server path>, e.g. 'a/b'"
    )
    assert without_server_paths("fetch https://a.example/x/y failed") == "fetch https://a.example/x/y failed"


@pytest.mark.parametrize(
    ("host", "keys", "exposed"),
    [
        ("127.0.0.1", "", False),
        ("::1", "", False),
        ("localhost", "", False),
        ("0.0.0.0", "", True),
        ("", "", True),
        ("example.org", "", True),
        ("0.0.0.0", "k", False),
    ],
)
def test_exposed_without_keys(host: str, keys: str, exposed: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAGI_API_KEYS", keys)
    assert exposed_without_keys(host, load_settings()) is exposed


async def _echo(request: Request) -> JSONResponse:
    return JSONResponse({"got": len(await request.body())})


@pytest.fixture
async def guarded() -> AsyncIterator[tuple[httpx.AsyncClient, GuardConfig]]:
    app = Starlette(routes=[Route("/echo", _echo, methods=["POST"]), Route("/healthz", _echo)])
    config = guard(app)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
        yield client, config


async def test_guard_asks_for_a_key_once_configured(guarded: tuple[httpx.AsyncClient, GuardConfig]) -> None:
    client, config = guarded
    assert (await client.post("/echo", content=b"x")).status_code == 200  # no keys configured: open
    config.keys = KeyCheck(["s3cret"])
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret"}):
        answer = await client.post("/echo", content=b"x", headers=headers)
        assert answer.status_code == 401 and answer.json() == {"error": UNAUTHORIZED}
        assert "s3cret" not in answer.text and answer.headers["www-authenticate"] == "Bearer"
    assert (await client.post("/echo", content=b"x", headers={"Authorization": "Bearer s3cret"})).json() == {"got": 1}
    assert (await client.get("/healthz")).status_code == 200


async def test_guard_caps_bodies_without_reading_them(guarded: tuple[httpx.AsyncClient, GuardConfig]) -> None:
    client, config = guarded
    config.max_body_bytes = 1024
    assert (await client.post("/echo", content=b"x" * 1024)).json() == {"got": 1024}
    declared = await client.post("/echo", content=b"x" * 5000)
    assert declared.status_code == 413 and "over 1024 bytes" in declared.json()["error"]
    pulled: list[int] = []

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: counted while read, stopped early
        for index in range(1000):
            pulled.append(index)
            yield b"y" * 512

    chunked = await client.post("/echo", content=chunks())
    assert chunked.status_code == 413 and len(pulled) < 10  # stopped after the cap, not at the end
    liar = await client.post("/echo", content=b"x", headers={"Content-Length": "9" * 26})
    assert liar.status_code == 413


class _Topic(BaseModel):
    topic: str


async def test_a_chunked_body_over_the_cap_is_413_even_where_fastapi_parses_it() -> None:
    """FastAPI turns a body it could not read into 400; the guard's 413 is what the caller sees."""
    api = FastAPI()

    @api.post("/research")
    async def submit(body: _Topic) -> dict[str, str]:
        return {"topic": body.topic}

    config = guard(api)
    config.max_body_bytes = 1024

    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"topic": "'
        for _ in range(100):
            yield b"z" * 512
        yield b'"}'

    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://test") as client:
        answer = await client.post("/research", content=chunks(), headers={"content-type": "application/json"})
        assert answer.status_code == 413 and "serve.max_body_bytes" in answer.json()["error"]
        small = await client.post("/research", json={"topic": "ok"})
        assert small.json() == {"topic": "ok"}
