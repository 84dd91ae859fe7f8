"""The ``llm`` Serve app over real HTTP: SmolLM2-135M on llama.cpp in a replica, reached through the
project's own OpenAI-compatible client, plus the stand-in that answers while the app is off."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from core.llm import LLMRequest, Message, make_llm
from core.llm.streaming import collect, stream
from core.settings import Settings, load_settings
from tests.ports import free_port

KEY = "llm-key-7"
SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"type": "string", "enum": ["yes", "no"]}, "reason": {"type": "string"}},
    "required": ["verdict"],
}


def app_settings(tmp_path: Path, enabled: bool) -> Settings:
    server = {"enabled": enabled, "parallel": 2, "threads": 1, "num_cpus": 0, "context_tokens": 1024}
    return load_settings(overrides={"data_dir": tmp_path, "api_keys": [KEY], "llm_server": server})


@pytest.fixture(scope="module")
def served(ray_cluster: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from ray import serve

    from deployments import proxy
    from deployments.llm import APP_NAME, ROUTE_PREFIX, build_app

    port = free_port()
    proxy.start_serve("127.0.0.1", port)
    try:
        serve.run(
            build_app(app_settings(tmp_path_factory.mktemp("llm-app"), True)), name=APP_NAME, route_prefix=ROUTE_PREFIX
        )
        yield f"http://127.0.0.1:{port}{ROUTE_PREFIX}"
    finally:
        serve.shutdown()


def client_settings(base: str, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("LLM_APP_KEY", KEY)
    llm = {
        "provider": "openai",
        "base_url": f"{base}/v1",
        "model": "smollm2-135m-instruct",
        "roles": {"default": {"api_key_env": "LLM_APP_KEY"}},
        "max_retries": 0,
        "timeout_s": 300,
    }
    return load_settings(overrides={"llm": llm})


async def test_chat_stream_and_schema_through_the_app(served: str, monkeypatch: pytest.MonkeyPatch) -> None:
    client = make_llm(client_settings(served, monkeypatch).llm)
    assert client is not None
    ask = LLMRequest(system="Be brief.", messages=[Message(role="user", content="Say hello.")], max_tokens=8)
    plain = await client.complete(ask)
    assert plain.text and plain.model == "smollm2-135m-instruct" and plain.usage.output_tokens > 0
    assert plain.provider.startswith("openai (127.0.0.1:")
    deltas, streamed = await collect(stream(client, ask))
    assert len(deltas) >= 2 and "".join(deltas) == streamed.text and streamed.usage.output_tokens > 0
    judged = await client.complete(
        LLMRequest(
            system="Answer in JSON.",
            messages=[Message(role="user", content="Is water wet?")],
            output_schema=SCHEMA,
            max_tokens=48,
        )
    )
    assert judged.output is not None and judged.output["verdict"] in ("yes", "no")  # decoded under the schema


def test_the_app_checks_keys_and_bodies(served: str) -> None:
    auth = {"Authorization": f"Bearer {KEY}"}
    assert "parts" not in httpx.get(f"{served}/healthz").json()  # a probe without the key: no parts
    health = httpx.get(f"{served}/healthz", headers=auth).json()
    assert health["status"] == "ok" and health["parts"]["model"]["detail"] == "smollm2-135m-instruct loaded"
    assert httpx.get(f"{served}/v1/models").status_code == 401
    assert httpx.get(f"{served}/v1/models", headers=auth).json()["data"][0]["id"] == "smollm2-135m-instruct"
    bad = httpx.post(f"{served}/v1/chat/completions", json={"messages": []}, headers=auth)
    assert bad.status_code == 422 and "'messages' must be a non-empty list" in bad.json()["error"]["message"]
    schema = {"type": "json_schema", "json_schema": {"name": "x", "schema": {"$ref": "#/$defs/Missing"}}}
    refused = httpx.post(
        f"{served}/v1/chat/completions",
        json={"messages": [{"role": "user", "content": "x"}], "max_tokens": 2, "response_format": schema},
        headers=auth,
    )
    assert refused.status_code == 400 and "$ref" in refused.json()["error"]["message"]


def test_the_app_off_says_how_to_turn_it_on(served: str, tmp_path: Path) -> None:
    from ray import serve

    from deployments.llm import build_app

    serve.run(build_app(app_settings(tmp_path, False)), name="llm-off", route_prefix="/llm-off")
    try:
        answer = httpx.post(
            served.replace("/llm", "/llm-off") + "/v1/chat/completions",
            json={"messages": [{"role": "user", "content": "x"}]},
            headers={"Authorization": f"Bearer {KEY}"},
        )
        health = httpx.get(served.replace("/llm", "/llm-off") + "/healthz", headers={"Authorization": f"Bearer {KEY}"})
    finally:
        serve.delete("llm-off")
    assert answer.status_code == 503 and "llm_server.enabled" in answer.json()["error"]["message"]
    assert health.status_code == 503 and "llm_server.enabled" in health.json()["parts"]["model"]["detail"]
