"""Each app's API docs at ``<prefix>/docs`` (Swagger UI) and ``<prefix>/redoc`` (ReDoc), served by the
app itself, so they open offline.

FastAPI's own pages load their scripts from a CDN: on a machine without the internet they are blank.
The assets here come from the ``fastapi-offline`` package (its copies of swagger-ui-dist 5 and ReDoc 2,
which read the OpenAPI 3.1 documents FastAPI writes) and are served under ``<prefix>/docs/assets/``.
The pages name them with relative URLs (``docs/assets/...``, ``openapi.json``), so they work under any
route prefix without knowing it.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse, Response

DOCS_PATH = "/docs"
REDOC_PATH = "/redoc"
ASSETS_PATH = "/docs/assets"
MEDIA_TYPES = {
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "redoc.standalone.js": "text/javascript; charset=utf-8",
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


def redoc_html(title: str) -> str:
    """The ReDoc page of an app called ``title`` (no web fonts: nothing from outside)."""
    page = get_redoc_html(
        openapi_url="openapi.json",
        title=f"{title} — API",
        redoc_js_url="docs/assets/redoc.standalone.js",
        redoc_favicon_url="docs/assets/favicon.png",
        with_google_fonts=False,
    )
    return bytes(page.body).decode("utf-8")


def add_api_docs(api: FastAPI) -> None:
    """Serve ``GET /docs`` (Swagger UI), ``GET /redoc`` and their assets from this app (create ``api``
    with ``docs_url=None, redoc_url=None``)."""
    swagger, redoc = docs_html(api.title), redoc_html(api.title)

    async def docs() -> HTMLResponse:
        return HTMLResponse(swagger, headers={"cache-control": "no-store"})

    async def redoc_page() -> HTMLResponse:
        return HTMLResponse(redoc, headers={"cache-control": "no-store"})

    async def asset(name: str) -> Response:
        if name not in MEDIA_TYPES:
            return Response(status_code=404)
        return Response(_asset_bytes(name), media_type=MEDIA_TYPES[name], headers=ASSET_HEADERS)

    api.add_api_route(DOCS_PATH, docs, methods=["GET"], include_in_schema=False)
    api.add_api_route(REDOC_PATH, redoc_page, methods=["GET"], include_in_schema=False)
    api.add_api_route(ASSETS_PATH + "/{name}", asset, methods=["GET"], include_in_schema=False)


__all__ = [
    "ASSETS_PATH",
    "DOCS_PATH",
    "MEDIA_TYPES",
    "REDOC_PATH",
    "add_api_docs",
    "assets_dir",
    "docs_html",
    "redoc_html",
]
