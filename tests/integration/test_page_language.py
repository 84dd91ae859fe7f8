"""Every page in the visitor's language, also when something goes wrong: the leak test, in real Chromium.

One platform for the module: every app of serve.yaml with a page, as a first-time operator starts them
(no model configured: the council, the critic and the advisor answer 503), plus the council and the
critic on their shipped scripted models under their own prefixes (``/offline/magi``,
``/offline/critic``), so their results are read too. Each page is driven in Japanese and in English
through its states: opened, a refused input, the server out of reach (the browser's connection
refused), no model, and a result where one can be had. After each state the visible text is read
(labels, buttons, placeholders, titles): a Japanese page fails on any Latin word that is not a listed
name, an English page on any Japanese character, and both on an internal key or identifier (a label
key, a setting, snake_case, camelCase, a UUID, ``undefined``). Text a person or a model wrote is
marked with its own ``lang`` by the pages and is not the page's words; ``<code>`` and
``translate="no"`` (a JSON example) are literal.
Screenshots of every state at 1280 and 390 px: ``out/screenshots/lang_*.png``.

The API docs (``<prefix>/docs``) are opened with every request off the machine refused: Swagger UI
draws each app's operations from the app's own assets.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio
from playwright.async_api import Browser, BrowserContext, Page, Route

from core.settings import load_settings
from deployments.pages import catalogue
from tests.browser import screenshot_path
from tests.conftest import CORPUS_DIR
from tests.ports import free_port

pytestmark = pytest.mark.asyncio(loop_scope="module")

DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
LOCALES = {"ja": "ja-JP", "en": "en-US"}
WAIT_MS = 120_000  # a loaded machine: answers come, if slowly

# What a person reads: text nodes and the attributes that are read out or shown, skipping text another
# language wrote (an element with its own lang), literal code, and what is hidden.
VISIBLE_TEXT = """() => {
  const page = document.documentElement.lang;
  const own = (e) => {
    const marked = e.closest('[lang]');
    return !marked || marked === document.documentElement || marked.lang === page;
  };
  const shown = (e) => e.checkVisibility({ visibilityProperty: true }) && !e.closest('code, [translate=no]');
  const out = [document.title];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const e = n.parentElement;
    const said = n.textContent.trim();
    if (e && said && own(e) && shown(e) && !['SCRIPT', 'STYLE'].includes(e.tagName)) out.push(said);
  }
  for (const e of document.body.querySelectorAll('[placeholder], [aria-label], [title], img[alt]')) {
    if (!own(e) || !shown(e)) continue;
    for (const a of ['placeholder', 'aria-label', 'title', 'alt']) if (e.getAttribute(a)) out.push(e.getAttribute(a));
  }
  return out;
}"""
LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9\-]*[A-Za-z0-9]|[A-Za-z]")
JAPANESE = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")
URL = re.compile(r"https?://\S+|\b[\w.-]+\.(?:example|jp|com)\b\S*")
LABEL_KEYS = "common|error|home|system|system_what|sage|sage_role|verdict|council|critic|cafe|agent|language|research"
INTERNAL = [
    re.compile(rf"\b(?:{LABEL_KEYS}|advisor|router|llm|serve|magi)\.[a-z_]"),  # a label key, a setting
    re.compile(r"\b[a-z]+_[a-z0-9_]+\b"),  # snake_case
    re.compile(r"\b[a-z]+[A-Z][A-Za-z]+\b"),  # camelCase
    re.compile(r"\b(?:[A-Z][a-z]+){2,}\b"),  # PascalCase (BusinessInfoAgent)
    re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"),  # a UUID
    re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{12,}\b"),  # a hex id
    re.compile(r"\b(?:undefined|null|NaN|None)\b|\[object Object\]|\{[a-z_]+\}"),
    re.compile(r"Failed to fetch|network error|Field required|Value error|invalid request", re.IGNORECASE),
]
NEXT_FRAME = "() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(() => done(null))))"
EN_ALLOWED = {"日本語"}  # the language switch names Japanese in Japanese
IDEAS = (
    '{"ideas": [{"title": "丸の内の空きフロアで一時保育", '
    '"description": "丸の内のビルの空きフロアで、近隣で働く親向けの一時保育を運営する"}]}'
)


def leaks(texts: list[str], lang: str) -> list[str]:
    """What on a page in ``lang`` is not in that language, or is an internal identifier."""
    allowed = {n.casefold() for n in catalogue().allowed_names()}
    found = []
    for text in texts:
        words = URL.sub(" ", text)
        for pattern in INTERNAL:
            found += [f"{m.group()!r} in {text!r}" for m in pattern.finditer(words)]
        if lang == "ja":
            found += [f"{w!r} in {text!r}" for w in LATIN_WORD.findall(words) if w.casefold() not in allowed]
        elif JAPANESE.search(words) and text.strip() not in EN_ALLOWED:
            found.append(f"Japanese in {text!r}")
    return found


@pytest.fixture(scope="module")
def platform(ray_cluster: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Every app with a page, no model configured; the council and critic also on their scripted models."""
    from ray import serve
    from ray.serve.api import RunTarget

    from deployments import advisor, critic, magi, proxy, research, router

    data_dir = tmp_path_factory.mktemp("language-data")
    port = free_port()
    proxy.start_serve("127.0.0.1", port)
    base = {"data_dir": data_dir, "serve": {"corpus_roots": [CORPUS_DIR]}}
    scripted_critic = {"llm": {"provider": "python:critic.scripted:judge"}, "critic": {"min_total": 95}}
    apps = [
        (research, research.APP_NAME, research.ROUTE_PREFIX, {}),
        (magi, magi.APP_NAME, magi.ROUTE_PREFIX, {}),
        (critic, critic.APP_NAME, critic.ROUTE_PREFIX, {}),
        (router, router.APP_NAME, router.ROUTE_PREFIX, {}),
        (advisor, advisor.APP_NAME, advisor.ROUTE_PREFIX, {}),
        (magi, "magi-offline", "/offline/magi", {"llm": {"provider": "python:magi.scripted:respond"}}),
        (critic, "critic-offline", "/offline/critic", scripted_critic),
    ]
    try:
        serve.run_many(
            [
                RunTarget(module.build_app(load_settings(overrides={**base, **extra})), name=name, route_prefix=prefix)
                for module, name, prefix, extra in apps
            ]
        )
        yield f"http://127.0.0.1:{port}"
    finally:
        serve.shutdown()


