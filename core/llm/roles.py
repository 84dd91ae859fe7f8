"""Per-role models and sampling parameters: one resolver, one client wrapper that applies it.

A role names who is calling (``research.summary``, ``magi.melchior``, ``critic.worker``...). Its
model comes from ``llm.models[role]``, else ``llm.models["default"]``, else ``llm.model``; its
temperature and max_tokens from ``llm.params[role]``, else ``llm.params["default"]``, else the
request's own values. Only :func:`resolve_role` reads those settings.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from core.llm.base import LLMClient, LLMRequest, LLMResponse
from core.llm.streaming import StreamEvent, stream
from core.settings import LLMSettings

DEFAULT_ROLE = "default"


@dataclass(frozen=True)
class ResolvedRole:
    """What a role means under the current settings (None: keep the request's value)."""

    role: str
    model: str
    temperature: float | None
    max_tokens: int | None


def resolve_role(llm: LLMSettings, role: str | None) -> ResolvedRole:
    """Model and parameters of ``role`` (None means ``default``), falling back as the module says."""
    name = role or DEFAULT_ROLE
    model = llm.models.get(name) or llm.models.get(DEFAULT_ROLE) or llm.model
    params = llm.params.get(name) or llm.params.get(DEFAULT_ROLE)
    return ResolvedRole(
        role=name,
        model=model,
        temperature=params.temperature if params else None,
        max_tokens=params.max_tokens if params else None,
    )


def apply_role(llm: LLMSettings, request: LLMRequest, role: str | None) -> LLMRequest:
    """The request with its role's model and parameters; the request's own ``role``/``model`` win."""
    resolved = resolve_role(llm, request.role or role)
    update: dict[str, Any] = {"role": resolved.role, "model": request.model or resolved.model}
    if resolved.temperature is not None:
        update["temperature"] = resolved.temperature
    if resolved.max_tokens is not None:
        update["max_tokens"] = resolved.max_tokens
    return request.model_copy(update=update)


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
    "ResolvedRole",
    "RoleClient",
    "apply_role",
    "resolve_role",
]
