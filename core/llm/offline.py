"""The shipped offline models: which scripted model answers a role, and the one settings file that
gives every role its own (``data/llm/offline.yaml``).

The mapping is data, not code, so this module names no system: it reads the file. Errors and
``magi doctor`` use it to tell a person how to run without a network or an API key.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

OFFLINE_FILE = ("llm", "offline.yaml")


def offline_config_path() -> Path:
    """``data/llm/offline.yaml`` as installed: ``magi serve --config <it>`` runs every system offline."""
    from core.resources import data_path

    return data_path(*OFFLINE_FILE)


@cache
def offline_roles() -> dict[str, str]:
    """Each LLM role of the offline file and its shipped model (``{"critic.worker": "python:critic..."}``)."""
    from core.yamlfile import read_yaml_document

    data: Any = read_yaml_document(offline_config_path(), "offline settings").data
    roles = ((data or {}).get("llm") or {}).get("roles") or {}
    return {role: str(entry.get("provider")) for role, entry in roles.items() if isinstance(entry, dict)}


def offline_provider(role: str | None) -> str | None:
    """The shipped model that answers ``role`` offline (None: the role has none)."""
    return offline_roles().get(role or "")


def offline_hint(role: str | None = None) -> str:
    """One sentence for an error: the shipped model of ``role`` (when it has one), and the file."""
    provider = offline_provider(role)
    own = (
        f"the shipped offline model of the role {role!r} is {provider} (MAGI_LLM_PROVIDER={provider}); "
        if provider
        else ""
    )
    return f"offline, {own}`magi serve --config {offline_config_path()}` runs every system on its shipped model"


__all__ = ["OFFLINE_FILE", "offline_config_path", "offline_hint", "offline_provider", "offline_roles"]
