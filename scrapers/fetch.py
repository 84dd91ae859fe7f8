"""Fetch pages over HTTP(S) with httpx, or from a local corpus directory, surviving the hostile web.

Research agents fetch whatever search engines and pages point at: slow-drip servers, endless
bodies, gzip bombs, redirect loops, binary files labelled ``text/html``, undeclared Shift_JIS, and
links into the private network. Each page therefore goes through, per redirect hop: the SSRF guard
(:mod:`scrapers.net_guard`, which also pins the connection to the vetted address), robots.txt
(:mod:`scrapers.robots`), a per-host slot with a politeness delay plus a global slot, the request
with connect/read/write/pool timeouts under one total deadline, a streamed body that is capped on
the wire and decompressed by us in bounded steps, type and binary checks, and charset decoding
(:mod:`scrapers.charset`). 5xx, 429, timeouts and connection errors are retried with backoff.

Every failure is a :class:`FetchError` whose ``kind`` is one of:

``timeout``             connect/read/write/pool or DNS timeout, or the page's total deadline passed
``too_large``           Content-Length or bytes received (or an uncompressed body) over the cap
``decompression_bomb``  a compressed body that decompresses to more than ``max_decoded_bytes``
``bad_encoding``        an unsupported or corrupt ``Content-Encoding``
``redirects``           more than ``max_redirects`` redirects, or a redirect without a usable Location
``content_type``        a media type outside ``allowed_content_types``
``binary``              bytes that are not text (NULs, PNG/ZIP/PDF... signatures) under a text type
``robots``              robots.txt disallows the URL (also when it was unreachable: RFC 9309)
``ssrf``                refused before connecting: non-public address, port, or a redirect's scheme
``http_status``         an HTTP error status; the status is in the message
``network``             connection refused or reset, protocol error, DNS failure
``unsupported_scheme``  the URL is not http(s) and no corpus file
``invalid_url``         the URL cannot be parsed
``local_read``          a corpus file could not be read
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

import httpx
from pydantic import BaseModel, ConfigDict, Field, field_validator

from core.retry import backoff_delay, parse_retry_after, retry
from scrapers.charset import SNIFF_BYTES, decode_body, sniff_binary
from scrapers.errors import FetchError
from scrapers.net_guard import DEFAULT_PORTS, NetGuard, PinnedTransport, Resolver, parse_networks
from scrapers.robots import RobotsRules, product_token, rules_from_status, unreachable
from scrapers.search.corpus_files import CorpusReadError, read_regular
from scrapers.settings import FetchSettings

USER_AGENT = "MAGI-Cluster-Research/0.1 (+https://github.com/magi-cluster; research bot)"
ALLOWED_TYPES = ("text/html", "application/xhtml+xml", "text/plain", "text/markdown")
LOCAL_TYPES = {".html": "text/html", ".htm": "text/html", ".md": "text/markdown", ".txt": "text/plain"}
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
ROBOTS_MAX_REDIRECTS = 5  # RFC 9309 §2.3.1.2
_STEP = 64 * 1024  # most decoded bytes produced per decompression step


class FetchPolicy(BaseModel):
    """Every knob of the fetcher; defaults match :class:`scrapers.settings.FetchSettings`."""

    model_config = ConfigDict(frozen=True)

    user_agent: str = USER_AGENT
    timeout_s: float = Field(20.0, gt=0, description="Total deadline for one page: redirects, retries, body.")
    connect_timeout_s: float = Field(5.0, gt=0)
    read_timeout_s: float = Field(10.0, gt=0, description="Longest silence between two reads.")
    write_timeout_s: float = Field(5.0, gt=0)
    pool_timeout_s: float = Field(5.0, gt=0)
    max_bytes: int = Field(5_000_000, ge=1, description="Most bytes received for one body.")
    max_decoded_bytes: int = Field(5_000_000, ge=1, description="Most bytes of a body after decompression.")
    max_redirects: int = Field(5, ge=0)
    allowed_content_types: tuple[str, ...] = ALLOWED_TYPES
    retries: int = Field(2, ge=0, description="Extra attempts after 5xx, 429, timeouts, connection errors.")
    backoff_base_s: float = Field(0.5, ge=0)
    backoff_max_s: float = Field(8.0, ge=0)
    retry_after_max_s: float = Field(30.0, ge=0, description="A longer Retry-After means giving up.")
    concurrency: int = Field(16, ge=1)
    per_host_concurrency: int = Field(2, ge=1)
    politeness_delay_s: float = Field(0.5, ge=0, description="Least time between request starts to one host.")
    respect_robots: bool = True
    robots_timeout_s: float = Field(5.0, gt=0)
    robots_max_bytes: int = Field(512_000, ge=1)
    allow_private: bool = Field(False, description="Switch the SSRF guard off (tests, trusted intranets).")
    allow_networks: tuple[str, ...] = Field((), description="Networks allowed despite the guard, any port.")
    allowed_ports: tuple[int, ...] = (80, 443)

    @field_validator("allow_networks")
    @classmethod
    def _networks_parse(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        parse_networks(value)
        return value

    @classmethod
    def of(cls, fetch: FetchSettings) -> FetchPolicy:
        """The policy of the ``fetch`` settings section."""
        return cls(
            timeout_s=fetch.timeout_s,
            connect_timeout_s=min(5.0, fetch.timeout_s),
            read_timeout_s=min(10.0, fetch.timeout_s),
            max_bytes=fetch.max_bytes,
            max_decoded_bytes=fetch.max_bytes,
            retries=fetch.retries,
            concurrency=fetch.concurrency,
            per_host_concurrency=fetch.per_host_concurrency,
            politeness_delay_s=fetch.politeness_delay_s,
            respect_robots=fetch.respect_robots,
            allow_private=fetch.allow_private,
        )


class FetchedPage(BaseModel):
    url: str
    final_url: str
    status: int
    content_type: str
    content: bytes  # the body after Content-Encoding was undone
    fetched_at: datetime
    origin: str  # "http" or "local"
    text: str = ""  # ``content`` decoded with ``encoding``
    encoding: str | None = None  # Python codec name, e.g. "utf-8", "cp932", "euc_jp"
    redirects: list[str] = Field(default_factory=list)  # every URL that answered with a redirect, in order
    attempts: int = 1


class UrlResolver(Protocol):
    """Anything that maps a URL to a local file (a :class:`LocalCorpus` does)."""

    def path_for(self, url: str) -> Path | None: ...


class _Retryable(FetchError):
    """A failure worth another attempt (5xx, 429, timeout, connection error)."""

    def __init__(self, message: str, *, url: str, kind: str, retry_after: float | None = None) -> None:
        super().__init__(message, url=url, kind=kind)
        self.retry_after = retry_after


@dataclass
class _Host:
    semaphore: asyncio.Semaphore
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    next_start: float = 0.0


class Fetcher:
    """One fetcher per agent: one connection pool, robots cache, SSRF pins and per-host slots.

    The "global" concurrency limit and the politeness delay are per fetcher (asyncio primitives cannot
    be shared across event loops, and agents run in separate Ray worker processes anyway).
    """

    def __init__(
        self,
        *,
        local: UrlResolver | None = None,
        policy: FetchPolicy | None = None,
        allow_networks: Iterable[str] = (),
        resolver: Resolver | None = None,
        timeout_s: float | None = None,
        max_bytes: int | None = None,
        max_redirects: int | None = None,
    ) -> None:
        """``timeout_s``/``max_bytes``/``max_redirects`` override the policy (the foundation API);
        ``allow_networks`` extends it; ``resolver`` replaces DNS (tests)."""
        policy = policy or FetchPolicy()
        overrides: dict[str, object] = {
            key: value
            for key, value in (
                ("timeout_s", timeout_s),
                ("max_bytes", max_bytes),
                ("max_decoded_bytes", max_bytes),
                ("max_redirects", max_redirects),
            )
            if value is not None
        }
        if allow_networks:
            overrides["allow_networks"] = (*policy.allow_networks, *allow_networks)
        if overrides:
            policy = FetchPolicy.model_validate({**policy.model_dump(), **overrides})
        self.policy = policy
        self._local = local
        self._guard = NetGuard(
            allow_private=policy.allow_private,
            allow_networks=policy.allow_networks,
            allowed_ports=policy.allowed_ports,
            resolver=resolver,
            resolve_timeout_s=policy.connect_timeout_s,
        )
        limits = httpx.Limits(max_connections=policy.concurrency, max_keepalive_connections=policy.concurrency)
        self._client = httpx.AsyncClient(
            transport=PinnedTransport(self._guard, limits=limits),
            timeout=httpx.Timeout(
                connect=policy.connect_timeout_s,
                read=policy.read_timeout_s,
                write=policy.write_timeout_s,
                pool=policy.pool_timeout_s,
            ),
            follow_redirects=False,  # we follow them, so that every hop is vetted
            trust_env=False,  # no proxies from the environment: they would bypass the guard
            headers={
                "User-Agent": policy.user_agent,
                "Accept": "text/html,application/xhtml+xml,text/plain;q=0.8",
                "Accept-Encoding": "gzip, deflate",  # only what _BodyDecoder can bound
            },
        )
        self._global = asyncio.Semaphore(policy.concurrency)
        self._hosts: dict[str, _Host] = {}
        self._robots: dict[str, RobotsRules] = {}
        self._robots_locks: dict[str, asyncio.Lock] = {}
        self._agent = product_token(policy.user_agent)

    async def fetch(self, url: str) -> FetchedPage:
        path = self._local.path_for(url) if self._local else None
        if path is not None:
            return self._read_local(url, path)
        if not url[:8].lower().startswith(("http://", "https://")):
            raise FetchError(
                f"cannot fetch {url}: only http(s) URLs or corpus files are supported",
                url=url,
                kind="unsupported_scheme",
            )
        try:
            target = httpx.URL(url)
        except httpx.InvalidURL as exc:
            raise FetchError(f"cannot fetch {url}: invalid URL ({exc})", url=url, kind="invalid_url") from None
        try:
            return await self._fetch_http(url, target)
        except FetchError as exc:
            if type(exc) is FetchError and exc.url == url:
                raise
            raise FetchError(str(exc), url=url, kind=exc.kind) from exc

    async def aclose(self) -> None:
        await self._client.aclose()

    def _read_local(self, url: str, path: Path) -> FetchedPage:
        try:  # the corpus checked the file when it was indexed; it may have changed since
            content = read_regular(path, self.policy.max_bytes, truncate=True)
        except CorpusReadError as exc:
            kind = "binary" if exc.reason == "binary" else "local_read"
            raise FetchError(f"cannot read corpus file for {url}: {exc}", url=url, kind=kind) from None
        text, encoding = decode_body(content)
        return FetchedPage(
            url=url,
            final_url=url,
            status=200,
            content=content,
            origin="local",
            text=text,
            encoding=encoding,
            content_type=LOCAL_TYPES.get(path.suffix.lower(), "text/plain"),
            fetched_at=datetime.now(UTC),
        )

    async def _fetch_http(self, url: str, target: httpx.URL) -> FetchedPage:
        """Attempts with backoff (``core.retry``), all under one deadline that starts when the first request is sent."""
        attempts = 0
        try:
            async with asyncio.timeout(None) as budget:

                async def attempt() -> FetchedPage:
                    nonlocal attempts
                    attempts += 1
                    return await self._attempt(url, target, budget)

                def delay(retry_index: int, exc: Exception) -> float:
                    assert isinstance(exc, _Retryable)
                    return self._retry_delay(exc, retry_index, budget)

                try:
                    page = await retry(
                        attempt,
                        attempts=self.policy.retries + 1,
                        retryable=lambda exc: isinstance(exc, _Retryable),
                        delay=delay,
                    )
                except _Retryable as exc:
                    raise FetchError(f"{exc} (gave up after {attempts} attempts)", url=exc.url, kind=exc.kind) from None
                page.attempts = attempts
                return page
        except TimeoutError:
            raise FetchError(
                f"{url}: no complete answer within the {self.policy.timeout_s:g} s deadline (attempt {attempts})",
                url=url,
                kind="timeout",
            ) from None

    def _retry_delay(self, exc: _Retryable, retry_index: int, budget: asyncio.Timeout) -> float:
        """Seconds to wait before retry ``retry_index`` (0-based), or raise the final error if there should be none."""
        policy = self.policy

        def give_up(why: str) -> FetchError:
            return FetchError(f"{exc} ({why})", url=exc.url, kind=exc.kind)

        if exc.retry_after is not None:
            if exc.retry_after > policy.retry_after_max_s:
                raise give_up(f"Retry-After {exc.retry_after:g} s is over the {policy.retry_after_max_s:g} s cap")
            delay = exc.retry_after
        else:
            delay = backoff_delay(retry_index, policy.backoff_base_s, policy.backoff_max_s, jitter=0.5)
        deadline = budget.when()
        if deadline is not None and asyncio.get_running_loop().time() + delay >= deadline:
            raise give_up("no time left before the deadline")
        return delay

    async def _attempt(self, url: str, target: httpx.URL, budget: asyncio.Timeout) -> FetchedPage:
        """One try: follow redirects by hand so that the guard and robots.txt see every hop."""
        redirects: list[str] = []
        current = target
        while True:
            try:
                await self._guard.vet(current)
            except FetchError as exc:
                if not redirects:
                    raise
                raise FetchError(f"{exc} (redirected from {redirects[-1]})", url=url, kind=exc.kind) from exc
            await self._check_robots(current)
            async with self._exchange(current, budget) as response:
                if response.status_code not in REDIRECT_STATUSES:
                    return await self._page(url, current, response, redirects)
                next_url = _redirect_target(current, response)
            redirects.append(str(current))
            if len(redirects) > self.policy.max_redirects:
                raise FetchError(
                    f"{url}: more than {self.policy.max_redirects} redirects (next: {next_url})",
                    url=url,
                    kind="redirects",
                )
            current = next_url

    @asynccontextmanager
    async def _exchange(self, url: httpx.URL, budget: asyncio.Timeout | None) -> AsyncIterator[httpx.Response]:
        """Send GET ``url`` (already vetted) within a host slot and a global slot; yield the streamed response."""
        loop = asyncio.get_running_loop()
        host_name = url.raw_host.decode("ascii").lower()
        host = self._hosts.setdefault(host_name, _Host(asyncio.Semaphore(self.policy.per_host_concurrency)))
        async with host.semaphore:
            async with host.lock:
                wait = host.next_start - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                host.next_start = loop.time() + self.policy.politeness_delay_s
            async with self._global:
                if budget is not None and budget.when() is None:
                    budget.reschedule(loop.time() + self.policy.timeout_s)
                try:
                    response = await self._client.send(self._client.build_request("GET", url), stream=True)
                except httpx.HTTPError as exc:
                    raise _transport_error(exc, str(url)) from exc
                try:
                    yield response
                except httpx.HTTPError as exc:
                    raise _transport_error(exc, str(url)) from exc
                finally:
                    await response.aclose()

    async def _page(self, url: str, current: httpx.URL, response: httpx.Response, redirects: list[str]) -> FetchedPage:
        where = str(current)
        status = response.status_code
        if status == 429 or status >= 500:
            raise _Retryable(
                f"{where} answered HTTP {status}",
                url=url,
                kind="http_status",
                retry_after=parse_retry_after(response.headers.get("retry-after")),
            )
        if not 200 <= status < 300:
            raise FetchError(f"{where} answered HTTP {status}", url=url, kind="http_status")
        media, charset = _media_type(response.headers.get("content-type", ""))
        if media and media not in self.policy.allowed_content_types:
            raise FetchError(f"{where} is {media}, not HTML or text", url=url, kind="content_type")
        body = await self._read_body(where, response)
        text, encoding = decode_body(body, charset)
        return FetchedPage(
            url=url,
            final_url=where,
            status=status,
            content_type=media or "text/html",
            content=body,
            text=text,
            encoding=encoding,
            fetched_at=datetime.now(UTC),
            origin="http",
            redirects=redirects,
        )

    async def _read_body(self, where: str, response: httpx.Response) -> bytes:
        """Stream the body: cap bytes received, decompress in bounded steps, cap decoded bytes, sniff early."""
        policy = self.policy
        declared = response.headers.get("content-length", "").strip()
        if declared.isdigit() and int(declared) > policy.max_bytes:
            raise FetchError(
                f"{where} declares {declared} bytes, over the {policy.max_bytes} byte cap", url=where, kind="too_large"
            )
        decoder = _BodyDecoder(response.headers.get("content-encoding", ""), where)
        body = bytearray()
        sniffed = False
        async for raw in response.aiter_raw():
            if response.num_bytes_downloaded > policy.max_bytes:
                raise FetchError(f"{where} sent more than {policy.max_bytes} bytes", url=where, kind="too_large")
            for piece in decoder.decode(raw):
                body += piece
                if len(body) > policy.max_decoded_bytes:
                    if not decoder.compressed:
                        raise FetchError(
                            f"{where} is larger than {policy.max_decoded_bytes} bytes", url=where, kind="too_large"
                        )
                    raise FetchError(
                        f"{where} inflates to more than {policy.max_decoded_bytes} bytes from "
                        f"{response.num_bytes_downloaded} {decoder.coding} bytes",
                        url=where,
                        kind="decompression_bomb",
                    )
            if not sniffed and len(body) >= SNIFF_BYTES:
                _check_text(where, body)
                sniffed = True
        if not sniffed:
            _check_text(where, body)
        return bytes(body)

    async def _check_robots(self, url: httpx.URL) -> None:
        """Raise ``kind="robots"`` if the origin's robots.txt (fetched once per origin) disallows ``url``."""
        if not self.policy.respect_robots:
            return
        origin = f"{url.scheme}://{url.raw_host.decode('ascii').lower()}:{url.port or DEFAULT_PORTS[url.scheme]}"
        rules = self._robots.get(origin)
        if rules is None:
            async with self._robots_locks.setdefault(origin, asyncio.Lock()):
                rules = self._robots.get(origin)
                if rules is None:
                    rules = self._robots[origin] = await self._load_robots(url.join("/robots.txt"))
        if not rules.allows(str(url), self._agent):
            why = f"{origin}/robots.txt is {rules.reason}" if rules.reason else f"{origin}/robots.txt forbids it"
            raise FetchError(f"{url} is disallowed: {why}", url=str(url), kind="robots")

    async def _load_robots(self, robots_url: httpx.URL) -> RobotsRules:
        """GET robots.txt with its own timeout and size cap; failures become RFC 9309 'unreachable'."""
        current = robots_url
        try:
            async with asyncio.timeout(self.policy.robots_timeout_s):
                for _ in range(ROBOTS_MAX_REDIRECTS + 1):
                    await self._guard.vet(current)
                    async with self._exchange(current, None) as response:
                        status = response.status_code
                        if status in REDIRECT_STATUSES:
                            current = _redirect_target(current, response)
                            continue
                        body = await self._read_prefix(str(current), response) if 200 <= status < 300 else b""
                        return rules_from_status(status, body)
        except TimeoutError:
            return unreachable("timed out")
        except FetchError as exc:
            return unreachable(exc.kind)
        return RobotsRules(allow_all=True, reason=f"unavailable (more than {ROBOTS_MAX_REDIRECTS} redirects)")

    async def _read_prefix(self, where: str, response: httpx.Response) -> bytes:
        """The first ``robots_max_bytes`` decoded bytes; the rest is not read (RFC 9309 allows truncating)."""
        cap = self.policy.robots_max_bytes
        decoder = _BodyDecoder(response.headers.get("content-encoding", ""), where)
        body = bytearray()
        async for raw in response.aiter_raw():
            for piece in decoder.decode(raw):
                body += piece
                if len(body) >= cap:
                    return bytes(body[:cap])
        return bytes(body)


