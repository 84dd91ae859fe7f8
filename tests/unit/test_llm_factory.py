"""``make_llm`` / ``require_llm``: every provider form and every configuration mistake."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from core.errors import ConfigError, LLMNotConfiguredError
from core.llm import LimitedClient, LLMClient, make_llm, provider_of, require_llm
from core.llm.anthropic import AnthropicClient
from core.llm.offline import offline_config_path
from core.llm.python_provider import PythonClient
from core.llm.replay import RecordingClient, ReplayClient
from core.settings import load_settings


def unwrap(client: LLMClient | None) -> LLMClient:
    """The provider under make_llm's wrappers (every configured client is limited)."""
    assert isinstance(client, LimitedClient)
    return provider_of(client)


def test_unset_provider_means_no_llm() -> None:
    assert make_llm(load_settings().llm) is None


def test_require_llm_explains_how_to_configure() -> None:
    with pytest.raises(LLMNotConfiguredError) as info:
        require_llm(load_settings().llm, "magi research --summarise")
    assert str(info.value) == (
        "`magi research --summarise` needs an LLM, but none is configured. Set MAGI_LLM_PROVIDER to "
        "anthropic (with ANTHROPIC_API_KEY), openai (with OPENAI_API_KEY, or MAGI_LLM_BASE_URL for a local "
        "server), replay (with MAGI_LLM_CASSETTE), or python:MODULE:FUNCTION; offline, `magi serve --config "
        f"{offline_config_path()}` runs every system on its shipped model."
    )


def test_unknown_provider_lists_allowed_forms() -> None:
    with pytest.raises(ConfigError, match=r"provider .gemini.*anthropic, openai, replay, record, or python:"):
        make_llm(load_settings(overrides={"llm": {"provider": "gemini"}}).llm)


def test_anthropic_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAGI_LLM_PROVIDER", "anthropic")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    client = unwrap(require_llm(load_settings().llm, "magi ask"))
    assert isinstance(client, AnthropicClient)
    assert client.base_url == "https://api.anthropic.com"


def test_anthropic_needs_key_or_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(LLMNotConfiguredError, match=r"ANTHROPIC_API_KEY.*ANTHROPIC_BASE_URL"):
        make_llm(load_settings(overrides={"llm": {"provider": "anthropic"}}).llm)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:8080")
    client = unwrap(make_llm(load_settings(overrides={"llm": {"provider": "anthropic"}}).llm))
    assert isinstance(client, AnthropicClient) and client.base_url == "http://127.0.0.1:8080"


def test_replay_and_record_need_a_cassette(tmp_path: Path) -> None:
    for provider in ("replay", "record"):
        with pytest.raises(ConfigError, match=f"MAGI_LLM_PROVIDER={provider} needs MAGI_LLM_CASSETTE"):
            make_llm(load_settings(overrides={"anthropic_api_key": "k", "llm": {"provider": provider}}).llm)
    with pytest.raises(ConfigError, match=r"does not exist; record it first"):
        make_llm(load_settings(overrides={"llm": {"provider": "replay", "cassette": tmp_path / "none.jsonl"}}).llm)
    (tmp_path / "c.jsonl").write_text("", encoding="utf-8")
    replay = unwrap(
        make_llm(load_settings(overrides={"llm": {"provider": "replay", "cassette": tmp_path / "c.jsonl"}}).llm)
    )
    assert isinstance(replay, ReplayClient)
    recorder = unwrap(
        make_llm(
            load_settings(
                overrides={"anthropic_api_key": "k", "llm": {"provider": "record", "cassette": tmp_path / "r.jsonl"}}
            ).llm
        )
    )
    assert isinstance(recorder, RecordingClient) and isinstance(recorder.inner, AnthropicClient)


def test_python_provider_is_loaded_eagerly(tmp_path: Path) -> None:
    (tmp_path / "fake.py").write_text("def answer(request):\n    return 'ok'\n", encoding="utf-8")
    client = unwrap(make_llm(load_settings(overrides={"llm": {"provider": "python:fake.py:answer"}}).llm))
    assert isinstance(client, PythonClient)
    with pytest.raises(ConfigError, match=r"has no function 'missing'"):
        make_llm(load_settings(overrides={"llm": {"provider": "python:fake.py:missing"}}).llm)


def test_settings_rebuild_the_client_in_another_process() -> None:
    settings = load_settings(overrides={"anthropic_api_key": "k", "llm": {"provider": "anthropic"}})
    rebuilt = unwrap(make_llm(pickle.loads(pickle.dumps(settings)).llm))
    assert isinstance(rebuilt, AnthropicClient)
    wrapped = pickle.loads(pickle.dumps(make_llm(settings.llm)))  # the whole chain pickles (Ray workers)
    assert isinstance(unwrap(wrapped), AnthropicClient)
