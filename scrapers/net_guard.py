"""SSRF guard: vet every destination before connecting, then connect only to the vetted addresses.

The research agents fetch URLs chosen by search engines and by the pages themselves, so a hostile
page can redirect us to ``http://169.254.169.254/`` (cloud credentials) or ``http://10.0.0.1/admin``.
:meth:`NetGuard.vet` refuses, before any connection, a URL whose scheme is not http(s), whose port
is not allowed, or whose host is (or resolves to, for ANY of its addresses) a non-public address.

Checking the name and then letting the HTTP library resolve it again would be open to DNS
rebinding (public address for the check, ``127.0.0.1`` for the connection). So ``vet`` records the
addresses it approved as *pins*, and :class:`PinnedBackend` — the httpcore network backend of the
fetcher's client — connects to a pinned address instead of resolving the name. URLs keep their
host name, so the ``Host`` header, TLS SNI, certificate checks and the connection pool key are all
the real name; only the TCP connect target is replaced. A host that was never vetted cannot be
connected to at all.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import typing
from collections.abc import Awaitable, Callable, Iterable
from functools import cache
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_address, ip_network

import httpcore
import httpx

from scrapers.errors import FetchError

IPAddress = IPv4Address | IPv6Address
IPNetwork = IPv4Network | IPv6Network
Resolver = Callable[[str, int], Awaitable[list[str]]]

DEFAULT_PORTS = {"http": 80, "https": 443}
METADATA_ADDRESSES = frozenset(
    ip_address(a) for a in ("169.254.169.254", "fd00:ec2::254", "100.100.100.200", "169.254.170.2")
)
_CGNAT = ip_network("100.64.0.0/10")
_NAT64 = ip_network("64:ff9b::/96")


def blocked_reason(ip: IPAddress) -> str | None:
    """Why ``ip`` must not be fetched from (private, loopback, metadata, ...), or None if it is public."""
    if ip in METADATA_ADDRESSES:
        return "a cloud metadata address"
    if isinstance(ip, IPv6Address):
        translated = ip.ipv4_mapped or (IPv4Address(int(ip) & 0xFFFFFFFF) if ip in _NAT64 else None)
        if translated is not None:  # packets really go to this IPv4 address (DNS64 answers look like this)
            reason = blocked_reason(translated)
            return f"an IPv6 address embedding {translated}, {reason}" if reason else None
        tunnelled = ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
        if tunnelled is not None and (reason := blocked_reason(tunnelled)):
            return f"an IPv6 address embedding {tunnelled}, {reason}"
    checks = (
        ("a loopback", ip.is_loopback),
        ("an unspecified", ip.is_unspecified),
        ("a link-local", ip.is_link_local),
        ("a multicast", ip.is_multicast),
        ("a private", ip.is_private),
        ("a reserved", ip.is_reserved),
        ("a carrier-grade NAT", isinstance(ip, IPv4Address) and ip in _CGNAT),
        ("a non-global", not ip.is_global),
    )
    return next((f"{name} address" for name, hit in checks if hit), None)


def parse_networks(networks: Iterable[str]) -> tuple[IPNetwork, ...]:
    """``["127.0.0.1/32", "::1"]`` as network objects; a bad entry raises ``ValueError`` naming it."""
    parsed = []
    for net in networks:
        try:
            parsed.append(ip_network(net, strict=False))
        except ValueError as exc:
            raise ValueError(f"allow_networks entry {net!r} is not an IP network: {exc}") from None
    return tuple(parsed)


async def system_resolver(host: str, port: int) -> list[str]:
    """All addresses the OS resolver gives for ``host`` (TCP), in its preferred order."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class NetGuard:
    """Decides which URLs may be connected to, and remembers the addresses it approved."""

    def __init__(
        self,
        *,
        allow_private: bool = False,
        allow_networks: Iterable[str] = (),
        allowed_ports: Iterable[int] = (80, 443),
        resolver: Resolver | None = None,
        resolve_timeout_s: float = 5.0,
        trusted_origins: Iterable[tuple[str, int]] = (),
    ) -> None:
        """``trusted_origins``: ``(host, port)`` pairs an operator configured (a self-hosted search
        instance on loopback); their addresses are pinned without the address and port checks."""
        self.allow_private = allow_private
        self.trusted_origins = frozenset((host.lower(), port) for host, port in trusted_origins)
        self.allow_networks = parse_networks(allow_networks)
        self.allowed_ports = frozenset(allowed_ports)
        self._resolve = resolver or system_resolver
        self._resolve_timeout_s = resolve_timeout_s
        self.pins: dict[tuple[str, int], tuple[str, ...]] = {}

    def _allowed_network(self, ip: IPAddress) -> bool:
        return any(ip in net for net in self.allow_networks)

    async def vet(self, url: httpx.URL) -> tuple[str, ...]:
        """Approve ``url`` and pin its addresses, or raise ``FetchError(kind="ssrf")`` without connecting."""
        where = str(url)
        if url.scheme not in DEFAULT_PORTS:
            raise FetchError(f"refused {where}: scheme {url.scheme!r} is not http(s)", url=where, kind="ssrf")
        host = url.raw_host.decode("ascii").lower()
        port = url.port or DEFAULT_PORTS[url.scheme]
        if not host:
            raise FetchError(f"refused {where}: no host", url=where, kind="ssrf")
        addresses = await self._addresses(host, port, where)
        ips = [ip_address(a.split("%", 1)[0]) for a in addresses]
        if not self.allow_private and (host, port) not in self.trusted_origins:
            for ip in ips:
                if not self._allowed_network(ip) and (reason := blocked_reason(ip)):
                    shown = host if _is_literal(host) else f"{host} ({ip})"
                    raise FetchError(f"refused {where}: {shown} is {reason}", url=where, kind="ssrf")
            if port not in self.allowed_ports and not all(self._allowed_network(ip) for ip in ips):
                raise FetchError(f"refused {where}: port {port} is not allowed", url=where, kind="ssrf")
        self.pins[(host, port)] = addresses
        return addresses

    async def _addresses(self, host: str, port: int, where: str) -> tuple[str, ...]:
        if _is_literal(host):
            return (str(ip_address(host)),)
        try:
            async with asyncio.timeout(self._resolve_timeout_s):
                addresses = await self._resolve(host, port)
        except TimeoutError:
            raise FetchError(f"cannot resolve {host} for {where}: DNS timed out", url=where, kind="timeout") from None
        except OSError as exc:
            raise FetchError(f"cannot resolve {host} for {where}: {exc}", url=where, kind="network") from None
        if not addresses:
            raise FetchError(f"cannot resolve {host} for {where}: no addresses", url=where, kind="network")
        return tuple(addresses)


