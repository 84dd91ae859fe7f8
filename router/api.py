"""Route a query from Python, without sessions: ``route("営業時間は？", threshold=0.6)``.

The keywords are the router's options (``ROUTER_OPTIONS``, from its settings section); options left
out come from ``config`` (or ``magi.yaml``) and ``MAGI_*``, as for ``magi route``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.settings import load_settings
from router.conversation import check_query, shared_router
from router.metrics import count_route
from router.models import RouteResult
from router.settings import ROUTER_OPTIONS, RouterSettings


def route(
    query: str, *, previous_request_type: str | None = None, config: Path | None = None, **options: Any
) -> RouteResult:
    """The RouteResult of one query; a bad query is an InputError, a bad option a ConfigError naming it."""
    section = ROUTER_OPTIONS.section(RouterSettings, load_settings(config), ROUTER_OPTIONS.from_keywords(options))
    text = check_query(query, section.max_query_chars)
    result = shared_router(section.confidence_threshold).route(text, previous_request_type)
    count_route(result)
    return result


__all__ = ["route"]
