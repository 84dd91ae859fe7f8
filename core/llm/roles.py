"""Per-role models, parameters and endpoints: one resolver, one client wrapper that applies it.

A role names who is calling (``research.summary``, ``magi.melchior``, ``critic.worker``...). What it
uses is looked up field by field, the first value set winning:

1. ``llm.roles[role]`` (provider, model, base_url, api_key_env, tool_calling, params),
2. ``llm.models[role]`` / ``llm.params[role]`` (the older per-role maps: model and parameters only),
3. the same two for the role ``default``,
4. the ``llm`` section itself (``provider``, ``model``, and the provider's own base URL and key).

So the three sages can run on three vendors, and a role that names only a model keeps the shared
provider. Only :func:`resolve_role` reads those settings.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from core.llm.base import LLMClient, LLMRequest, LLMResponse, ToolResultPart
from core.llm.streaming import StreamEvent, stream
from core.settings import LLMRoleConfig, LLMRoleParams, LLMSettings, ToolCalling

DEFAULT_ROLE = "default"


@dataclass(frozen=True)
class Endpoint:
    """Where a role's calls go: the provider, and for HTTP providers the server and its key's variable."""

    provider: str
    base_url: str | None = None
    api_key_env: str | None = None
    tool_calling: ToolCalling = "native"

    @property
    def label(self) -> str:
        """The provider as people read it: ``openai (127.0.0.1:8000)``, ``anthropic``, ``replay``."""
        if not self.base_url:
            return self.provider
        host = urlsplit(self.base_url).netloc or self.base_url
        return f"{self.provider} ({host})"


@dataclass(frozen=True)
class ResolvedRole:
    """What a role means under the current settings (None: keep the request's value)."""

    role: str
    model: str
    temperature: float | None
    max_tokens: int | None
    endpoint: Endpoint | None = None  # None: no provider configured for this role
    require_tool: bool = False

    @property
    def label(self) -> str:
        """``provider/model`` (``none/model`` without a provider), as outputs and cache keys show it."""
        provider = self.endpoint.provider if self.endpoint else "none"
        return f"{provider}/{self.model}"


def _first(*values: Any) -> Any:
    return next((v for v in values if v is not None), None)


def _provider_base_url(llm: LLMSettings, provider: str) -> str | None:
    if provider == "openai":
        return llm.base_url
    if provider in ("anthropic", "record"):
        return llm.anthropic_base_url
    return None


def resolve_role(llm: LLMSettings, role: str | None) -> ResolvedRole:
    """Model, parameters and endpoint of ``role`` (None means ``default``), falling back as the module says."""
    name = role or DEFAULT_ROLE
    empty = LLMRoleConfig()
    own, shared = llm.roles.get(name, empty), llm.roles.get(DEFAULT_ROLE, empty)
    no_params = LLMRoleParams()
    params = [
        own.params or no_params,
        llm.params.get(name) or no_params,
        shared.params or no_params,
        llm.params.get(DEFAULT_ROLE) or no_params,
    ]
    model = _first(own.model, llm.models.get(name), shared.model, llm.models.get(DEFAULT_ROLE)) or llm.model
    provider = (_first(own.provider, shared.provider, llm.provider) or "").strip()
    endpoint = None
    if provider:
        endpoint = Endpoint(
            provider=provider,
            base_url=_first(own.base_url, shared.base_url, _provider_base_url(llm, provider.lower())),
            api_key_env=_first(own.api_key_env, shared.api_key_env),
            tool_calling=_first(own.tool_calling, shared.tool_calling, llm.tool_calling),
        )
    return ResolvedRole(
        role=name,
        model=model,
        temperature=_first(*(p.temperature for p in params)),
        max_tokens=_first(*(p.max_tokens for p in params)),
        endpoint=endpoint,
        require_tool=bool(_first(*(p.require_tool for p in params))),
    )


def configured_roles(llm: LLMSettings) -> list[str]:
    """Every role the settings name (``default`` first), for checks that visit each once."""
    named = set(llm.roles) | set(llm.models) | set(llm.params)
    return [DEFAULT_ROLE, *sorted(named - {DEFAULT_ROLE})]


def _first_tool_turn(request: LLMRequest) -> bool:
    """A request with tools whose conversation holds no tool result yet: the first turn of a tool loop."""
    if not request.tools:
        return False
    return not any(isinstance(p, ToolResultPart) for m in request.messages for p in m.parts)


def apply_resolved(resolved: ResolvedRole, request: LLMRequest) -> LLMRequest:
    """The request with the role's model and parameters; the request's own ``model`` wins."""
    update: dict[str, Any] = {"role": resolved.role, "model": request.model or resolved.model}
    if resolved.temperature is not None:
        update["temperature"] = resolved.temperature
    if resolved.max_tokens is not None:
        update["max_tokens"] = resolved.max_tokens
    if resolved.require_tool and request.tool_choice is None and _first_tool_turn(request):
        update["tool_choice"] = "required"
    return request.model_copy(update=update)


def apply_role(llm: LLMSettings, request: LLMRequest, role: str | None) -> LLMRequest:
    """The request with its role's model and parameters; the request's own ``role``/``model`` win."""
    return apply_resolved(resolve_role(llm, request.role or role), request)


class RoleClient:
    """Fills in each request's model and parameters from its role (or the client's) before ``inner``."""

    def __init__(self, inner: LLMClient, llm: LLMSettings, role: str | None = None) -> None:
        self.inner = inner
        self.llm = llm
        self.role = role

    async def complete(self, request: LLMRequest) -> LLMResponse:
        return await self.inner.complete(apply_role(self.llm, request, self.role))

    def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        return stream(self.inner, apply_role(self.llm, request, self.role))


__all__ = [
    "DEFAULT_ROLE",
    "Endpoint",
    "ResolvedRole",
    "RoleClient",
    "apply_resolved",
    "apply_role",
    "configured_roles",
    "resolve_role",
]
