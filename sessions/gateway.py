"""How a chat system reaches its sessions: one interface, two ways behind it.

A change is a picklable callable ``(state, now) -> value`` (the router's ``Turn``, the advisor's
``Commit``). :class:`ActorSessions` hands it to the session's actor, which applies it under its lock
and writes the state through the store (Serve replicas, any node); :class:`LocalSessions` applies it
to the store directly (the CLI, in-process use). The caller gets the change's value either way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime
from typing import Protocol, TypeVar

from core.runtime import Runtime
from core.settings import Settings
from sessions.actor import SessionActor, SessionHandles, session_call
from sessions.models import SessionPolicy, SessionState
from sessions.store import SessionRepository, update_session

T = TypeVar("T")
Change = Callable[[SessionState, datetime], T]


class SessionGateway(Protocol):
    async def update(self, session_id: str, owner: str, change: Change[T]) -> T: ...


class LocalSessions:
    """Sessions written to the store directly (CLI, in-process use)."""

    def __init__(self, repo: SessionRepository, policy: SessionPolicy) -> None:
        self.repo = repo
        self.policy = policy

    async def update(self, session_id: str, owner: str, change: Change[T]) -> T:
        value, _ = await asyncio.to_thread(update_session, self.repo, session_id, owner, change, self.policy)
        return value


class ActorSessions:
    """Sessions in their session actors (one per id, found by name, written through the store)."""

    def __init__(self, runtime: Runtime, settings: Settings, policy: SessionPolicy, idle_s: float) -> None:
        self.runtime = runtime
        self.settings = settings
        self.policy = policy
        self.idle_s = idle_s
        self.handles = SessionHandles()

    async def update(self, session_id: str, owner: str, change: Change[T]) -> T:
        value: T = await session_call(
            self.runtime,
            self.settings,
            session_id,
            self.policy,
            self.idle_s,
            lambda handle: handle.call(SessionActor.update, owner, change),
            self.handles,
        )
        return value


__all__ = ["ActorSessions", "Change", "LocalSessions", "SessionGateway"]
