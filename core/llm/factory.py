"""Build the configured LLM clients from ``Settings`` alone, so a Ray worker can rebuild them too.

``make_llm`` returns a :class:`RoleRouter` (each request goes to the provider, model and parameters
of its role: ``llm.roles``, see core.llm.roles) inside a :class:`LimitedClient` (cluster-wide
concurrency limit). With ``meter``, every response is also counted (tokens, cost). Provider clients
are built once per endpoint and shared by the roles that use it. The Anthropic and OpenAI SDKs are
imported only when a role uses them (each costs ~1 s per process).
"""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from core.errors import ConfigError, LLMNotConfiguredError
from core.llm import metrics as llm_metrics
from core.llm.base import LLMClient, LLMRequest, LLMResponse
from core.llm.cost import UsageMeter
from core.llm.limiter import LimitedClient
from core.llm.offline import offline_hint
from core.llm.python_provider import PREFIX, PythonClient
from core.llm.replay import RecordingClient, ReplayClient
from core.llm.roles import Endpoint, RoleClient, apply_resolved, resolve_role
from core.llm.streaming import StreamEnd, StreamEvent, stream
from core.settings import LLMSettings

ALLOWED = "anthropic, openai, replay, record, or python:MODULE_OR_FILE:FUNCTION"


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


class RoleRouter:
    """Sends each request to the provider of its role, with the role's model and parameters filled in,
    and stamps the answer with who gave it (``LLMResponse.provider``)."""

    def __init__(self, llm: LLMSettings, role: str | None = None) -> None:
        self.llm = llm
        self.role = role
        self._clients: dict[Endpoint, LLMClient] = {}
        self._lock = threading.Lock()
        self.provider_for(role)  # a bad configuration of the caller's own role fails now, not on first use

    def __getstate__(self) -> dict[str, Any]:
        return {"llm": self.llm, "role": self.role}  # clients are rebuilt in the other process

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["llm"], state["role"])  # type: ignore[misc]

    def provider_for(self, role: str | None) -> LLMClient:
        """The provider client of ``role`` (built on first use, shared by roles on the same endpoint)."""
        resolved = resolve_role(self.llm, role or self.role)
        if resolved.endpoint is None:
            raise LLMNotConfiguredError(
                f"no LLM provider is configured for the role {resolved.role!r}: set MAGI_LLM_PROVIDER, or "
                f"llm.roles.{resolved.role}.provider (or llm.roles.default.provider) in magi.yaml"
            )
        with self._lock:
            client = self._clients.get(resolved.endpoint)
            if client is None:
                client = self._clients[resolved.endpoint] = build_provider(self.llm, resolved.endpoint)
        return client

    def _route(self, request: LLMRequest) -> tuple[LLMClient, LLMRequest, str, str]:
        resolved = resolve_role(self.llm, request.role or self.role)
        client = self.provider_for(resolved.role)
        assert resolved.endpoint is not None
        return client, apply_resolved(resolved, request), resolved.endpoint.label, resolved.role

    async def complete(self, request: LLMRequest) -> LLMResponse:
        client, routed, label, role = self._route(request)
        model, started = routed.model or self.llm.model, time.perf_counter()
        with llm_metrics.observed_call(role, model):
            response = await client.complete(routed)
        llm_metrics.record_response(role, model, response, time.perf_counter() - started)
        return response.model_copy(update={"provider": label})

    async def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        client, routed, label, role = self._route(request)
        model, started = routed.model or self.llm.model, time.perf_counter()
        with llm_metrics.observed_call(role, model):
            async for event in stream(client, routed):
                if isinstance(event, StreamEnd):
                    llm_metrics.record_response(role, model, event.response, time.perf_counter() - started)
                    event = StreamEnd(event.response.model_copy(update={"provider": label}))
                yield event