def _is_literal(host: str) -> bool:
    try:
        ip_address(host)
    except ValueError:
        return False
    return True


class PinnedBackend(httpcore.AsyncNetworkBackend):
    """httpcore network backend that connects only to addresses :class:`NetGuard` pinned for a host."""

    def __init__(self, pins: dict[tuple[str, int], tuple[str, ...]], inner: httpcore.AsyncNetworkBackend) -> None:
        self._pins = pins
        self._inner = inner

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = self._pins.get((host.lower(), port))
        if not addresses:
            where = f"{host}:{port}"
            raise FetchError(f"refused to connect to {where}: not vetted by the SSRF guard", url=where, kind="ssrf")
        error: Exception | None = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(
                    address, port, timeout=timeout, local_address=local_address, socket_options=socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                error = exc
        assert error is not None
        raise error

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise FetchError(f"refused to connect to unix socket {path}", url=path, kind="ssrf")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


@cache
def tls_context() -> ssl.SSLContext:
    """The process's TLS client context (certifi's CAs, no environment settings), built once: building
    one reads and parses the CA bundle (~35 ms of CPU), and a transport is made per search request."""
    return httpx.create_ssl_context(trust_env=False)


class PinnedTransport(httpx.AsyncHTTPTransport):
    """httpx transport whose connection pool uses :class:`PinnedBackend` (no proxies, no env settings).

    httpx 0.28 has no public hook for the network backend, so the pool built by the base class is
    replaced by an identical one that takes ``network_backend``.
    """

    def __init__(self, guard: NetGuard, *, limits: httpx.Limits, http2: bool = False) -> None:
        context = tls_context()
        super().__init__(verify=context, trust_env=False, limits=limits, http2=http2)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=context,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            http1=True,
            http2=http2,
            network_backend=PinnedBackend(guard.pins, httpcore.AnyIOBackend()),
        )


__all__ = [
    "DEFAULT_PORTS",
    "METADATA_ADDRESSES",
    "IPAddress",
    "IPNetwork",
    "NetGuard",
    "PinnedBackend",
    "PinnedTransport",
    "Resolver",
    "blocked_reason",
    "parse_networks",
    "system_resolver",
    "tls_context",
]
