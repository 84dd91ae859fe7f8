"""Fetch pages over HTTP(S) with httpx, or from a local corpus directory.

Foundation version: timeouts, a streamed body-size cap, a redirect limit and a content-type
allow list. Every failure is a :class:`FetchError` whose ``kind`` names it for the report.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

import httpx
from pydantic import BaseModel

from core.errors import FetchError

USER_AGENT = "MAGI-Cluster-Research/0.1 (+https://github.com/magi-cluster; research bot)"
ALLOWED_TYPES = ("text/html", "application/xhtml+xml", "text/plain", "text/markdown")
LOCAL_TYPES = {".html": "text/html", ".htm": "text/html", ".md": "text/markdown", ".txt": "text/plain"}


class FetchedPage(BaseModel):
    url: str
    final_url: str
    status: int
    content_type: str
    content: bytes
    fetched_at: datetime
    origin: str  # "http" or "local"


class UrlResolver(Protocol):
    """Anything that maps a URL to a local file (a :class:`LocalCorpus` does)."""

    def path_for(self, url: str) -> Path | None: ...


class Fetcher:
    """One fetcher per agent; reuses one HTTP connection pool across its pages."""

    def __init__(
        self,
        *,
        local: UrlResolver | None = None,
        timeout_s: float = 15.0,
        max_bytes: int = 5_000_000,
        max_redirects: int = 5,
    ) -> None:
        self._local = local
        self._max_bytes = max_bytes
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout_s, connect=min(5.0, timeout_s)),
            follow_redirects=True,
            max_redirects=max_redirects,
            headers={"User-Agent": USER_AGENT, "Accept": "text/html,application/xhtml+xml,text/plain;q=0.8"},
        )

    async def fetch(self, url: str) -> FetchedPage:
        path = self._local.path_for(url) if self._local else None
        if path is not None:
            return self._read_local(url, path)
        if not url.startswith(("http://", "https://")):
            raise FetchError(f"cannot fetch {url}: only http(s) URLs or corpus files are supported", url=url,
                             kind="unsupported_scheme")
        return await self._fetch_http(url)

    def _read_local(self, url: str, path: Path) -> FetchedPage:
        try:
            content = path.read_bytes()[: self._max_bytes]
        except OSError as exc:
            raise FetchError(f"cannot read {path} for {url}: {exc.strerror}", url=url, kind="local_read") from exc
        return FetchedPage(
            url=url, final_url=url, status=200, content=content, origin="local",
            content_type=LOCAL_TYPES.get(path.suffix.lower(), "text/plain"), fetched_at=datetime.now(UTC),
        )

    async def _fetch_http(self, url: str) -> FetchedPage:
        try:
            async with self._client.stream("GET", url) as response:
                content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
                if response.status_code >= 400:
                    raise FetchError(f"{url} answered HTTP {response.status_code}", url=url, kind="http_status")
                if content_type and not content_type.startswith(ALLOWED_TYPES):
                    raise FetchError(f"{url} is {content_type}, not HTML or text", url=url, kind="content_type")
                chunks: list[bytes] = []
                size = 0
                async for chunk in response.aiter_bytes():
                    size += len(chunk)
                    if size > self._max_bytes:
                        raise FetchError(f"{url} is larger than {self._max_bytes} bytes", url=url, kind="too_large")
                    chunks.append(chunk)
                return FetchedPage(
                    url=url, final_url=str(response.url), status=response.status_code,
                    content_type=content_type or "text/html", content=b"".join(chunks),
                    fetched_at=datetime.now(UTC), origin="http",
                )
        except httpx.TooManyRedirects as exc:
            raise FetchError(f"{url}: too many redirects", url=url, kind="redirects") from exc
        except httpx.TimeoutException as exc:
            raise FetchError(f"{url}: timed out ({type(exc).__name__})", url=url, kind="timeout") from exc
        except httpx.HTTPError as exc:
            raise FetchError(f"{url}: {type(exc).__name__}: {exc}", url=url, kind="network") from exc

    async def aclose(self) -> None:
        await self._client.aclose()
