"""Where the advisor's outside facts come from, honestly: the web only through a configured web
provider. The bundled corpus (``data/corpus``) is invented sample data for the research demo: it is
never searched as "the web" here. A local corpus the operator configured (their own folder) counts
as their source; without either, Mode 1 answers from the knowledge base and says so."""

from __future__ import annotations

from pathlib import Path

from core.errors import ConfigError
from core.resources import data_path
from core.settings import Settings
from scrapers.settings import SearchSettings

NOT_CONFIGURED = (
    "Web検索は設定されていません（search.provider に ddgs または searxng を設定すると使えます）。"
    "知識ベース（search_knowledge_base: 法令・指針・公的調査）で答えてください"
)


class WebNotConfiguredError(ConfigError):
    """web_search was called on a service with no web provider (the operator's fix, not the caller's)."""


def web_configured(settings: Settings) -> bool:
    """Whether a search chain other than the bundled sample corpus is configured."""
    search = SearchSettings.of(settings)
    bundled = Path(search.corpus_dir).resolve() == data_path("corpus").resolve()
    return any(name != "local" or not bundled for name in (search.provider, *search.fallbacks))


def require_web(settings: Settings) -> None:
    """ConfigError (read by the model as the tool's result) when no web provider is configured."""
    if not web_configured(settings):
        raise WebNotConfiguredError(NOT_CONFIGURED)


__all__ = ["NOT_CONFIGURED", "WebNotConfiguredError", "require_web", "web_configured"]
