"""The fetcher against a misbehaving server on 127.0.0.1: every case ends as a typed FetchError or a page.

The server is a raw asyncio HTTP/1.1 server in a thread, so it can drip bytes, never end a body,
reset connections and lie about types. Two spies guard the whole module: any TCP connect to an
address other than 127.0.0.1 and any DNS lookup of a name fail the test (and never reach the network),
so the SSRF cases prove the guard refused *before* connecting.
"""

from __future__ import annotations

import asyncio
import itertools
import resource
import socket
import ssl
import struct
import tempfile
import threading
import time
import zlib
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from ipaddress import ip_address
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from scrapers import net_guard
from scrapers.errors import FetchError
from scrapers.fetch import FetchedPage, Fetcher, FetchPolicy

JAPANESE = "価格転嫁の現状：中小企業の価格転嫁率は四十九・七パーセントとなり、前回から上昇した。"
PAGE = f"<html><head><title>t</title></head><body><p>{JAPANESE}</p></body></html>"
ROBOTS = (
    b"User-agent: *\nDisallow: /private/\n\n"
    b"User-agent: MAGI-Cluster-Research\nDisallow: /private/\nDisallow: /no-magi/\n\n"
    b"User-agent: OtherBot\nDisallow: /\n"
)
MB = 1 << 20


def gzip_bomb(megabytes: int) -> bytes:
    """~1 KB of gzip per MB of zeros, built in 1 MB steps so the test itself stays small."""
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = bytes(MB)
    return b"".join(z.compress(zeros) for _ in range(megabytes)) + z.flush()


BOMB = gzip_bomb(150)


@dataclass
class Request:
    at: float
    path: str
    query: dict[str, str]
    headers: dict[str, str]


@dataclass
class HostileServer:
    """HTTP/1.1 on 127.0.0.1, one behaviour per path; records requests, hits and peak concurrency."""

    port: int = 0
    requests: list[Request] = field(default_factory=list)
    hits: Counter[str] = field(default_factory=Counter)
    active: int = 0
    peak: int = 0
    loop: asyncio.AbstractEventLoop = field(default_factory=asyncio.new_event_loop)
    _thread: threading.Thread | None = None

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def reset(self) -> None:
        self.requests.clear()
        self.hits.clear()
        self.active = self.peak = 0

    def start(self) -> None:
        server = self.loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        async def cancel_handlers() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(cancel_handlers(), self.loop).result(timeout=5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.loop.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            line, *header_lines = head.decode("latin-1").split("\r\n")
            target = urlsplit(line.split(" ")[1])
            headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in header_lines if h)}
            query = {k: v[0] for k, v in parse_qs(target.query).items()}
            self.requests.append(Request(time.monotonic(), target.path, query, headers))
            self.hits[target.path + ("?" + target.query if target.query else "")] += 1
            self.active += 1
            self.peak = max(self.peak, self.active)
            try:
                await ROUTES.get(target.path, missing)(self, writer, query, headers)
            finally:
                self.active -= 1
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()


Route = Callable[[HostileServer, asyncio.StreamWriter, dict[str, str], dict[str, str]], Awaitable[None]]
ROUTES: dict[str, Route] = {}


def route(path: str) -> Callable[[Route], Route]:
    def register(fn: Route) -> Route:
        ROUTES[path] = fn
        return fn

    return register


def head(status: int, headers: dict[str, str] | None = None, length: int | None = None) -> bytes:
    lines = [f"HTTP/1.1 {status} X", "Connection: close", *(f"{k}: {v}" for k, v in (headers or {}).items())]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def send(
    writer: asyncio.StreamWriter, status: int, body: bytes = b"", ctype: str = "text/html", **headers: str
) -> None:
    writer.write(
        head(status, {"Content-Type": ctype, **{k.replace("_", "-"): v for k, v in headers.items()}}, len(body)) + body
    )


async def missing(srv: HostileServer, w: asyncio.StreamWriter, q: dict[str, str], h: dict[str, str]) -> None:
    send(w, 404, b"not here")


@route("/robots.txt")
async def robots(srv: HostileServer, w: asyncio.StreamWriter, q: dict[str, str], h: dict[str, str]) -> None:
    host = h.get("host", "").split(":")[0]
    if host == "down.test":
        send(w, 503, b"")
    elif host == "gone.test":
        send(w, 404, b"")
    elif host == "slowrobots.test":
        await asyncio.sleep(10)
    else:
        send(w, 200, ROBOTS, "text/plain")


