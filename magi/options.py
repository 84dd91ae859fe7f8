"""The options of one council run, and the ONE mapping from them onto settings.

The CLI (flags), the Serve app (request body) and the Python API fill :class:`AskOptions` and call
:func:`apply_options`; bounds and error messages come from the ``magi`` settings section once.
Per-sage models go to ``llm.roles['magi.<sage>'].model`` (the platform's per-role settings), merged
with the roles already configured, so a flag wins over a model set in ``magi.yaml``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from core.errors import InputError
from core.settings import Settings
from magi.models import SageName
from magi.settings import EarlyStop, MagiSettings, Threshold

OPTION_NAMES = {
    "magi.rounds": "rounds",
    "magi.threshold": "threshold",
    "magi.timeout_s": "timeout",
    "magi.weighted": "weighted",
    "magi.anonymous": "anonymous",
    "magi.shuffle_peers": "shuffle_peers",
    "magi.early_stop": "early_stop",
    "magi.seed": "seed",
    "magi.runs": "runs",
    "magi.context_budget_tokens": "token_budget",
    "magi.plugins": "plugin",
    "magi.disabled_plugins": "disable_plugin",
}


class AskOptions(BaseModel):
    """What a caller may choose per run; None means "as configured"."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rounds: int | None = None
    threshold: Threshold | None = None
    timeout_s: float | None = None
    weighted: bool | None = None
    anonymous: bool | None = None
    shuffle_peers: bool | None = None
    early_stop: EarlyStop | None = None
    seed: int | None = None
    runs: int | None = None
    token_budget: int | None = None
    models: dict[SageName, str] | None = None
    plugins: list[Path] | None = None
    disabled_plugins: list[str] | None = None

    def overrides(self, settings: Settings) -> dict[str, Any]:
        magi = MagiSettings.of(settings)
        tree: dict[str, Any] = {
            "magi": {
                "rounds": self.rounds,
                "threshold": self.threshold,
                "timeout_s": self.timeout_s,
                "weighted": self.weighted,
                "anonymous": self.anonymous,
                "shuffle_peers": self.shuffle_peers,
                "early_stop": self.early_stop,
                "seed": self.seed,
                "runs": self.runs,
                "context_budget_tokens": self.token_budget,
                "plugins": [*magi.plugins, *self.plugins] if self.plugins else None,
                "disabled_plugins": [*magi.disabled_plugins, *self.disabled_plugins] if self.disabled_plugins else None,
            }
        }
        if self.models:  # a flag beats the file: also over a model set in llm.roles.<sage>
            roles = {name: role.model_dump(exclude_none=True) for name, role in settings.llm.roles.items()}
            for sage, model in self.models.items():
                roles[sage.role] = {**roles.get(sage.role, {}), "model": model}
            tree["llm"] = {"roles": roles}
        return tree


def apply_options(
    settings: Settings, options: AskOptions, origin: str = "option", names: Mapping[str, str] = OPTION_NAMES
) -> Settings:
    """``settings`` with the run's options on top; a bad option is a ConfigError naming it as the caller did."""
    return settings.updated(options.overrides(settings), origin=origin, names=names)


def clean_question(text: str, *, max_chars: int, where: str = "the question") -> str:
    """The question as the sages will read it: valid Unicode, no control characters but newlines and
    tabs, not blank, not longer than ``max_chars``; an InputError says which rule failed."""
    for index, char in enumerate(text):
        if "\ud800" <= char <= "\udfff":
            raise InputError(f"{where} is not valid Unicode (a lone surrogate at character {index}); send UTF-8 text")
    cleaned = "".join(c for c in text if c in "\n\t" or (c.isprintable() or c == " ")).strip()
    if not any(c.isalnum() for c in cleaned):
        raise InputError(f"{where} is empty; give the request to decide on (argument, '-' for stdin, or --file)")
    if len(cleaned) > max_chars:
        raise InputError(f"{where} has {len(cleaned)} characters, more than magi.max_prompt_chars ({max_chars})")
    return cleaned


__all__ = ["OPTION_NAMES", "AskOptions", "apply_options", "clean_question"]
