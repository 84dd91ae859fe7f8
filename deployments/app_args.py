"""Settings of a Serve app from its ``serve.yaml`` arguments (every app's builder takes them alike)."""

from __future__ import annotations

from typing import Any

from core.settings import Settings, load_settings


def settings_from_args(args: dict[str, Any] | None) -> Settings:
    """``args`` are settings in ``magi.yaml`` shape, over ``magi.yaml`` and the environment; the key
    ``config`` names another settings file."""
    args = dict(args or {})
    return load_settings(args.pop("config", None), args, origin="serve.yaml argument")


__all__ = ["settings_from_args"]
