"""Build the configured LLM client from ``Settings`` alone, so a Ray worker can rebuild it too.

``make_llm`` returns the provider wrapped twice: a :class:`RoleClient` (model and parameters of the
caller's role) inside a :class:`LimitedClient` (cluster-wide concurrency limit). With ``meter``,
every response is also counted (tokens, cost). The Anthropic SDK is imported only when that
provider is chosen (it costs ~1.5 s per process).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

from core.errors import ConfigError, LLMNotConfiguredError
from core.llm.base import LLMClient, LLMRequest, LLMResponse
from core.llm.cost import UsageMeter
from core.llm.limiter import LimitedClient
from core.llm.python_provider import PREFIX, PythonClient
from core.llm.replay import RecordingClient, ReplayClient
from core.llm.roles import RoleClient
from core.llm.streaming import StreamEnd, StreamEvent, stream
from core.settings import LLMSettings

ALLOWED = "anthropic, replay, record, or python:MODULE_OR_FILE:FUNCTION"


def _cassette(llm: LLMSettings, provider: str) -> Path:
    if llm.cassette is None:
        raise ConfigError(f"MAGI_LLM_PROVIDER={provider} needs MAGI_LLM_CASSETTE (path of the cassette file)")
    return llm.cassette


class MeteredClient:
    """Counts every response of ``inner`` (calls, tokens, cost) into ``meter``."""

    def __init__(self, inner: LLMClient, meter: UsageMeter) -> None:
        self.inner = inner
        self.meter = meter

    async def complete(self, request: LLMRequest) -> LLMResponse:
        response = await self.inner.complete(request)
        self.meter.add(response)
        return response

    async def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        async for event in stream(self.inner, request):
            if isinstance(event, StreamEnd):
                self.meter.add(event.response)
            yield event


def provider_of(client: LLMClient) -> LLMClient:
    """The provider client under the wrappers ``make_llm`` adds."""
    while isinstance(client, LimitedClient | RoleClient | MeteredClient):
        client = client.inner
    return client


def make_llm(llm: LLMSettings, role: str | None = None, *, meter: UsageMeter | None = None) -> LLMClient | None:
    """The client for ``llm_provider`` (role-aware, limited, optionally metered), or None when no provider is set."""
    provider = _provider(llm)
    if provider is None:
        return None
    client: LLMClient = RoleClient(provider, llm, role)
    if meter is not None:
        client = MeteredClient(client, meter)
    return LimitedClient(client, llm.max_concurrency)


def _provider(llm: LLMSettings) -> LLMClient | None:
    """The bare provider client named by ``llm_provider``."""
    raw = (llm.provider or "").strip()
    provider = raw.lower()
    if not raw:
        return None
    if provider == "replay":
        cassette = _cassette(llm, provider)
        if not cassette.is_file():
            raise ConfigError(f"LLM cassette {cassette} does not exist; record it first with MAGI_LLM_PROVIDER=record")
        return ReplayClient(cassette, default_model=llm.model)
    if provider in ("anthropic", "record"):
        record_to = _cassette(llm, provider) if provider == "record" else None
        from core.llm.anthropic import AnthropicClient

        client = AnthropicClient(llm)
        return client if record_to is None else RecordingClient(client, record_to, default_model=llm.model)
    if raw.startswith(PREFIX):
        python_client = PythonClient(raw)
        python_client.load()  # fail now, with the configuration error, not on the first request
        return python_client
    raise ConfigError(f"unknown LLM provider {raw!r} (MAGI_LLM_PROVIDER); allowed: {ALLOWED}")


def require_llm(llm: LLMSettings, command: str, role: str | None = None) -> LLMClient:
    """The configured client, or ``LLMNotConfiguredError`` telling the user how to configure one."""
    client = make_llm(llm, role)
    if client is None:
        raise LLMNotConfiguredError(
            f"`{command}` needs an LLM, but none is configured. Set MAGI_LLM_PROVIDER to anthropic "
            "(with ANTHROPIC_API_KEY), replay (with MAGI_LLM_CASSETTE), or python:MODULE:FUNCTION."
        )
    return client


__all__ = [
    "ALLOWED",
    "MeteredClient",
    "make_llm",
    "provider_of",
    "require_llm",
]
