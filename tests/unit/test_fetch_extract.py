"""Fetching from a real HTTP server on 127.0.0.1 and from a local corpus, then extraction."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from scrapers.errors import ExtractionError, FetchError
from scrapers.extract import extract_page
from scrapers.fetch import FetchedPage, Fetcher, FetchPolicy

ARTICLE = (
    "<html lang='ja'><head><meta charset='utf-8'><title>価格転嫁の現状</title>"
    "<meta name='date' content='2024-11-29'></head><body><nav>ホーム | ニュース</nav><article><h1>価格転嫁の現状</h1>"
    + "<p>2024年9月の調査では、中小企業の価格転嫁率は49.7%となり、前回から3.2ポイント上昇した。</p>" * 4
    + "</article><footer>© 2024 Example News</footer></body></html>"
)


# The SSRF guard refuses loopback by default; the test server is let through explicitly.
LOCAL_TEST_POLICY = FetchPolicy(allow_networks=("127.0.0.1/32",), politeness_delay_s=0)


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        routes = {
            "/article": (200, "text/html; charset=utf-8", ARTICLE.encode()),
            "/image": (200, "image/png", b"\x89PNG...."),
            "/big": (200, "text/html", b"<p>x</p>" * 200_000),
            "/missing": (404, "text/html", b"not here"),
            "/empty": (200, "text/html", b"<html><body><p>hi</p></body></html>"),
        }
        if self.path == "/loop":
            self.send_response(302)
            self.send_header("Location", "/loop")
            self.end_headers()
            return
        status, ctype, body = routes.get(self.path, (404, "text/plain", b""))
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


async def fetch(url: str, **options: Any) -> FetchedPage:
    async def go() -> FetchedPage:
        fetcher = Fetcher(policy=LOCAL_TEST_POLICY, **options)
        try:
            return await fetcher.fetch(url)
        finally:
            await fetcher.aclose()

    return await go()


async def test_fetch_and_extract_article(server: str) -> None:
    page = await fetch(f"{server}/article")
    extracted = extract_page(page.content, url=page.url, content_type=page.content_type)
    assert extracted.title == "価格転嫁の現状"
    assert "49.7%" in extracted.text and "ホーム" not in extracted.text and "©" not in extracted.text
    assert extracted.published == "2024-11-29" and extracted.lang == "ja"


@pytest.mark.parametrize(
    ("path", "kind"),
    [("/image", "content_type"), ("/missing", "http_status"), ("/loop", "redirects"), ("/big", "too_large")],
)
async def test_fetch_failures_are_typed(server: str, path: str, kind: str) -> None:
    with pytest.raises(FetchError) as info:
        await fetch(f"{server}{path}", max_bytes=500_000)
    assert info.value.kind == kind and info.value.url.endswith(path)


async def test_unsupported_scheme() -> None:
    with pytest.raises(FetchError) as info:
        await fetch("ftp://example.com/x")
    assert info.value.kind == "unsupported_scheme"


async def test_extract_refuses_pages_without_text(server: str) -> None:
    page = await fetch(f"{server}/empty")
    with pytest.raises(ExtractionError):
        extract_page(page.content, url=page.url)


async def test_local_resolver_reads_files(tmp_path: Path) -> None:
    file = tmp_path / "a.md"
    file.write_text("# 見出し\n\n" + "本文です。" * 30, encoding="utf-8")

    class Resolver:
        def path_for(self, url: str) -> Path | None:
            return file if url == "https://a.example/x" else None

    page = await fetch("https://a.example/x", local=Resolver())
    assert page.origin == "local" and page.content_type == "text/markdown"
    extracted = extract_page(page.content, url=page.url, content_type=page.content_type)
    assert extracted.title == "見出し"