class _BodyDecoder:
    """Undo Content-Encoding in steps of at most ``_STEP`` output bytes.

    httpx's own decoders inflate a whole network chunk at once (64 KiB of a gzip bomb is ~64 MiB),
    so the raw stream is decoded here and the caller can stop one step past its cap.
    """

    def __init__(self, coding: str, where: str) -> None:
        self.coding = coding.strip().lower()
        self._where = where
        self._first = True
        self._z: zlib._Decompress | None
        if self.coding in ("", "identity"):
            self._z = None
        elif self.coding in ("gzip", "x-gzip"):
            self._z = zlib.decompressobj(zlib.MAX_WBITS | 16)
        elif self.coding == "deflate":
            self._z = zlib.decompressobj()
        else:
            raise FetchError(f"{where} uses unsupported Content-Encoding {coding!r}", url=where, kind="bad_encoding")

    @property
    def compressed(self) -> bool:
        return self._z is not None

    def decode(self, data: bytes) -> Iterator[bytes]:
        if self._z is None:
            if data:
                yield data
            return
        try:
            yield from self._inflate(self._z, data)
        except zlib.error as exc:
            raise FetchError(
                f"{self._where}: corrupt {self.coding} body ({exc})", url=self._where, kind="bad_encoding"
            ) from None

    def _inflate(self, z: zlib._Decompress, data: bytes) -> Iterator[bytes]:
        while True:
            try:
                out = z.decompress(data, _STEP)
            except zlib.error:
                if not (self._first and self.coding == "deflate"):
                    raise
                z = self._z = zlib.decompressobj(-zlib.MAX_WBITS)  # raw deflate, as some servers send it
                self._first = False
                continue
            self._first = False
            if out:
                yield out
            if z.eof:
                rest = z.unused_data
                if self.coding == "deflate" or not rest.startswith(b"\x1f\x8b"):
                    return  # trailing bytes after the stream are ignored, as browsers do
                z = self._z = zlib.decompressobj(zlib.MAX_WBITS | 16)  # the next gzip member
                data = rest
                continue
            data = z.unconsumed_tail
            if not data and len(out) < _STEP:
                return