@route("/ok")
async def ok(srv: HostileServer, w: asyncio.StreamWriter, q: dict[str, str], h: dict[str, str]) -> None:
    send(w, 200, PAGE.encode(), "text/html; charset=utf-8")


ROUTES["/no-magi/page"] = ROUTES["/private/page"] = ok


@route("/host")
async def echo_host(srv: HostileServer, w: asyncio.StreamWriter, q: dict[str, str], h: dict[str, str]) -> None:
    send(w, 200, f"<p>Host: {h.get('host')}</p>".encode(), "text/html; charset=utf-8")


@route("/slow")
async def slow(srv: HostileServer, w: asyncio.StreamWriter, q: dict[str, str], h: dict[str, str]) -> None:
    # ?hold=N: the first requests wait (2 s at most) until N were in flight at once, so a loaded machine
    # cannot finish one before the client opens the next; an N above the client's limit still fails
    deadline = time.monotonic() + 2.0
    while srv.peak < int(q.get("hold", 0)) and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.3)
    send(w, 200, PAGE.encode(), "text/html; charset=utf-8")


@route("/drip")
async def drip(srv: HostileServer, w: asyncio.StreamWriter, q: dict[str, str], h: dict[str, str]) -> None:
    w.write(head(200, {"Content-Type": "text/html"}, 100_000))
    for _ in range(100_000):
        w.write(b"x")
        await w.drain()
        await asyncio.sleep(0.1)


@route("/endless")
async def endless(srv: HostileServer, w: asyncio.StreamWriter, q: dict[str, str], h: dict[str, str]) -> None:
    w.write(head(200, {"Content-Type": "text/html"}))
    chunk = b"<p>" + b"x" * (64 * 1024 - 7) + b"</p>"
    while True:
        w.write(chunk)
        await w.drain()


@route("/bomb")
async def bomb(srv: HostileServer, w: asyncio.StreamWriter, q: dict[str, str], h: dict[str, str]) -> None:
    send(w, 200, BOMB, "text/html", Content_Encoding="gzip")


@route("/gzipped")
async def gzipped(srv: HostileServer, w: asyncio.StreamWriter, q: dict[str, str], h: dict[str, str]) -> None:
    z = zlib.compressobj(6, zlib.DEFLATED, 31)
    send(w, 200, z.compress(PAGE.encode()) + z.flush(), "text/html; charset=utf-8", Content_Encoding="gzip")


@route("/badgzip")
async def badgzip(srv: HostileServer, w: asyncio.StreamWriter, q: dict[str, str], h: dict[str, str]) -> None:
    send(w, 200, b"\x1f\x8b\x08\x00garbage-not-deflate" * 10, "text/html", Content_Encoding="gzip")


@route("/brotli")
async def brotli(srv: HostileServer, w: asyncio.StreamWriter, q: dict[str, str], h: dict[str, str]) -> None:
    send(w, 200, b"\x0b\x02\x80hello\x03", "text/html", Content_Encoding="br")


@route("/loop")
async def loop(srv: HostileServer, w: asyncio.StreamWriter, q: dict[str, str], h: dict[str, str]) -> None:
    send(w, 302, b"", Location="/loop")


@route("/redirect")
async def redirect(srv: HostileServer, w: asyncio.StreamWriter, q: dict[str, str], h: dict[str, str]) -> None:
    send(w, 302, b"", Location=q["to"])


@route("/flaky")
async def flaky(srv: HostileServer, w: asyncio.StreamWriter, q: dict[str, str], h: dict[str, str]) -> None:
    if srv.hits["/flaky"] == 1:
        send(w, 500, b"oops")
    else:
        await ok(srv, w, q, h)


@route("/down")
async def down(srv: HostileServer, w: asyncio.StreamWriter, q: dict[str, str], h: dict[str, str]) -> None:
    send(w, 503, b"down")


@route("/limited")
async def limited(srv: HostileServer, w: asyncio.StreamWriter, q: dict[str, str], h: dict[str, str]) -> None:
    if srv.hits["/limited?" + "&".join(f"{k}={v}" for k, v in q.items())] == 1:
        send(w, 429, b"slow down", Retry_After=q["after"])
    else:
        await ok(srv, w, q, h)


@route("/reset")
async def reset(srv: HostileServer, w: asyncio.StreamWriter, q: dict[str, str], h: dict[str, str]) -> None:
    sock = w.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close() sends RST
    w.transport.abort()