@pytest_asyncio.fixture(loop_scope="module", params=["ja", "en"])
async def context(module_browser: Browser, request: pytest.FixtureRequest) -> AsyncIterator[BrowserContext]:
    """A browser context whose preferred language is the parameter's."""
    made = await module_browser.new_context(viewport=DESKTOP, locale=LOCALES[request.param])
    made.set_default_timeout(WAIT_MS)
    try:
        yield made
    finally:
        await made.close()


async def check(page: Page, name: str) -> None:
    """The page's visible text in its language, with no internal identifier; screenshots at 1280 and 390."""
    lang = await page.evaluate("document.documentElement.lang")
    assert LOCALES[lang] == await page.evaluate("navigator.language"), "the page follows the browser's language"
    found = leaks(await page.evaluate(VISIBLE_TEXT), lang)
    await page.screenshot(path=str(screenshot_path(f"lang_{name}_{lang}_1280")), full_page=True)
    await page.set_viewport_size(PHONE)
    await page.evaluate(NEXT_FRAME)  # laid out at the new width
    found += leaks(await page.evaluate(VISIBLE_TEXT), lang)
    await page.screenshot(path=str(screenshot_path(f"lang_{name}_{lang}_390")), full_page=True)
    await page.set_viewport_size(DESKTOP)
    assert found == [], f"{name} ({lang}): {found}"


async def opened(context: BrowserContext, url: str, ready: str) -> Page:
    page = await context.new_page()
    await page.goto(url)
    await page.wait_for_selector(ready, state="attached")
    await page.wait_for_selector("html[data-ready]", state="attached")  # labels applied in the visitor's language
    return page


async def refuse(route: Route) -> None:
    await route.abort("connectionrefused")


async def error_shown(page: Page, selector: str = "#status.error") -> str:
    await page.wait_for_selector(selector)
    return await page.inner_text(selector)


async def expected(page: Page, key: str) -> str:
    return str(await page.evaluate("(key) => MAGI.t(key)", key))


