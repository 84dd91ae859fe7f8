"""Build the configured LLM client from ``Settings`` alone, so a Ray worker can rebuild it too."""

from __future__ import annotations

from core.errors import ConfigError, LLMNotConfiguredError
from core.llm.anthropic import AnthropicClient
from core.llm.base import LLMClient
from core.llm.python_provider import PREFIX, PythonClient
from core.llm.replay import RecordingClient, ReplayClient
from core.settings import Settings

ALLOWED = "anthropic, replay, record, or python:MODULE_OR_FILE:FUNCTION"


def _cassette(settings: Settings, provider: str) -> str:
    if settings.llm_cassette is None:
        raise ConfigError(f"MAGI_LLM_PROVIDER={provider} needs MAGI_LLM_CASSETTE (path of the cassette file)")
    return str(settings.llm_cassette)


def make_llm(settings: Settings) -> LLMClient | None:
    """The client for ``llm_provider``, or None when no provider is set."""
    raw = (settings.llm_provider or "").strip()
    if not raw:
        return None
    provider = raw.lower()
    if provider == "anthropic":
        return AnthropicClient(settings)
    if provider == "replay":
        cassette = _cassette(settings, provider)
        if settings.llm_cassette is not None and not settings.llm_cassette.is_file():
            raise ConfigError(
                f"LLM cassette {cassette} does not exist; record it first with MAGI_LLM_PROVIDER=record"
            )
        return ReplayClient(cassette)
    if provider == "record":
        return RecordingClient(AnthropicClient(settings), _cassette(settings, provider))
    if raw.startswith(PREFIX):
        client = PythonClient(raw)
        client.load()  # fail now, with the configuration error, not on the first request
        return client
    raise ConfigError(f"unknown LLM provider {raw!r} (MAGI_LLM_PROVIDER); allowed: {ALLOWED}")


def require_llm(settings: Settings, command: str) -> LLMClient:
    """The configured client, or ``LLMNotConfiguredError`` telling the user how to configure one."""
    client = make_llm(settings)
    if client is None:
        raise LLMNotConfiguredError(
            f"`{command}` needs an LLM, but none is configured. Set MAGI_LLM_PROVIDER to anthropic "
            "(with ANTHROPIC_API_KEY), replay (with MAGI_LLM_CASSETTE), or python:MODULE:FUNCTION."
        )
    return client