@route("/binary")
async def binary(srv: HostileServer, w: asyncio.StreamWriter, q: dict[str, str], h: dict[str, str]) -> None:
    send(w, 200, b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8, "text/html")


@route("/nul")
async def nul(srv: HostileServer, w: asyncio.StreamWriter, q: dict[str, str], h: dict[str, str]) -> None:
    send(w, 200, b"<html>" + b"\x00\x01\x02\x03" * 500, "text/html; charset=utf-8")


@route("/image")
async def image(srv: HostileServer, w: asyncio.StreamWriter, q: dict[str, str], h: dict[str, str]) -> None:
    send(w, 200, b"\x89PNG....", "image/png")


@route("/sjis")
async def sjis(srv: HostileServer, w: asyncio.StreamWriter, q: dict[str, str], h: dict[str, str]) -> None:
    send(w, 200, PAGE.encode("cp932"), "text/html")


@route("/eucjp")
async def eucjp(srv: HostileServer, w: asyncio.StreamWriter, q: dict[str, str], h: dict[str, str]) -> None:
    send(w, 200, PAGE.encode("euc_jp"), "text/html")


@route("/sjis-meta")
async def sjis_meta(srv: HostileServer, w: asyncio.StreamWriter, q: dict[str, str], h: dict[str, str]) -> None:
    page = PAGE.replace("<head>", "<head><meta http-equiv='Content-Type' content='text/html; charset=Shift_JIS'>")
    send(w, 200, page.encode("cp932"), "text/html")


@route("/sjis-lying")
async def sjis_lying(srv: HostileServer, w: asyncio.StreamWriter, q: dict[str, str], h: dict[str, str]) -> None:
    send(w, 200, PAGE.encode("cp932"), "text/html; charset=utf-8")


# --- fixtures -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[HostileServer]:
    srv = HostileServer()
    srv.start()
    yield srv
    srv.stop()


@dataclass
class Spies:
    connects: list[tuple[Any, ...]] = field(default_factory=list)
    lookups: list[str] = field(default_factory=list)


@pytest.fixture(autouse=True)
def spies(server: HostileServer, monkeypatch: pytest.MonkeyPatch) -> Spies:
    """Only 127.0.0.1 may be connected to and no name may be resolved; every attempt is recorded."""
    server.reset()
    seen = Spies()
    real_connect = socket.socket.connect
    real_getaddrinfo = socket.getaddrinfo

    def connect(self: socket.socket, address: Any) -> None:
        seen.connects.append(tuple(address))
        if address[0] != "127.0.0.1":
            raise AssertionError(f"test tried to connect to {address}")
        return real_connect(self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            ip_address(host)
        except ValueError:
            seen.lookups.append(host)
            raise AssertionError(f"test tried to resolve {host!r}") from None
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return seen


class FakeDNS:
    """A resolver for Fetcher(resolver=...): fixed answers per name, one list per successive lookup."""

    def __init__(self, answers: dict[str, list[list[str]]]) -> None:
        self.answers = answers
        self.calls: list[str] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        self.calls.append(host)
        options = self.answers[host]
        return options[min(len(options), self.calls.count(host)) - 1]


DNS = {name: [["127.0.0.1"]] for name in ("down.test", "gone.test", "slowrobots.test", "a.test", "b.test")}
FAST = FetchPolicy(
    timeout_s=3,
    connect_timeout_s=1,
    read_timeout_s=1,
    write_timeout_s=1,
    pool_timeout_s=1,
    max_bytes=MB,
    max_decoded_bytes=2 * MB,
    retries=2,
    backoff_base_s=0.05,
    backoff_max_s=0.2,
    retry_after_max_s=2,
    politeness_delay_s=0,
    respect_robots=False,
    robots_timeout_s=0.5,
    allow_networks=("127.0.0.1/32",),
)


def make(resolver: FakeDNS | None = None, **changes: Any) -> Fetcher:
    return Fetcher(policy=FAST.model_copy(update=changes), resolver=resolver or FakeDNS(DNS))


async def fetch(url: str, resolver: FakeDNS | None = None, **changes: Any) -> FetchedPage:
    return (await fetch_all([url], resolver, **changes))[0]


async def fetch_all(urls: list[str], resolver: FakeDNS | None = None, **changes: Any) -> list[FetchedPage]:
    async def go() -> list[FetchedPage]:
        fetcher = make(resolver, **changes)
        try:
            return list(await asyncio.gather(*(fetcher.fetch(u) for u in urls)))
        finally:
            await fetcher.aclose()

    return await go()


async def fails(url: str, kind: str, resolver: FakeDNS | None = None, **changes: Any) -> FetchError:
    with pytest.raises(FetchError) as info:
        await fetch(url, resolver, **changes)
    assert info.value.kind == kind, str(info.value)
    assert info.value.url == url and "\n" not in str(info.value)
    return info.value


def maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# --- abuse of size and time -------------------------------------------------------------------------------


async def test_slow_drip_hits_the_total_deadline(server: HostileServer) -> None:
    """Read timeouts never fire on a server that sends a byte every 0.1 s; the deadline does, retries or not."""
    start = time.monotonic()
    error = await fails(server.url("/drip"), "timeout", timeout_s=1.0, read_timeout_s=0.5)
    # the drip would go on for hours: ending with "deadline" after the deadline is the deadline's doing
    assert time.monotonic() - start > 0.9 and "deadline" in str(error)


async def test_endless_body_is_cut_at_the_cap(server: HostileServer) -> None:
    before = maxrss_mb()
    await fails(server.url("/endless"), "too_large")  # the body never ends: only the cap ends the read
    assert maxrss_mb() - before < 50


async def test_gzip_bomb_is_stopped_early(server: HostileServer) -> None:
    """150 KB that inflate to 150 MB: stopped one 64 KiB step past the 2 MB cap."""
    before = maxrss_mb()
    await fails(server.url("/bomb"), "decompression_bomb")
    assert maxrss_mb() - before < 50


async def test_gzipped_page_is_decoded(server: HostileServer) -> None:
    page = await fetch(server.url("/gzipped"))
    assert JAPANESE in page.text and page.content.startswith(b"<html>")


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("/badgzip", "bad_encoding"),
        ("/brotli", "bad_encoding"),
        ("/binary", "binary"),
        ("/nul", "binary"),
        ("/image", "content_type"),
    ],
)
async def test_lying_bodies_are_refused(server: HostileServer, path: str, kind: str) -> None:
    await fails(server.url(path), kind)


