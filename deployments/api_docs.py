"""Each app's API docs at ``<prefix>/docs``: Swagger UI served by the app itself, so they open offline.

FastAPI's own ``/docs`` loads Swagger UI from a CDN: on a machine without the internet it is a blank
page. The assets here come from the ``fastapi-offline`` package (its copy of swagger-ui-dist 5, which
reads the OpenAPI 3.1 documents FastAPI writes) and are served under ``<prefix>/docs/assets/``. The
page names them with relative URLs (``docs/assets/...``, ``openapi.json``), so it works under any
route prefix without knowing it. ReDoc is not offered: its page always loads a logo from the
internet.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, Response

DOCS_PATH = "/docs"
ASSETS_PATH = "/docs/assets"
MEDIA_TYPES = {
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "favicon.png": "image/png",
}
ASSET_HEADERS = {"cache-control": "public, max-age=86400", "x-content-type-options": "nosniff"}


def assets_dir() -> Path:
    """The folder of the packaged Swagger UI files."""
    return Path(str(files("fastapi_offline") / "static"))


@cache
def _asset_bytes(name: str) -> bytes:
    return (assets_dir() / name).read_bytes()


def docs_html(title: str) -> str:
    """The Swagger UI page of an app called ``title`` (every URL relative to the app's prefix)."""
    page = get_swagger_ui_html(
        openapi_url="openapi.json",
        title=f"{title} — API",
        swagger_js_url="docs/assets/swagger-ui-bundle.js",
        swagger_css_url="docs/assets/swagger-ui.css",
        swagger_favicon_url="docs/assets/favicon.png",
    )
    return bytes(page.body).decode("utf-8")


def add_api_docs(api: FastAPI) -> None:
    """Serve ``GET /docs`` (Swagger UI) and its assets from this app (create ``api`` with
    ``docs_url=None, redoc_url=None``)."""
    html = docs_html(api.title)

    async def docs() -> HTMLResponse:
        return HTMLResponse(html, headers={"cache-control": "no-store"})

    async def asset(name: str) -> Response:
        if name not in MEDIA_TYPES:
            return Response(status_code=404)
        return Response(_asset_bytes(name), media_type=MEDIA_TYPES[name], headers=ASSET_HEADERS)

    api.add_api_route(DOCS_PATH, docs, methods=["GET"], include_in_schema=False)
    api.add_api_route(ASSETS_PATH + "/{name}", asset, methods=["GET"], include_in_schema=False)


__all__ = ["ASSETS_PATH", "DOCS_PATH", "MEDIA_TYPES", "add_api_docs", "assets_dir", "docs_html"]
