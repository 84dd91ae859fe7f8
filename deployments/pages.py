"""The HTML pages of the apps: plain HTML and JS files in ``data/pages`` (no build step), served open.

A page holds no data, so it and its shared assets (``static/page.css``, ``static/page.js``, the
label catalogue ``static/labels.json``) need no key; every data call the page makes sends the key
the person typed into it (``page.js``). Each app serves its own copy of the assets under its own
prefix, so a page works whichever apps a cluster deploys. An app declares its pages once::

    api = http_api("MAGI council", "...", pages={"/": "council.html"})

A page asked for without its trailing slash (``/magi``) is redirected to ``/magi/``: its relative
links (``static/page.css``, ``ask/stream``) must resolve inside the app's prefix.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import BaseModel, ConfigDict, Field, model_validator

from core.policy import PolicyModel, load_policy
from core.resources import data_path

LANGUAGES = ("ja", "en")
MEDIA_TYPES = {".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8"}
LABELS_FILE = "labels.yaml"
LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_.\-]*[A-Za-z0-9]|[A-Za-z]")
PLACEHOLDER = re.compile(r"\{[A-Za-z_]+\}")  # filled in by the page: not text a person reads
PAGE_HEADERS = {"cache-control": "no-store", "x-content-type-options": "nosniff"}


def pages_dir() -> Path:
    return data_path("pages")


def asset_names() -> tuple[str, ...]:
    """The stylesheet and scripts in data/pages (each page's own script and the shared ones)."""
    return tuple(sorted(p.name for p in pages_dir().iterdir() if p.suffix in MEDIA_TYPES))


ASSET_PATHS = tuple(f"/static/{name}" for name in (*asset_names(), "labels.json"))


class SystemEntry(BaseModel):
    """One system on the home page: its Serve app (serve.yaml's name) and its page inside the app."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    app: str = Field(min_length=1)
    page: str = Field(description="The page's path inside the app's route prefix ('' for the prefix itself).")


class PageCatalogue(PolicyModel):
    """Every label the pages show, in Japanese and English, and the systems the home page lists.

    ``shared`` names labels a page takes from a system's own catalogue (data/<system>/messages.yaml)
    rather than repeating them: ``{router: [why.]}`` gives the pages ``router.why.memory`` and every
    other key of the router's catalogue that starts with ``why.``."""

    policy_name: ClassVar[str] = "page labels"
    policy_version: ClassVar[int] = 1

    systems: list[SystemEntry] = Field(min_length=1)
    names: list[str] = Field(default_factory=list)
    literal: list[str] = Field(default_factory=list, description="Labels that are code (a JSON example), not words.")
    shared: dict[str, list[str]] = Field(default_factory=dict)
    labels: dict[str, dict[str, str]] = Field(min_length=1)

    @model_validator(mode="after")
    def _every_language(self) -> PageCatalogue:
        allowed = {n.casefold() for n in self.names}
        for key, texts in self.labels.items():
            missing = [lang for lang in LANGUAGES if not texts.get(lang)]
            if missing or set(texts) - set(LANGUAGES):
                raise ValueError(f"label {key!r} needs exactly the languages {', '.join(LANGUAGES)} (text for each)")
            for word in [] if key in self.literal else LATIN_WORD.findall(PLACEHOLDER.sub(" ", texts["ja"])):
                if word.casefold() not in allowed:
                    raise ValueError(
                        f"label {key!r}: the Japanese text has the Latin word {word!r}; translate it, or list it "
                        "under names if it is a proper name"
                    )
        return self

    def allowed_names(self) -> list[str]:
        """The Latin words a Japanese page may show: these names and those of the shared catalogues."""
        from core.messages import catalogue as system_catalogue

        return [*self.names, *(n for system in self.shared for n in system_catalogue(system).names)]

    def by_language(self) -> dict[str, dict[str, str]]:
        """``{"ja": {key: text}, "en": {key: text}}``: what the pages' script reads (the shared labels
        of the systems' catalogues included, under ``<system>.``)."""
        from core.messages import catalogue as system_catalogue

        texts = {key: dict(value) for key, value in self.labels.items()}
        for system, prefixes in self.shared.items():
            for key, message in system_catalogue(system).messages.items():
                if key.startswith(tuple(prefixes)):
                    texts[f"{system}.{key}"] = {"ja": message.ja, "en": message.en}
        return {lang: {key: value[lang] for key, value in texts.items()} for lang in LANGUAGES}


@cache
def catalogue() -> PageCatalogue:
    """The page catalogue, read once per process (a ConfigError names the file and the line)."""
    return load_policy(pages_dir() / LABELS_FILE, PageCatalogue)


@cache
def labels_json() -> bytes:
    """The labels by language, and the systems with the route prefix serve.yaml gives each app (the
    home page links them; an app serve.yaml does not list is left out)."""
    from deployments.apps import load_serve_config

    found = catalogue()
    prefixes = {app.name: app.route_prefix for app in load_serve_config().applications}
    systems = [{**s.model_dump(), "prefix": prefixes[s.app]} for s in found.systems if s.app in prefixes]
    body = {"labels": found.by_language(), "systems": systems}
    return json.dumps(body, ensure_ascii=False).encode("utf-8")


def _page_endpoint(file: str) -> Any:
    path = pages_dir() / file
    html = path.read_text(encoding="utf-8")  # read at import: a missing page fails the app's start

    async def page(request: Request) -> Response:
        if not str(request.scope.get("path") or "/").endswith("/") and request.scope.get("root_path"):
            return RedirectResponse(str(request.scope["path"]) + "/", status_code=308)
        return HTMLResponse(html, headers=PAGE_HEADERS)

    return page


async def asset(name: str) -> Response:
    """One shared asset of the pages (stylesheet, script, label catalogue)."""
    if name == "labels.json":
        return Response(labels_json(), media_type="application/json", headers=PAGE_HEADERS)
    if name not in asset_names():
        return Response(status_code=404)
    media = MEDIA_TYPES[Path(name).suffix]
    return Response((pages_dir() / name).read_bytes(), media_type=media, headers=PAGE_HEADERS)


def add_pages(api: FastAPI, pages: Mapping[str, str]) -> tuple[str, ...]:
    """Serve ``pages`` (app path -> file in data/pages) and the shared assets; the paths to leave open."""
    for route, file in pages.items():
        summary = f"A page (plain HTML and JS, data/pages/{file}): open, its data calls send the key"
        api.add_api_route(route, _page_endpoint(file), methods=["GET"], summary=summary, response_class=HTMLResponse)
    if pages:
        api.add_api_route("/static/{name}", asset, methods=["GET"], include_in_schema=False)
    return (*pages, *ASSET_PATHS) if pages else ()


__all__ = [
    "ASSET_PATHS",
    "LANGUAGES",
    "MEDIA_TYPES",
    "PageCatalogue",
    "SystemEntry",
    "add_pages",
    "asset",
    "asset_names",
    "catalogue",
    "labels_json",
    "pages_dir",
]
