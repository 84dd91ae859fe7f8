"""Settings section ``sessions:``: how many sessions a client may hold and how many a process hosts.

Shared by every chat system (the router, the advisor): a session is a virtual actor hosted by the
process that serves it (a Serve replica, the CLI), so these bounds are the memory of a replica and
the share of the store one client may take.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from core.settings import Section


class SessionsSettings(Section):
    name: ClassVar[str] = "sessions"

    max_per_client: int = Field(
        200,
        ge=1,
        le=1_000_000,
        description="Live sessions one client (API key) may hold per system; a new one beyond gets 429.",
    )
    max_active: int = Field(
        10_000,
        ge=1,
        le=10_000_000,
        description="Sessions one replica keeps active in memory (least recently used passivated beyond; "
        "a passivated session is read from the store on its next message).",
    )
    idle_s: float = Field(
        300.0, gt=0, description="A session with no message this long is passivated (its state stays stored)."
    )


__all__ = ["SessionsSettings"]
