"""The research page in a real headless Chromium, against the research Serve app on 127.0.0.1.

The page is plain HTML and JS served by the app (``GET /ui``): the test fills the form in Japanese,
starts a run on the bundled corpus, follows the live progress from the event stream, and checks the
rendered answer, claims with sources, the disputed figures side by side and the transparency report.
It saves ``out/screenshots/research_page.png`` for a person to look at. The app redeployed with an API
key checks that the page is served open, asks for the key on its first 401 and then sends it on
every call (corpus list, run, event stream, result, charts): ``research_page_keyed.png``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Page

from core.settings import load_settings
from tests.browser import screenshot_path
from tests.conftest import CORPUS_DIR
from tests.ports import free_port

TOPIC = "中小企業の価格転嫁の現状"
KEY = "page-key-for-tests"
# Predicates as functions: a bare expression is evaluated with eval(), which the page's CSP forbids
DONE = "() => document.getElementById('status').textContent === '完了'"


@pytest.fixture(scope="module")
def base_url(ray_cluster: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from ray import serve

    from deployments.research import APP_NAME, ROUTE_PREFIX, build_app

    data_dir = tmp_path_factory.mktemp("page-data")
    port = free_port()
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    try:
        settings = load_settings(overrides={"data_dir": data_dir, "serve": {"corpus_roots": [CORPUS_DIR]}})
        serve.run(build_app(settings), name=APP_NAME, route_prefix=ROUTE_PREFIX)
        yield f"http://127.0.0.1:{port}"
    finally:
        serve.shutdown()


def test_page_and_corpus_list_are_served(base_url: str) -> None:
    page_html = httpx.get(f"{base_url}/ui", timeout=30)
    assert page_html.status_code == 200 and page_html.headers["content-type"].startswith("text/html")
    assert "調査を開始" in page_html.text
    corpora = httpx.get(f"{base_url}/corpora", timeout=30).json()["corpora"]
    assert {"name": "corpus"} in corpora and str(Path(CORPUS_DIR).resolve()) not in str(corpora)


async def test_a_run_from_the_page_shows_answer_claims_disputes_and_transparency(base_url: str, page: Page) -> None:
    await page.goto(f"{base_url}/ui")
    await page.fill("#topic", TOPIC)
    await page.fill("#agents", "2")
    await page.fill("#iterations", "2")
    await page.select_option("#corpus", label="corpus")
    await page.click("#start")
    await page.wait_for_function(DONE, timeout=240_000)
    progress = await page.locator("#progress li").all_inner_texts()
    assert progress[0].startswith("調査開始") and progress[-1].startswith("調査完了")
    assert any(line.startswith("エージェント完了") for line in progress)
    answer = await page.inner_text("#answer")
    assert answer.startswith("回答: ") and "価格転嫁" in answer
    assert await page.locator("#claims tr").count() >= 5
    assert await page.locator("#claims a").count() >= 5  # every claim lists its supporting pages
    assert await page.locator("#disputed .sides").count() >= 1  # planted conflicts: both sides shown
    assert await page.locator("#disputed .side").count() == 2 * await page.locator("#disputed .sides").count()
    transparency = await page.inner_text("#transparency")
    assert "反復 2" in transparency and "情報源の重なり" in transparency and "選択理由" in transparency
    charts = page.locator("#charts img.chart")
    assert await charts.count() >= 1  # the corpus has figures for several survey rounds
    await page.wait_for_function(
        "() => [...document.querySelectorAll('#charts img.chart')].every(i => i.complete && i.naturalWidth > 0)",
        timeout=60_000,
    )
    await page.screenshot(path=str(screenshot_path("research_page")), full_page=True)
    await page.locator("#charts").screenshot(path=str(screenshot_path("research_page_charts")))


async def test_a_hostile_source_url_is_never_a_link_and_no_script_runs(base_url: str, page: Page) -> None:
    """Issue 21 (1): a corpus manifest with ``url: javascript:...`` became a clickable link that ran in the
    page's origin (where the API key sits). The page now links http(s) only, and its CSP runs no script
    that is not its own, even one a bug would put into the document."""
    answer = httpx.get(f"{base_url}/ui", timeout=30)
    policy = answer.headers["content-security-policy"]
    assert "script-src 'self' 'sha256-" in policy and "'unsafe-inline'" not in policy.split(";")[1]
    ran: list[str] = []
    page.on("dialog", lambda dialog: (ran.append(dialog.message), dialog.dismiss()))
    await page.goto(f"{base_url}/ui")
    hostile = ["javascript:alert('xss')", " JaVaScRiPt:alert(2)", "data:text/html,<script>alert(3)</script>"]
    supporting = [{"url": u, "title": f"出典{i}"} for i, u in enumerate(hostile)]
    supporting.append({"url": "https://a.example/ok", "title": "正しい出典"})
    result = {
        "runId": "x",
        "executiveSummary": {"text": "回答: テスト"},
        "claims": [{"text": "主張", "confidence": 0.5, "supporting": supporting}],
        "disputed": [],
        "charts": [],
        "iterations": [],
    }
    await page.evaluate("(result) => render(result)", result)
    links = await page.locator("#claims a").evaluate_all("(links) => links.map((a) => a.href)")
    assert links == ["https://a.example/ok"]
    assert "出典0" in await page.inner_text("#claims")  # shown as text, not as a link
    for text in ("出典0", "出典1", "出典2"):
        await page.get_by_text(text).click()
    # a link slipped into the document anyway (a bug, an extension) is still not run: the CSP says no
    await page.evaluate(
        "() => { const a = document.createElement('a'); a.id = 'sneaky'; a.href = 'javascript:alert(4)';"
        " a.textContent = 'x'; document.body.append(a); }"
    )
    await page.click("#sneaky")
    await page.wait_for_timeout(500)
    assert ran == []


@pytest.fixture
def keyed_url(base_url: str, tmp_path: Path) -> Iterator[str]:
    """The research app with an API key, in place of the open one (one app at a time: a replica keeps
    its warm NLP pool, which holds the CPUs a second replica's run would wait for)."""
    from ray import serve

    from deployments.research import APP_NAME, ROUTE_PREFIX, build_app

    settings = load_settings(
        overrides={"data_dir": tmp_path, "api_keys": [KEY], "serve": {"corpus_roots": [CORPUS_DIR]}}
    )
    serve.delete(APP_NAME)
    serve.run(build_app(settings), name=APP_NAME, route_prefix=ROUTE_PREFIX)
    yield base_url
    serve.delete(APP_NAME)


async def test_with_api_keys_the_page_asks_for_the_key_and_sends_it_on_every_call(keyed_url: str, page: Page) -> None:
    assert httpx.get(f"{keyed_url}/ui", timeout=30).status_code == 200  # the page holds no data
    assert httpx.get(f"{keyed_url}/corpora", timeout=30).status_code == 401
    assert httpx.get(f"{keyed_url}/corpora", headers={"Authorization": f"Bearer {KEY}"}, timeout=30).status_code == 200
    await page.goto(f"{keyed_url}/ui")
    await page.wait_for_selector("#keybox.shown", timeout=30_000)
    assert "APIキー" in await page.inner_text("#status")
    assert await page.locator("#corpus option").count() == 0
    await page.screenshot(path=str(screenshot_path("research_page_key_prompt")))
    await page.fill("#apikey", KEY)
    await page.click("#savekey")
    await page.wait_for_selector("#corpus option", state="attached", timeout=30_000)
    assert not await page.locator("#keybox").is_visible()
    await page.fill("#topic", TOPIC)
    await page.fill("#agents", "2")
    await page.fill("#iterations", "1")
    await page.select_option("#corpus", label="corpus")
    await page.click("#start")
    await page.wait_for_function(DONE, timeout=240_000)
    progress = await page.locator("#progress li").all_inner_texts()
    assert progress[0].startswith("調査開始") and progress[-1].startswith("調査完了")
    assert (await page.inner_text("#answer")).startswith("回答: ")
    assert await page.locator("#claims tr").count() >= 5
    assert "反復 1" in await page.inner_text("#transparency")
    await page.wait_for_function(
        "() => { const imgs = [...document.querySelectorAll('#charts img.chart')]; return imgs.length > 0"
        " && imgs.every(i => i.src.startsWith('blob:') && i.complete && i.naturalWidth > 0); }",
        timeout=60_000,
    )
    await page.screenshot(path=str(screenshot_path("research_page_keyed")), full_page=True)