def _check_text(where: str, body: bytearray) -> None:
    reason = sniff_binary(bytes(body[:SNIFF_BYTES]))
    if reason:
        raise FetchError(f"{where} is binary: it {reason}", url=where, kind="binary")


def _transport_error(exc: httpx.HTTPError, where: str) -> FetchError:
    detail = " ".join(f"{type(exc).__name__}: {exc}".split()).rstrip(": ")
    if isinstance(exc, httpx.TimeoutException):
        return _Retryable(f"{where}: timed out ({detail})", url=where, kind="timeout")
    if isinstance(exc, httpx.NetworkError | httpx.RemoteProtocolError):
        return _Retryable(f"{where}: connection failed ({detail})", url=where, kind="network")
    return FetchError(f"{where}: {detail}", url=where, kind="network")


def _redirect_target(current: httpx.URL, response: httpx.Response) -> httpx.URL:
    location = response.headers.get("location", "").strip()
    if not location:
        raise FetchError(
            f"{current} answered HTTP {response.status_code} without a Location", url=str(current), kind="redirects"
        )
    try:
        return current.join(location)
    except httpx.InvalidURL as exc:
        raise FetchError(f"{current} redirects to an invalid URL ({exc})", url=str(current), kind="redirects") from None


def _media_type(header: str) -> tuple[str, str | None]:
    """``"text/html; charset=Shift_JIS"`` -> ``("text/html", "Shift_JIS")``."""
    media, _, params = header.partition(";")
    charset = None
    for param in params.split(";"):
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset":
            charset = value.strip().strip("\"'") or None
    return media.strip().lower(), charset


__all__ = [
    "ALLOWED_TYPES",
    "LOCAL_TYPES",
    "REDIRECT_STATUSES",
    "ROBOTS_MAX_REDIRECTS",
    "USER_AGENT",
    "FetchPolicy",
    "FetchedPage",
    "Fetcher",
    "UrlResolver",
]
