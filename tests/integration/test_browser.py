"""The browser fixture itself: Debian's Chromium renders a local page with Japanese text and runs its script."""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.async_api import Page

from tests.browser import screenshot_path

PAGE = """<!doctype html><html lang="ja"><meta charset="utf-8"><title>確認</title>
<body><h1 id="title">価格転嫁の相談</h1><button id="go">送信</button><p id="out"></p>
<script>document.getElementById('go').onclick = () => {
  document.getElementById('out').textContent = '受け付けました: ' + navigator.language; };</script></body></html>"""


@pytest.fixture
def served_page(tmp_path: Path) -> Iterator[str]:
    """A one-page HTTP server on 127.0.0.1 (a real server, as the app pages are)."""
    (tmp_path / "index.html").write_text(PAGE, encoding="utf-8")

    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/index.html"
    finally:
        server.shutdown()
        server.server_close()


async def test_chromium_runs_a_local_page_and_takes_a_screenshot(page: Page, served_page: str) -> None:
    await page.goto(served_page)
    assert await page.text_content("#title") == "価格転嫁の相談"
    await page.keyboard.press("Tab")  # the button is reachable from the keyboard
    await page.keyboard.press("Enter")
    await page.wait_for_selector("#out:not(:empty)")
    assert await page.text_content("#out") == "受け付けました: ja-JP"
    shot = screenshot_path("browser-fixture")
    await page.screenshot(path=str(shot))
    assert shot.stat().st_size > 1000
