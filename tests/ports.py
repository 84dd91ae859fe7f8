"""Free loopback ports for the servers tests start (Serve's HTTP proxy, PostgreSQL, a Ray head, a
dead address that refuses connections).

The operating system picks the port; the socket is closed before the caller binds it, so another
process could take it in between. That window is short and every caller starts its server at once.
"""

from __future__ import annotations

import socket
from contextlib import ExitStack

__all__ = ["free_port", "free_ports"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    return free_ports(1)[0]


def free_ports(n: int) -> list[int]:
    """``n`` different free TCP ports on 127.0.0.1 (all held open together while picked, so none repeats)."""
    with ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(n)]
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in socks]
