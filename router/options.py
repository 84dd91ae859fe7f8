"""The router's per-call options and the ONE mapping from them onto settings (CLI flags, HTTP fields)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from core.settings import Settings
from router.settings import RouterSettings
from sessions.models import SessionPolicy

OPTION_NAMES = {"router.confidence_threshold": "threshold"}


class RouterOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    confidence_threshold: float | None = None

    def overrides(self) -> dict[str, Any]:
        return {"router": {"confidence_threshold": self.confidence_threshold}}


def apply_options(settings: Settings, options: RouterOptions, origin: str = "option") -> Settings:
    """``settings`` with the options on top; a bad one is a ConfigError naming it as the caller did."""
    return settings.updated(options.overrides(), origin=origin, names=OPTION_NAMES)


def session_policy(settings: Settings) -> SessionPolicy:
    """The session lifetimes of the router's settings section."""
    section = RouterSettings.of(settings)
    return SessionPolicy(
        ttl_s=section.session_ttl_s,
        previous_ttl_s=section.previous_request_type_ttl_s,
        history_limit=section.history_limit,
    )


__all__ = ["OPTION_NAMES", "RouterOptions", "apply_options", "session_policy"]