async def test_redirect_loop(server: HostileServer) -> None:
    await fails(server.url("/loop"), "redirects", max_redirects=3)
    assert server.hits["/loop"] == 4


async def test_redirects_are_followed_and_recorded(server: HostileServer) -> None:
    url = server.url("/redirect?to=/ok")
    page = await fetch(url)
    assert page.redirects == [url] and page.final_url == server.url("/ok") and JAPANESE in page.text


# --- charsets ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "encoding"),
    [("/sjis", "cp932"), ("/eucjp", "euc_jp"), ("/sjis-meta", "cp932"), ("/sjis-lying", "cp932"), ("/ok", "utf-8")],
)
async def test_japanese_pages_decode(server: HostileServer, path: str, encoding: str) -> None:
    page = await fetch(server.url(path))
    assert page.encoding == encoding and JAPANESE in page.text


# --- retries -------------------------------------------------------------------------------------------------


async def test_500_then_200_succeeds_on_retry(server: HostileServer) -> None:
    page = await fetch(server.url("/flaky"))
    assert page.attempts == 2 and server.hits["/flaky"] == 2


async def test_persistent_503_gives_up_after_retries(server: HostileServer) -> None:
    error = await fails(server.url("/down"), "http_status")
    assert "503" in str(error) and "3 attempts" in str(error) and server.hits["/down"] == 3


async def test_404_is_not_retried(server: HostileServer) -> None:
    error = await fails(server.url("/missing"), "http_status")
    assert "404" in str(error) and server.hits["/missing"] == 1


async def test_429_retry_after_is_honoured(server: HostileServer) -> None:
    start = time.monotonic()
    page = await fetch(server.url("/limited?after=1"))
    assert page.attempts == 2 and time.monotonic() - start >= 0.95


async def test_429_retry_after_over_the_cap_gives_up_at_once(server: HostileServer) -> None:
    error = await fails(server.url("/limited?after=3600"), "http_status")
    assert "429" in str(error) and "Retry-After" in str(error)
    assert server.hits["/limited?after=3600"] == 1  # one try: no wait, no retry


async def test_connection_reset_is_retried_then_network(server: HostileServer) -> None:
    await fails(server.url("/reset"), "network", retries=1)
    assert server.hits["/reset"] == 2


# --- robots.txt ------------------------------------------------------------------------------------------------


