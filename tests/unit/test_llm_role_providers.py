"""A provider per role: ``llm.roles.<role>`` routes each request to its own provider, model and endpoint."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from core.errors import ConfigError, LLMNotConfiguredError
from core.llm import LLMRequest, Message, make_llm, provider_of, resolve_role
from core.llm.base import ToolCallPart, ToolResultPart, ToolSpec
from core.llm.openai import OpenAIClient
from core.llm.python_provider import PythonClient
from core.llm.roles import Endpoint, configured_roles
from core.settings import load_settings

PROVIDER_FILE = """
def answer(request):
    return {"text": "file:" + (request.model or ""), "model": request.model, "usage": {"input_tokens": 2}}
"""


def user(text: str = "hi") -> list[Message]:
    return [Message(role="user", content=text)]


def three_providers(tmp_path: Path, **extra: Any) -> Any:
    provider_file = tmp_path / "other_llm.py"
    provider_file.write_text(PROVIDER_FILE, encoding="utf-8")
    return load_settings(
        overrides={
            "llm": {
                "provider": "python:core.llm.testing:echo",
                "model": "echo-model",
                "roles": {
                    "magi.balthasar": {"provider": f"python:{provider_file}:answer", "model": "file-model"},
                    "magi.casper": {
                        "provider": "openai",
                        "model": "served",
                        "base_url": "http://127.0.0.1:9/v1",
                        "tool_calling": "prompted",
                        "params": {"max_tokens": 64, "temperature": 0.1},
                    },
                },
                **extra,
            }
        }
    )


def test_each_role_resolves_its_own_endpoint_and_falls_back_to_llm(tmp_path: Path) -> None:
    settings = three_providers(tmp_path, models={"magi.melchior": "echo-big"})
    melchior, balthasar, casper = (resolve_role(settings.llm, f"magi.{s}") for s in ("melchior", "balthasar", "casper"))
    assert (melchior.endpoint, melchior.model) == (Endpoint("python:core.llm.testing:echo"), "echo-big")
    assert balthasar.model == "file-model" and balthasar.endpoint is not None
    assert balthasar.endpoint.provider.endswith("other_llm.py:answer")
    assert casper.endpoint == Endpoint("openai", base_url="http://127.0.0.1:9/v1", tool_calling="prompted")
    assert (casper.max_tokens, casper.temperature, casper.label) == (64, 0.1, "openai/served")
    assert casper.endpoint.label == "openai (127.0.0.1:9)"
    assert configured_roles(settings.llm) == ["default", "magi.balthasar", "magi.casper", "magi.melchior"]


async def test_requests_go_to_their_roles_provider_and_answers_name_it(tmp_path: Path) -> None:
    settings = three_providers(tmp_path)
    client = make_llm(settings.llm, role="magi.melchior")
    assert client is not None
    own = await client.complete(LLMRequest(system="s", messages=user("ping")))
    other = await client.complete(LLMRequest(system="s", messages=user(), role="magi.balthasar"))
    assert (own.text, own.provider) == ("ping", "python:core.llm.testing:echo")
    assert (other.text, other.model) == ("file:file-model", "file-model")
    assert isinstance(provider_of(client), PythonClient)
    casper = make_llm(settings.llm, role="magi.casper")
    assert casper is not None and isinstance(provider_of(casper), OpenAIClient)


def test_roles_on_one_endpoint_share_one_provider_client(tmp_path: Path) -> None:
    settings = three_providers(tmp_path, roles={"a": {"model": "x"}, "b": {"model": "y"}})
    client = make_llm(settings.llm, role="a")
    assert client is not None
    router = client.inner  # type: ignore[attr-defined]
    assert router.provider_for("a") is router.provider_for("b") is router.provider_for(None)


def test_a_role_may_have_a_provider_when_the_section_has_none() -> None:
    settings = load_settings(
        overrides={"llm": {"roles": {"critic.worker": {"provider": "python:core.llm.testing:echo"}}}}
    )
    assert make_llm(settings.llm) is None
    assert make_llm(settings.llm, role="critic.worker") is not None
    with pytest.raises(LLMNotConfiguredError, match=r"role 'magi.melchior'.*llm.roles.magi.melchior.provider"):
        make_llm(settings.llm, role="critic.worker").inner.provider_for("magi.melchior")  # type: ignore[union-attr]


def test_bad_role_settings_are_named() -> None:
    with pytest.raises(ConfigError, match=r"unknown LLM provider 'gemini'"):
        make_llm(load_settings(overrides={"llm": {"roles": {"default": {"provider": "gemini"}}}}).llm)
    with pytest.raises(ConfigError, match=r"llm.roles"):
        load_settings(overrides={"llm": {"roles": {"x": {"api_key": "sk-inline"}}}})
    with pytest.raises(ConfigError, match=r"environment variable name"):
        load_settings(overrides={"llm": {"roles": {"x": {"api_key_env": "sk-123 456"}}}})


async def test_require_tool_forces_only_the_first_turn_of_a_tool_loop() -> None:
    settings = load_settings(
        overrides={
            "llm": {"provider": "python:core.llm.testing:echo", "roles": {"agent": {"params": {"require_tool": True}}}}
        }
    )
    client = make_llm(settings.llm, role="agent")
    assert client is not None
    router = client.inner  # type: ignore[attr-defined]
    tool = ToolSpec(name="t", description="d", input_schema={"type": "object"})
    first = LLMRequest(system="s", messages=user(), tools=[tool])
    later = first.model_copy(
        update={
            "messages": [
                *user(),
                Message(role="assistant", content=[ToolCallPart(id="1", name="t")]),
                Message(role="user", content=[ToolResultPart(tool_call_id="1", content="r")]),
            ]
        }
    )
    assert router._route(first)[1].tool_choice == "required"
    assert router._route(later)[1].tool_choice is None
    assert router._route(LLMRequest(system="s", messages=user()))[1].tool_choice is None  # no tools: nothing to force