async def test_home_says_in_words_why_a_system_is_not_ready(platform: str, context: BrowserContext) -> None:
    page = await opened(context, platform + "/", '#systems li[data-app="advisor"] .why')
    await page.wait_for_function("() => !document.querySelector('#systems .h-wait')")
    why = await page.inner_text('#systems li[data-app="magi"] .why')
    assert why.startswith(await expected(page, "home.why_no_llm")) and "magi doctor" in why
    assert await page.locator('#systems li[data-app="router"] .why').count() == 0
    await check(page, "home")
    await page.route("**/healthz", refuse)  # the server out of reach
    await page.reload()
    await page.wait_for_function("() => document.querySelectorAll('#systems .why').length === 5")
    assert await page.inner_text('#systems li[data-app="research"] .health') == await expected(page, "home.unreachable")
    await check(page, "home_down")


async def test_council_page_in_every_state(platform: str, context: BrowserContext) -> None:
    page = await opened(context, platform + "/magi/", "#sage-casper")
    await check(page, "council")
    await page.fill("#question", "来期から週休3日制を導入すべきか")
    await page.click("#ask")
    assert await error_shown(page) == await expected(page, "error.no_llm")
    assert await page.locator(".sage .waiting").all_inner_texts() == [await expected(page, "error.stopped")] * 3
    await check(page, "council_no_model")
    page = await opened(context, platform + "/offline/magi/", "#sage-casper")
    await page.fill("#question", "！？")  # no letters: refused by the service
    await page.click("#ask")
    assert (await error_shown(page)).startswith(await expected(page, "error.invalid"))
    await check(page, "council_invalid")
    await page.route("**/ask/stream", refuse)
    await page.fill("#question", "来期から週休3日制を導入すべきか")
    await page.click("#ask")
    assert await error_shown(page) == await expected(page, "error.network")
    await check(page, "council_down")
    await page.unroute("**/ask/stream")
    question = (
        "来期から週休3日制を導入すべきか\nmagi-script: melchior=APPROVE balthasar=DENY,CONDITIONAL casper=APPROVE"
    )
    await page.fill("#question", question)
    await page.click("#ask")
    await page.wait_for_selector("#decision:not([hidden])", timeout=WAIT_MS)
    await check(page, "council_decided")


async def test_critic_page_in_every_state(platform: str, context: BrowserContext) -> None:
    page = await opened(context, platform + "/critic/", "#ideas-json")
    await check(page, "critic")
    await page.fill(
        "#ideas-json", '{"ideas": [{"title": "丸の内の空きフロアで一時保育", "description": "近隣で働く親向け"}]}'
    )
    await page.click("#evaluate")
    assert await error_shown(page) == await expected(page, "error.no_llm")
    await check(page, "critic_no_model")
    page = await opened(context, platform + "/offline/critic/", "#ideas-json")
    await page.fill("#ideas-json", '{"ideas": [{"title": "説明のないアイデア"}]}')  # no description: refused
    await page.click("#evaluate")
    said = await error_shown(page)
    assert (
        said.startswith(await expected(page, "error.invalid"))
        and await expected(page, "critic.field_description") in said
    )
    await check(page, "critic_invalid")
    await page.route("**/evaluate/stream", refuse)
    await page.fill("#ideas-json", IDEAS)
    await page.click("#evaluate")
    assert await error_shown(page) == await expected(page, "error.network")
    await check(page, "critic_down")
    await page.unroute("**/evaluate/stream")
    await page.click("#evaluate")  # scored, but under the minimum of 95: no idea selected, and why
    await page.wait_for_selector("#ranking .rank")
    await page.wait_for_function("() => document.getElementById('reason').textContent.length > 0")
    reason = await page.inner_text("#reason")
    assert "95" in reason and "min_total" not in reason
    await page.click("#ranking details summary")
    await check(page, "critic_none_selected")