async def test_robots_disallow_and_allow(server: HostileServer) -> None:
    async def go() -> tuple[FetchedPage, list[str]]:
        fetcher = make(respect_robots=True)
        try:
            kinds = []
            for path in ("/no-magi/page", "/private/page"):
                with pytest.raises(FetchError) as info:
                    await fetcher.fetch(server.url(path))
                kinds.append(info.value.kind)
            return await fetcher.fetch(server.url("/ok")), kinds
        finally:
            await fetcher.aclose()

    page, kinds = await go()
    assert kinds == ["robots", "robots"] and JAPANESE in page.text
    assert server.hits["/robots.txt"] == 1 and "/no-magi/page" not in server.hits
    ua = server.requests[0].headers["user-agent"]
    assert ua.startswith("MAGI-Cluster-Research/") and "research bot" in ua


@pytest.mark.parametrize(
    ("host", "outcome"), [("gone.test", "ok"), ("down.test", "robots"), ("slowrobots.test", "robots")]
)
async def test_robots_unavailable_allows_unreachable_disallows(server: HostileServer, host: str, outcome: str) -> None:
    """RFC 9309: 4xx means no rules; 5xx or a timeout means stay away for this run."""
    url = server.url("/ok", host=host)
    if outcome == "ok":
        assert JAPANESE in (await fetch(url, respect_robots=True)).text
    else:
        await fails(url, outcome, respect_robots=True)


# --- SSRF guard ------------------------------------------------------------------------------------------------

PRIVATE_TARGETS = [
    "http://127.0.0.2:9/",
    "http://10.0.0.1/",
    "http://169.254.169.254/latest/meta-data/",
    "http://[::1]:9/",
    "http://[::ffff:10.0.0.1]/",
    "http://[fd00:ec2::254]/",
    "http://100.64.0.1/",
    "http://0.0.0.0/",
    "http://224.0.0.1/",
    "http://192.168.1.1:8080/",
    "gopher://127.0.0.1:70/",
    "http://metadata.test/",
]


@pytest.mark.parametrize("target", PRIVATE_TARGETS)
async def test_redirect_to_private_address_is_refused_before_connecting(
    server: HostileServer, spies: Spies, target: str
) -> None:
    dns = FakeDNS({"metadata.test": [["169.254.169.254"]]})
    error = await fails(server.url(f"/redirect?to={target}"), "ssrf", resolver=dns)
    assert "refused" in str(error)
    assert {address[0] for address in spies.connects} == {"127.0.0.1"} and not spies.lookups


@pytest.mark.parametrize("target", [t for t in PRIVATE_TARGETS if t.startswith("http:")])
async def test_private_url_is_refused_before_connecting(spies: Spies, target: str) -> None:
    await fails(target, "ssrf", resolver=FakeDNS({"metadata.test": [["169.254.169.254"]]}), respect_robots=True)
    assert spies.connects == [] and not spies.lookups


@pytest.mark.parametrize(
    ("host", "addresses", "port"),
    [
        ("mixed.test", ["93.184.216.34", "10.0.0.1"], 80),  # one bad address is enough
        ("public.test", ["93.184.216.34"], 8080),  # a public address, but not on 80/443
        ("localhost.test", ["127.0.0.1"], 80),  # loopback is refused unless allowed
    ],
)
async def test_hostnames_are_vetted_by_every_address(spies: Spies, host: str, addresses: list[str], port: int) -> None:
    await fails(f"http://{host}:{port}/", "ssrf", resolver=FakeDNS({host: [addresses]}), allow_networks=())
    assert spies.connects == []


async def test_loopback_needs_allow_networks_or_allow_private(server: HostileServer, spies: Spies) -> None:
    await fails(server.url("/ok"), "ssrf", allow_networks=())
    assert spies.connects == []
    assert JAPANESE in (await fetch(server.url("/ok"), allow_networks=(), allow_private=True)).text


async def test_connection_is_pinned_to_the_vetted_address(server: HostileServer, spies: Spies) -> None:
    """DNS rebinding: the name resolves to 127.0.0.1 when vetted, then to 10.0.0.1; the connect uses the pin."""
    dns = FakeDNS({"rebind.test": [["127.0.0.1"], ["10.0.0.1"]]})
    url = server.url("/host", host="rebind.test")

    async def go() -> tuple[FetchedPage, FetchError]:
        fetcher = make(dns)
        try:
            page = await fetcher.fetch(url)
            with pytest.raises(FetchError) as info:
                await fetcher.fetch(url)  # vetted again: now the answer is private
            return page, info.value
        finally:
            await fetcher.aclose()

    page, error = await go()
    assert f"Host: rebind.test:{server.port}" in page.text  # the name is kept for Host (and SNI)
    assert error.kind == "ssrf" and "10.0.0.1" in str(error)
    assert dns.calls == ["rebind.test", "rebind.test"] and not spies.lookups
    assert [address[0] for address in spies.connects] == ["127.0.0.1"]


