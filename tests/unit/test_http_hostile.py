"""Hardening II at the HTTP layer, without Ray: each attack of issue 21 sent to a real FastAPI app in
process (deployments/security.py, deployments/validation.py), then the clean answer checked."""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys

import httpx
import pytest
from fastapi import FastAPI
from fastapi.responses import HTMLResponse

from core.errors import ConfigError
from core.settings import load_settings
from deployments.security import content_security_policy, exposed_without_keys, guard

SCRIPT = '"use strict"; document.title = "ok";'
PAGE = f'<html><head></head><body><a id="x">x</a><script>{SCRIPT}</script></body></html>'


def _sha(script: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(script.encode()).digest()).decode() + "'"


async def test_every_html_page_carries_a_policy_that_runs_only_its_own_scripts() -> None:
    """Issue 21 (1): no inline script execution from data, on every page an app serves (docs too)."""
    api = FastAPI()

    @api.get("/page")
    async def page() -> HTMLResponse:
        return HTMLResponse(PAGE)

    @api.get("/json")
    async def data() -> dict[str, str]:
        return {"a": "b"}

    guard(api)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://test") as client:
        answer = await client.get("/page")
        policy = answer.headers["content-security-policy"]
        assert answer.text == PAGE
        script_src = next(p for p in policy.split("; ") if p.startswith("script-src"))
        assert script_src == f"script-src 'self' {_sha(SCRIPT)}"
        assert "unsafe-inline" not in script_src and "unsafe-eval" not in policy
        assert "object-src 'none'" in policy and "base-uri 'none'" in policy and "frame-ancestors 'none'" in policy
        docs = await client.get("/docs")  # FastAPI's own page: its inline script and its CDN only
        docs_policy = docs.headers["content-security-policy"]
        assert "https://cdn.jsdelivr.net" in docs_policy and "unsafe-inline" not in docs_policy.split("; ")[1]
        assert "content-security-policy" not in (await client.get("/json")).headers


def test_a_policy_names_no_origin_a_page_does_not_load() -> None:
    page = b'<script src="http://plain.example/x.js"></script><script src="/own.js"></script>'
    policy = content_security_policy(page)
    assert "plain.example" not in policy and "script-src 'self';" in policy


BLANK_OR_MALFORMED = ['[""]', '["  "]', '["ok-key", ""]', " , ", '["a b"]', '["tab\\there"]', "   ", "\t", "[1, 2]"]


@pytest.mark.parametrize("keys", [*BLANK_OR_MALFORMED, '"one"', "{}"])
def test_blank_api_keys_are_refused_and_never_shown(keys: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 21 (2): ``MAGI_API_KEYS='[""]'`` used to leave every route open and silence the warning."""
    monkeypatch.setenv("MAGI_API_KEYS", keys)
    with pytest.raises(ConfigError, match="MAGI_API_KEYS") as refused:
        load_settings()
    assert "ok-key" not in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.parametrize("keys", ["", "[]"])
def test_an_empty_variable_still_means_no_keys_and_the_warning_shows(
    keys: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MAGI_API_KEYS", keys)
    assert exposed_without_keys("0.0.0.0", load_settings())
    assert not exposed_without_keys("127.0.0.1", load_settings())


@pytest.mark.parametrize("keys", ['[""]', "   "])
def test_magi_serve_with_a_blank_key_stops_at_once_with_one_line(keys: str) -> None:
    """Issue 40 (3): ``MAGI_API_KEYS='   '`` started an open server without a word."""
    env = {**os.environ, "MAGI_API_KEYS": keys}
    done = subprocess.run(
        [sys.executable, "-m", "cli.main", "serve", "--host", "0.0.0.0", "--address", "127.0.0.1:1"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "MAGI_API_KEYS" in lines[0] and ("empty" in lines[0] or "names nothing" in lines[0])
