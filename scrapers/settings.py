"""Settings sections of the collection layer: ``search:`` (providers, corpus, cache) and ``fetch:``."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from core.options import Option
from core.resources import data_path
from core.settings import AbsolutePath, Section

ProviderName = Literal["local", "ddgs", "searxng"]


class SearchSettings(Section):
    name: ClassVar[str] = "search"

    # provider and corpus_dir are per-request options of the systems that list this section (research)
    provider: Annotated[ProviderName, Option()] = Field("local", description="First search provider.")
    fallbacks: list[ProviderName] = Field(
        default_factory=list, description="Providers tried in order when the first fails (e.g. [searxng])."
    )
    cache_ttl_s: float = Field(86_400.0, ge=0, description="Reuse cached web search results this long (0: off).")
    corpus_dir: Annotated[AbsolutePath, Option("corpus", metavar="DIR")] = Field(
        default_factory=lambda: data_path("corpus"),
        description="Folder searched by the local provider (given per request: implies provider local).",
    )
    corpus_max_file_bytes: int = Field(
        5_000_000, ge=1024, description="Corpus files larger than this are skipped (and counted)."
    )
    corpus_max_files: int = Field(
        5_000, ge=1, description="A corpus folder with more files to index than this is refused."
    )
    corpus_max_total_bytes: int = Field(
        50_000_000, ge=1024, description="A corpus folder with more bytes to index than this is refused."
    )
    corpus_build_budget_s: float = Field(
        60.0, gt=0, description="Wall-clock time allowed to read and index one corpus folder."
    )
    ddgs_region: str = Field("jp-jp", description="DuckDuckGo region, e.g. jp-jp, us-en, wt-wt.")
    ddgs_backend: str = Field("auto", description="ddgs backend(s), e.g. auto, duckduckgo, bing,brave.")
    searxng_url: str | None = Field(None, description="Base URL of a SearXNG instance with the JSON API enabled.")
    searxng_timeout_s: float = Field(10.0, gt=0, le=300, description="Time for one SearXNG answer (tried twice).")


class FetchSettings(Section):
    name: ClassVar[str] = "fetch"

    allow_private: bool = Field(
        False, description="Allow fetching private/loopback/link-local addresses (SSRF guard off). Tests only."
    )
    respect_robots: bool = Field(True, description="Obey robots.txt.")
    concurrency: int = Field(16, ge=1, le=256, description="Concurrent fetches in one process.")
    per_host_concurrency: int = Field(2, ge=1, le=32, description="Concurrent fetches per host.")
    politeness_delay_s: float = Field(0.5, ge=0, description="Pause between requests to one host.")
    timeout_s: float = Field(20.0, gt=0, description="Total time for one page, redirects included.")
    max_bytes: int = Field(5_000_000, ge=1024, description="Largest body accepted (after decompression).")
    retries: int = Field(2, ge=0, le=10, description="Retries on 5xx and timeouts.")
    page_cache_ttl_s: float = Field(7 * 86_400.0, ge=0, description="Reuse fetched pages this long (0: off).")


__all__ = ["FetchSettings", "ProviderName", "SearchSettings"]
