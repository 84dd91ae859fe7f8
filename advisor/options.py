"""The advisor's per-call options and the ONE mapping from them (CLI flags, HTTP fields) onto settings."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from advisor.settings import AdvisorSettings
from core.settings import Settings
from sessions.models import SessionPolicy

OPTION_NAMES = {
    "advisor.mode_threshold": "threshold",
    "advisor.retention_h": "retention-h",
    "advisor.kb_dir": "kb-dir",
}


class AdvisorOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    mode_threshold: float | None = None
    retention_h: float | None = None
    kb_dir: str | None = None

    def overrides(self) -> dict[str, Any]:
        values = {"mode_threshold": self.mode_threshold, "retention_h": self.retention_h, "kb_dir": self.kb_dir}
        return {"advisor": {k: v for k, v in values.items() if v is not None}}


def apply_options(settings: Settings, options: AdvisorOptions, origin: str = "option") -> Settings:
    """``settings`` with the options on top; a bad value is a ConfigError naming the option."""
    overrides = options.overrides()
    if not overrides["advisor"]:
        return settings
    return settings.updated(overrides, origin=origin, names=OPTION_NAMES)


def session_policy(settings: Settings) -> SessionPolicy:
    """Advisor sessions live ``retention_h`` hours after their last message (the spec: 24 h)."""
    section = AdvisorSettings.of(settings)
    return SessionPolicy(ttl_s=section.retention_h * 3600.0, history_limit=section.history_limit)


__all__ = ["OPTION_NAMES", "AdvisorOptions", "apply_options", "session_policy"]
