"""A real headless browser for page tests: Debian's Chromium driven by Playwright's async API.

Playwright's own browser download is not used (the machine reaches no CDN): it launches the system
``/usr/bin/chromium`` (``MAGI_CHROMIUM`` overrides the path). ``.ci/run`` installs Debian's
``chromium`` and ``fonts-noto-cjk`` when missing, so a missing browser is a failure that says how to
install it, not a skip. Screenshots go to ``out/screenshots/`` (kept after the run, for a person to
look at).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, async_playwright

# The flags the machine notes list for headless Chromium here: no sandbox as root, and nothing that
# phones home (the closed network refuses those connections, many at a time).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOT_DIR = Path(__file__).resolve().parent.parent / "out" / "screenshots"


def chromium_path() -> str:
    """The Chromium executable, or a failure naming the package to install."""
    configured = os.environ.get("MAGI_CHROMIUM")
    found = configured or shutil.which("chromium") or shutil.which("chromium-browser")
    if not found or not Path(found).exists():
        pytest.fail(
            "no Chromium for the browser tests: install Debian's chromium and fonts-noto-cjk "
            "(apt-get install chromium fonts-noto-cjk; .ci/run does it) or set MAGI_CHROMIUM to its path",
            pytrace=False,
        )
    return found


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    """A fresh headless Chromium with an empty profile for one test."""
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            await launched.close()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def module_browser() -> AsyncIterator[Browser]:
    """One headless Chromium for a whole module, whose tests run in the module's event loop
    (``pytestmark = pytest.mark.asyncio(loop_scope="module")``): a fresh context per test, one launch."""
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            await launched.close()


@pytest.fixture
async def page(browser: Browser) -> AsyncIterator[Page]:
    """A page at 1280x900 with Japanese as the preferred language."""
    context = await browser.new_context(viewport={"width": 1280, "height": 900}, locale="ja-JP")
    try:
        yield await context.new_page()
    finally:
        await context.close()


def screenshot_path(name: str) -> Path:
    """Where a test saves its screenshot ``name``.png (the folder is created)."""
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    return SCREENSHOT_DIR / f"{name}.png"


__all__ = ["CHROMIUM_ARGS", "SCREENSHOT_DIR", "browser", "chromium_path", "module_browser", "page", "screenshot_path"]