# --- concurrency and politeness ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("hosts", "per_host", "concurrency", "peak"),
    [
        (["a.test"], 2, 16, 2),
        (["a.test", "b.test"], 2, 16, 4),
        (["a.test", "b.test"], 2, 3, 3),
    ],
)
async def test_concurrency_limits(
    server: HostileServer, hosts: list[str], per_host: int, concurrency: int, peak: int
) -> None:
    urls = [server.url(f"/slow?i={i}&hold={peak}", host=host) for host in hosts for i in range(2 * per_host)]
    await fetch_all(urls, per_host_concurrency=per_host, concurrency=concurrency)
    assert server.peak == peak


async def test_politeness_delay_between_requests_to_one_host(server: HostileServer) -> None:
    await fetch_all([server.url(f"/ok?i={i}") for i in range(4)], politeness_delay_s=0.2, per_host_concurrency=4)
    starts = sorted(r.at for r in server.requests)
    assert len(starts) == 4 and min(b - a for a, b in itertools.pairwise(starts)) >= 0.15


# --- TLS through the pin ---------------------------------------------------------------------------------------


def tls_contexts(name: str) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A throwaway CA and a certificate for ``name``: (server context, client context trusting the CA)."""
    x509 = pytest.importorskip("cryptography.x509")
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    def cert(subject: str, key: Any, issuer: str, issuer_key: Any, ca: bool) -> Any:
        now = datetime.now(UTC)
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(x509.oid.NameOID.COMMON_NAME, subject)]))
            .issuer_name(x509.Name([x509.NameAttribute(x509.oid.NameOID.COMMON_NAME, issuer)]))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(hours=1))
            .not_valid_after(now + timedelta(hours=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if not ca:
            builder = builder.add_extension(x509.SubjectAlternativeName([x509.DNSName(subject)]), critical=False)
        return builder.sign(issuer_key, hashes.SHA256())

    ca_key, leaf_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_cert = cert("Test CA", ca_key, "Test CA", ca_key, ca=True)
    leaf = cert(name, leaf_key, "Test CA", ca_key, ca=False)
    pem = serialization.Encoding.PEM
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    with tempfile.TemporaryDirectory() as tmp:
        cert_file, key_file = Path(tmp, "cert.pem"), Path(tmp, "key.pem")
        cert_file.write_bytes(leaf.public_bytes(pem))
        key_file.write_bytes(
            leaf_key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        )
        server.load_cert_chain(cert_file, key_file)
    client = ssl.create_default_context(cadata=ca_cert.public_bytes(pem).decode())
    return server, client


async def test_https_uses_the_name_for_sni_and_certificate(
    server: HostileServer, spies: Spies, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The TCP connect goes to the pinned 127.0.0.1, but TLS verifies the certificate for the URL's name."""
    server_ctx, client_ctx = tls_contexts("secure.test")
    sni: list[str | None] = []
    server_ctx.sni_callback = lambda _sock, name, _ctx: sni.append(name)
    tls = asyncio.run_coroutine_threadsafe(
        asyncio.start_server(server._handle, "127.0.0.1", 0, ssl=server_ctx), server.loop
    ).result(timeout=5)
    port = tls.sockets[0].getsockname()[1]
    monkeypatch.setattr(net_guard, "tls_context", lambda: client_ctx)  # trusts the test's own CA
    dns = FakeDNS({"secure.test": [["127.0.0.1"]], "impostor.test": [["127.0.0.1"]]})
    try:
        page = await fetch(f"https://secure.test:{port}/host", dns)
        error = await fails(f"https://impostor.test:{port}/host", "network", dns, retries=0)
    finally:
        server.loop.call_soon_threadsafe(tls.close)
    assert f"Host: secure.test:{port}" in page.text and "CERTIFICATE_VERIFY_FAILED" in str(error)
    assert sni == ["secure.test", "impostor.test"]
    assert {address[0] for address in spies.connects} == {"127.0.0.1"} and not spies.lookups
