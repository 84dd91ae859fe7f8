"""Per-role models and parameters: resolve_role's fallbacks, RoleClient, make_llm(role=...), settings sources."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import ConfigError
from core.llm import LLMRequest, Message, generate, make_llm, resolve_role
from core.llm.roles import RoleClient
from core.llm.streaming import collect
from core.llm.testing import ScriptedClient
from core.settings import LLMRoleParams, load_settings

SETTINGS = load_settings(
    overrides={
        "llm": {
            "model": "claude-sonnet-4-6",
            "models": {"default": "claude-haiku-4-5", "magi.melchior": "claude-opus-4-6"},
            "params": {
                "critic.worker": LLMRoleParams(temperature=0.7, max_tokens=300),
                "default": LLMRoleParams(max_tokens=900),
            },
        }
    }
)


def request(**kw: object) -> LLMRequest:
    return LLMRequest(system="s", messages=[Message(role="user", content="q")], **kw)  # type: ignore[arg-type]


def test_resolution_falls_back_role_then_default_then_llm_model() -> None:
    melchior = resolve_role(SETTINGS.llm, "magi.melchior")
    assert (melchior.model, melchior.temperature, melchior.max_tokens) == ("claude-opus-4-6", None, 900)
    critic = resolve_role(SETTINGS.llm, "critic.worker")
    assert (critic.model, critic.temperature, critic.max_tokens) == ("claude-haiku-4-5", 0.7, 300)
    assert resolve_role(SETTINGS.llm, None).role == "default"
    bare = resolve_role(load_settings(overrides={"llm": {"model": "m0"}}).llm, "advisor.orchestrator")
    assert (bare.model, bare.temperature, bare.max_tokens) == ("m0", None, None)


async def test_role_client_fills_the_request_and_per_call_role_wins() -> None:
    inner = ScriptedClient("a", "b", "c")
    client = RoleClient(inner, SETTINGS.llm, "critic.worker")

    async def run() -> None:
        await client.complete(request())
        await client.complete(request(role="magi.melchior", temperature=0.2))
        await collect(client.stream(request(model="claude-explicit")))

    await run()
    first, second, third = inner.requests
    assert (first.role, first.model, first.temperature, first.max_tokens) == (
        "critic.worker",
        "claude-haiku-4-5",
        0.7,
        300,
    )
    assert (second.role, second.model, second.temperature, second.max_tokens) == (
        "magi.melchior",
        "claude-opus-4-6",
        0.2,
        900,
    )
    assert third.model == "claude-explicit"  # an explicit model beats the role's


async def test_make_llm_binds_a_role(tmp_path: Path) -> None:
    (tmp_path / "show.py").write_text(
        "def show(request):\n    return f'{request.role} {request.model} {request.temperature} {request.max_tokens}'\n",
        encoding="utf-8",
    )
    settings = SETTINGS.updated({"llm": {"provider": f"python:{tmp_path / 'show.py'}:show"}})
    client = make_llm(settings.llm, role="critic.worker")
    assert client is not None
    assert (await client.complete(request())).text == "critic.worker claude-haiku-4-5 0.7 300"


def test_roles_come_from_yaml_and_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "magi.yaml"
    config.write_text(
        "llm:\n  models:\n    magi.balthasar: claude-sonnet-4-5\n  params:\n    magi.balthasar:\n"
        "      temperature: 0.4\n  max_concurrency: 3\n",
        encoding="utf-8",
    )
    settings = load_settings(config)
    assert resolve_role(settings.llm, "magi.balthasar").model == "claude-sonnet-4-5"
    assert resolve_role(settings.llm, "magi.balthasar").temperature == 0.4
    assert settings.llm.max_concurrency == 3
    monkeypatch.setenv("MAGI_LLM_MODELS", '{"default": "claude-opus-4-7"}')
    assert resolve_role(load_settings().llm, "anything").model == "claude-opus-4-7"
    config.write_text("llm:\n  params:\n    x:\n      temperature: 3\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"llm.params.*less than or equal to 1"):
        load_settings(config)


async def test_generate_passes_a_per_call_role(tmp_path: Path) -> None:
    (tmp_path / "show.py").write_text(
        "def show(request):\n    return f'{request.role} {request.model}'\n", encoding="utf-8"
    )
    settings = SETTINGS.updated({"llm": {"provider": f"python:{tmp_path / 'show.py'}:show"}})
    client = make_llm(settings.llm)  # no role bound: each call names its own
    assert client is not None
    user = [Message(role="user", content="q")]
    melchior = await generate(client, system="s", messages=user, role="magi.melchior")
    assert melchior.response.text == "magi.melchior claude-opus-4-6"
    plain = await generate(client, system="s", messages=user)
    assert plain.response.text == "default claude-haiku-4-5"