async def test_cafe_page_in_every_state(platform: str, context: BrowserContext) -> None:
    page = await opened(context, platform + "/router/", "#query")
    await check(page, "cafe")
    await page.check("#staff")
    for answered, question in enumerate(("営業時間は？", "日曜は？"), start=1):  # a follow-up: decided by a pattern
        await page.fill("#query", question)
        await page.keyboard.press("Enter")
        await page.wait_for_function(
            "(n) => document.querySelectorAll('.msg.assistant .staff').length === n", arg=answered
        )
    staff = await page.locator(".msg.assistant .staff").last.inner_text()
    assert not re.search(r"[\^\[\]\\]|facility-info|BusinessInfoAgent|follow_up", staff), staff
    assert "日曜は" in staff, staff  # the words the follow-up was recognised by
    await check(page, "cafe_staff_view")
    await page.fill("#query", "あ" * 600)  # over router.max_query_chars: refused
    await page.keyboard.press("Enter")
    assert await error_shown(page) == await expected(page, "error.too_large")
    await check(page, "cafe_invalid")
    await page.route("**/ask", refuse)
    await page.fill("#query", "Wi-Fiはありますか")
    await page.keyboard.press("Enter")
    assert await error_shown(page) == await expected(page, "error.network")
    await check(page, "cafe_down")


async def test_advisor_page_in_every_state(platform: str, context: BrowserContext) -> None:
    page = await opened(context, platform + "/advisor/", "#examples button")
    assert (
        await page.locator('header.top nav a[href="/"]').count() == 1 and await page.locator("button.lang").count() == 1
    )
    await check(page, "advisor")
    await page.fill("#input", "原材料高騰で値上げしたい")
    await page.keyboard.press("Enter")
    await page.wait_for_selector(".msg.assistant .error")
    assert await page.inner_text(".msg.assistant .error") == await expected(page, "error.no_llm")
    await check(page, "advisor_no_model")
    await page.route("**/chat", refuse)
    await page.fill("#input", "値上げの相談です")
    await page.keyboard.press("Enter")
    await page.wait_for_function("() => document.querySelectorAll('.msg.assistant .error').length === 2")
    assert await page.locator(".msg.assistant .error").nth(1).inner_text() == await expected(page, "error.network")
    await check(page, "advisor_down")


async def test_research_page_in_every_state(platform: str, context: BrowserContext) -> None:
    page = await opened(context, platform + "/ui", "#corpus option")
    await check(page, "research")
    await page.fill("#topic", "？？？")  # no letters or digits: refused
    await page.click("#start")
    said = await error_shown(page)
    assert said.startswith(await expected(page, "error.invalid")) and await expected(page, "research.topic") in said
    await check(page, "research_invalid")
    await page.route("**/research", refuse)
    await page.fill("#topic", "中小企業の価格転嫁の現状")
    await page.click("#start")
    assert await error_shown(page) == await expected(page, "error.network")
    await check(page, "research_down")
    await page.unroute("**/research")
    await page.fill("#agents", "2")
    await page.fill("#iterations", "1")
    await page.click("#start")
    await page.wait_for_function(
        "(done) => document.getElementById('status').textContent === done",
        arg=await expected(page, "research.done"),
        timeout=WAIT_MS * 3,
    )
    await page.wait_for_function(  # every chart drawn (or said to be missing) before the screenshot
        "() => [...document.querySelectorAll('#charts img')].every((i) => i.complete && i.naturalWidth > 0)"
    )
    transparency = await page.inner_text("#transparency")
    assert (await expected(page, "research.scores")).split("{")[0].strip() in transparency
    await check(page, "research_done")


async def test_api_docs_open_with_no_network(platform: str, module_browser: Browser) -> None:
    """Every app's API docs draw their operations from the app's own assets; everything off the machine
    is refused (a CDN would be)."""
    context = await module_browser.new_context(viewport=DESKTOP)
    outside: list[str] = []

    async def local_only(route: Route) -> None:
        if route.request.url.startswith(platform):
            await route.continue_()
        else:
            outside.append(route.request.url)
            await route.abort("internetdisconnected")

    await context.route("**/*", local_only)
    try:
        page = await context.new_page()
        for prefix in ("", "/magi", "/critic", "/router", "/advisor"):
            await page.goto(f"{platform}{prefix}/docs")
            await page.wait_for_selector(".opblock", timeout=WAIT_MS)  # an operation, drawn by Swagger UI
            assert await page.locator(".opblock").count() >= 2, prefix
        await page.screenshot(path=str(screenshot_path("lang_api_docs_1280")), full_page=False)
        assert outside == []
    finally:
        await context.close()
