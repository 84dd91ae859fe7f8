"""Build the configured LLM client from ``Settings`` alone, so a Ray worker can rebuild it too.

The Anthropic SDK is imported only when that provider is chosen (it costs ~1.5 s per process).
"""

from __future__ import annotations

from pathlib import Path

from core.errors import ConfigError, LLMNotConfiguredError
from core.llm.base import LLMClient
from core.llm.python_provider import PREFIX, PythonClient
from core.llm.replay import RecordingClient, ReplayClient
from core.settings import Settings

ALLOWED = "anthropic, replay, record, or python:MODULE_OR_FILE:FUNCTION"


def _cassette(settings: Settings, provider: str) -> Path:
    if settings.llm.cassette is None:
        raise ConfigError(f"MAGI_LLM_PROVIDER={provider} needs MAGI_LLM_CASSETTE (path of the cassette file)")
    return settings.llm.cassette


def make_llm(settings: Settings) -> LLMClient | None:
    """The client for ``llm_provider``, or None when no provider is set."""
    raw = (settings.llm.provider or "").strip()
    provider = raw.lower()
    if not raw:
        return None
    if provider == "replay":
        cassette = _cassette(settings, provider)
        if not cassette.is_file():
            raise ConfigError(f"LLM cassette {cassette} does not exist; record it first with MAGI_LLM_PROVIDER=record")
        return ReplayClient(cassette)
    if provider in ("anthropic", "record"):
        record_to = _cassette(settings, provider) if provider == "record" else None
        from core.llm.anthropic import AnthropicClient

        client = AnthropicClient(settings)
        return client if record_to is None else RecordingClient(client, record_to)
    if raw.startswith(PREFIX):
        python_client = PythonClient(raw)
        python_client.load()  # fail now, with the configuration error, not on the first request
        return python_client
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
