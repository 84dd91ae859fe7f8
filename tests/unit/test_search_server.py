"""A real SearXNG-compatible HTTP server on 127.0.0.1 for the search tests (plus its own sanity test).

It answers ``/search`` from a script of replies (JSON, 403, 500, slow, HTML...) and records the
query parameters of every request, so tests can count what reached the "instance".
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx

from tests.ports import free_port


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: Any = None  # dict/list: JSON; str: text/html
    delay_s: float = 0.0
    location: str | None = None  # sent as the Location header (redirects)


Responder = Callable[[dict[str, str]], Reply]


def row(n: int, **extra: Any) -> dict[str, Any]:
    """One SearXNG result row."""
    return {
        "url": f"https://example.org/{n}",
        "title": f"Title {n}",
        "content": f"Content {n}",
        "engine": "duckduckgo",
        "engines": ["duckduckgo", "brave"],
        "score": 1.0 / n,
        "category": "general",
        "publishedDate": None,
        **extra,
    }


def answer(*rows: dict[str, Any], unresponsive: list[list[str]] | None = None) -> Reply:
    """A 200 JSON answer shaped like SearXNG's."""
    return Reply(
        200,
        {
            "query": "q",
            "number_of_results": len(rows),
            "results": list(rows),
            "answers": [],
            "suggestions": [],
            "unresponsive_engines": unresponsive or [],
        },
    )


def script(*replies: Reply) -> Responder:
    """Replies in order; the last one repeats."""
    queue = list(replies)

    def respond(_params: dict[str, str]) -> Reply:
        return queue.pop(0) if len(queue) > 1 else queue[0]

    return respond


class SearxngServer:
    """``ThreadingHTTPServer`` on an ephemeral loopback port; ``requests`` holds each query's params."""

    def __init__(self, respond: Responder) -> None:
        self.respond = respond
        self.requests: list[dict[str, str]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                if parts.path != "/search":
                    self._send(Reply(404, "not found"))
                    return
                params = dict(parse_qsl(parts.query))
                outer.requests.append(params)
                self._send(outer.respond(params))

            def _send(self, reply: Reply) -> None:
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                is_json = not isinstance(reply.body, str)
                data = (json.dumps(reply.body) if is_json else reply.body).encode()
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json" if is_json else "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                if reply.location is not None:
                    self.send_header("Location", reply.location)
                self.end_headers()
                with contextlib.suppress(OSError):  # the client gave up (timeout tests)
                    self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    def __enter__(self) -> SearxngServer:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


@contextmanager
def serving(*replies: Reply) -> Iterator[SearxngServer]:
    with SearxngServer(script(*replies)) as server:
        yield server


def closed_port_url() -> str:
    """A loopback URL where nothing listens (connection refused)."""
    return f"http://127.0.0.1:{free_port()}"


def test_server_answers_json_and_records_params() -> None:
    with serving(answer(row(1)), Reply(403, "<h1>Forbidden</h1>")) as server:
        first = httpx.get(f"{server.url}/search", params={"q": "価格", "format": "json"})
        second = httpx.get(f"{server.url}/search", params={"q": "x"})
    assert first.json()["results"][0]["url"] == "https://example.org/1"
    assert second.status_code == 403
    assert server.requests == [{"q": "価格", "format": "json"}, {"q": "x"}]
