"""Who is calling: the one place an HTTP request gets its identity, from the key the guard accepted.

The guard (deployments/security.py) calls :func:`identify` once per request, before any route, and
puts the :class:`Caller` on the request (``request.state.caller``); routes read it there
(:meth:`deployments.base.AppService.caller`), never from the headers again. So the key that is
checked is the key that owns: a request cannot pass the check with one credential and act with
another. A request is ambiguous, and refused with 400, when it carries more than one ``Authorization``
header or one holding more than one credential (``Bearer a, Bearer b``).

A caller has two names:

- ``owner``: whose stored things it may reach (sessions, research runs, files): the fingerprint of
  the API key the guard accepted, or the one local client when the service has no keys.
- ``client``: who a per-client bound counts (requests in flight, queued runs, open event streams):
  the owner when there is a key; without one, callers are told apart by their address, so one
  visitor's flood does not use up another's share. Behind a reverse proxy the address is read from a
  forwarding header (``serve.client_address_header``), but only when the request comes from one of
  ``serve.trusted_proxies``: anyone else could write any address into that header.
"""

from __future__ import annotations

import hashlib
import ipaddress
from collections.abc import Iterable, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any

from sessions.ids import LOCAL_OWNER, owner_of

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
STATE_KEY = "caller"  # request.state.caller (Starlette keeps request.state in scope["state"])
AUTHORIZATION = b"authorization"


class AmbiguousCredentials(ValueError):
    """More than one credential in one request: which one would act is not the caller's to choose."""


@dataclass(frozen=True)
class Caller:
    """One request's identity (see the module docstring)."""

    owner: str
    client: str
    admitted: bool  # it passed the key check (every caller does when the service has no keys)


def authorization_of(headers: Sequence[tuple[bytes, bytes]]) -> bytes | None:
    """The one ``Authorization`` header value of a request, None without one; AmbiguousCredentials
    for two headers, or one holding several credentials."""
    found = [value for name, value in headers if name.lower() == AUTHORIZATION]
    if len(found) > 1:
        raise AmbiguousCredentials("more than one Authorization header")
    if not found:
        return None
    value = found[0].strip()
    if b"," in value or len(value.split()) > 2:
        raise AmbiguousCredentials("an Authorization header with more than one credential")
    return value


def address_client(address: str) -> str:
    """The client name of a caller without a key: a digest of its address (no address is stored or
    shown as such)."""
    return "address-" + hashlib.sha256(address.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def parse_networks(values: Iterable[str]) -> list[Network]:
    """``serve.trusted_proxies`` as networks (a bare address is a network of one)."""
    return [ipaddress.ip_network(value.strip(), strict=False) for value in values]


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.strip().strip("[]"))
    except ValueError:
        return None


def client_address(
    scope: MutableMapping[str, Any], header: bytes | None = None, trusted: Sequence[Network] = ()
) -> str:
    """The caller's address: the peer's, or, when the peer is a trusted proxy and ``header`` names a
    forwarding header, the last address in it that is not itself a trusted proxy (each proxy appends
    the address it was called from, so the ones before could be written by anyone)."""
    peer = str((scope.get("client") or ("", 0))[0] or "")
    peer_ip = _ip(peer)
    if header is None or peer_ip is None or not any(peer_ip in net for net in trusted):
        return peer
    values = [value for name, value in scope.get("headers") or [] if name.lower() == header]
    hops = [hop for value in values for hop in value.decode("latin-1").split(",")]
    for hop in reversed(hops):
        ip = _ip(hop)
        if ip is None:
            return peer  # a hop that is no address: the header cannot be trusted past it
        if not any(ip in net for net in trusted):
            return str(ip)
    return peer


def caller_of_key(key: str | None, keyed_service: bool, address: str) -> Caller:
    """The caller presenting ``key`` (the configured key the guard matched; None: none matched or the
    service has no keys) from ``address``."""
    if keyed_service and key is not None:
        owner = owner_of(key)
        return Caller(owner=owner, client=owner, admitted=True)
    return Caller(owner=LOCAL_OWNER, client=address_client(address), admitted=not keyed_service)


def remember(scope: MutableMapping[str, Any], caller: Caller) -> None:
    """Put ``caller`` where the routes find it (``request.state.caller``)."""
    scope.setdefault("state", {})[STATE_KEY] = caller


def recalled(scope: MutableMapping[str, Any]) -> Caller:
    """The caller the guard identified; a LookupError when no guard saw the request (a bug, not input)."""
    caller = (scope.get("state") or {}).get(STATE_KEY)
    if not isinstance(caller, Caller):
        raise LookupError("the request did not pass the guard that identifies its caller")
    return caller


__all__ = [
    "AUTHORIZATION",
    "STATE_KEY",
    "AmbiguousCredentials",
    "Caller",
    "Network",
    "address_client",
    "authorization_of",
    "caller_of_key",
    "client_address",
    "parse_networks",
    "recalled",
    "remember",
]