def provider_of(client: LLMClient) -> LLMClient:
    """The provider client under the wrappers ``make_llm`` adds (for a router: its own role's)."""
    while isinstance(client, LimitedClient | RoleClient | MeteredClient | RoleRouter):
        client = client.provider_for(client.role) if isinstance(client, RoleRouter) else client.inner
    return client


def make_llm(llm: LLMSettings, role: str | None = None, *, meter: UsageMeter | None = None) -> LLMClient | None:
    """The client of ``role`` (routed per request role, limited, optionally metered), or None when
    no provider is configured for ``role``."""
    if resolve_role(llm, role).endpoint is None:
        return None
    client: LLMClient = RoleRouter(llm, role)
    if meter is not None:
        client = MeteredClient(client, meter)
    return LimitedClient(client, llm.max_concurrency)


def build_provider(llm: LLMSettings, endpoint: Endpoint) -> LLMClient:
    """The bare provider client of one endpoint."""
    raw = endpoint.provider.strip()
    provider = raw.lower()
    if provider == "replay":
        cassette = _cassette(llm, provider)
        if not cassette.is_file():
            raise ConfigError(f"LLM cassette {cassette} does not exist; record it first with MAGI_LLM_PROVIDER=record")
        return ReplayClient(cassette, default_model=llm.model)
    if provider in ("anthropic", "record"):
        record_to = _cassette(llm, provider) if provider == "record" else None
        from core.llm.anthropic import AnthropicClient

        client = AnthropicClient(llm, endpoint=endpoint)
        return client if record_to is None else RecordingClient(client, record_to, default_model=llm.model)
    if provider == "openai":
        from core.llm.openai import OpenAIClient

        return OpenAIClient(llm, endpoint)
    if raw.startswith(PREFIX):
        python_client = PythonClient(raw)
        python_client.load()  # fail now, with the configuration error, not on the first request
        return python_client
    raise ConfigError(f"unknown LLM provider {raw!r} (MAGI_LLM_PROVIDER or llm.roles); allowed: {ALLOWED}")


def require_llm(llm: LLMSettings, command: str, role: str | None = None) -> LLMClient:
    """The configured client, or ``LLMNotConfiguredError`` telling the user how to configure one: when
    no provider is set for ``role``, and when the provider is a scripted model made for other roles
    (the council's scripted model cannot judge an idea: refused now, not on the first call)."""
    client = make_llm(llm, role)
    if client is None:
        raise LLMNotConfiguredError(
            f"`{command}` needs an LLM, but none is configured. Set MAGI_LLM_PROVIDER to anthropic "
            "(with ANTHROPIC_API_KEY), openai (with OPENAI_API_KEY, or MAGI_LLM_BASE_URL for a local server), "
            f"replay (with MAGI_LLM_CASSETTE), or python:MODULE:FUNCTION; {offline_hint(role)}."
        )
    refusal = foreign_model(llm, role)
    if refusal is not None:
        raise LLMNotConfiguredError(f"`{command}` cannot run: {refusal}")
    return client


def foreign_model(llm: LLMSettings, role: str | None) -> str | None:
    """Why the provider of ``role`` cannot answer it (None: it can, or cannot tell). A python provider's
    module may list the roles it answers in ``ROLES`` (prefixes, e.g. ``("magi.",)``)."""
    if not role or role == "default":
        return None
    resolved = resolve_role(llm, role)
    provider = resolved.endpoint.provider if resolved.endpoint else ""
    if not provider.startswith(PREFIX):
        return None
    answers = PythonClient(provider).roles()
    if answers is None or role.startswith(answers):
        return None
    return (
        f"the configured model {provider} answers only the roles {', '.join(a + '*' for a in answers)}, not "
        f"{role!r}; set llm.roles.{role}.provider in magi.yaml (or MAGI_LLM_PROVIDER for this system alone); "
        f"{offline_hint(role)}"
    )


__all__ = [
    "ALLOWED",
    "MeteredClient",
    "RoleRouter",
    "build_provider",
    "foreign_model",
    "make_llm",
    "provider_of",
    "require_llm",
]
