"""SessionActor: one per session id (``runtime.get_or_create(SessionActor, ..., key=session_id)``).

It serialises the session's changes (one lock: fifty concurrent messages are fifty turns, none lost)
and writes the state through the store on every change, so a killed or restarted actor - on any
node, with PostgreSQL as the store - comes back with the session by reading it again. It knows no
chat system: a change is any picklable callable ``(state, now) -> value`` (the router's ``Turn``).

An actor that has had no message for ``idle_s`` releases itself; the next message creates it again
from the store. :func:`session_call` hides the one race this leaves (a message reaching an actor
that is just going away) by asking again.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

from core.runtime import Handle, Runtime, current_node_id
from core.settings import Settings
from core.store import open_store
from sessions.ids import validate_session_id
from sessions.metrics import ACTIVATIONS, ACTIVE, PASSIVATIONS
from sessions.models import SessionPolicy, SessionState
from sessions.store import SessionRepository, read_session, update_session

log = logging.getLogger(__name__)
T = TypeVar("T")
RETRIES = 5
RETRY_DELAY_S = 0.1


class SessionActor:
    """Plain (not async) methods on purpose: Ray runs them one at a time on the actor's main thread,
    and a call to such an actor returned in 0.75 ms against 0.93 ms for an async actor's event loop
    (an empty method called from an async actor, 2-core machine); the lock serialises them where
    threads run them side by side (the in-process runtime)."""

    def __init__(self, settings: Settings, session_id: str, policy: SessionPolicy, idle_s: float = 300.0) -> None:
        self.session_id = validate_session_id(session_id)
        self._repo = SessionRepository(open_store(settings))
        self._policy = policy
        self._idle_s = idle_s
        self._lock = threading.Lock()
        self._cached: SessionState | None = None
        self._last_used = time.monotonic()
        self._reaper: threading.Thread | None = None
        ACTIVATIONS.inc()
        ACTIVE.add(1)

    def _touch(self) -> None:
        self._last_used = time.monotonic()
        if self._reaper is None and _inside_ray_actor():
            self._reaper = threading.Thread(target=self._release_when_idle, name="session-reaper", daemon=True)
            self._reaper.start()

    def update(self, owner: str, change: Callable[[SessionState, datetime], T]) -> T:
        """Apply ``change`` to the session (created on first use) and store it before answering."""
        with self._lock:
            self._touch()
            value, state = update_session(self._repo, self.session_id, owner, change, self._policy, cached=self._cached)
            self._cached = state
            self._touch()
            return value

    def read(self, owner: str) -> SessionState:
        """The stored session for ``owner``; SessionNotFoundError when missing, expired or not theirs."""
        with self._lock:
            self._touch()
            return read_session(self._repo, self.session_id, owner, self._policy)

    def where(self) -> dict[str, Any]:
        """Node and process of this actor (for tests and diagnostics)."""
        return {"node": current_node_id(), "pid": os.getpid()}

    def _release_when_idle(self) -> None:
        import ray

        while True:
            time.sleep(min(self._idle_s, 5.0))
            with self._lock:  # no change is half done when the actor goes
                if time.monotonic() - self._last_used >= self._idle_s:
                    log.info("session %s idle for %.0f s: releasing its actor", self.session_id, self._idle_s)
                    PASSIVATIONS.inc()
                    ACTIVE.add(-1)
                    ray.kill(ray.get_runtime_context().current_actor, no_restart=True)
                    return


def _inside_ray_actor() -> bool:
    try:
        import ray

        return ray.is_initialized() and ray.get_runtime_context().get_actor_id() is not None
    except Exception:  # not in Ray at all
        return False


async def session_actor(
    runtime: Runtime, settings: Settings, session_id: str, policy: SessionPolicy, idle_s: float
) -> Handle[SessionActor]:
    return await runtime.get_or_create(SessionActor, settings, session_id, policy, idle_s, key=session_id)


def _actor_gone(exc: BaseException) -> bool:
    try:
        from ray.exceptions import ActorDiedError, ActorUnavailableError, RayActorError
    except ImportError:  # pragma: no cover - Ray is a dependency
        return False
    return isinstance(exc, ActorDiedError | ActorUnavailableError | RayActorError)


class SessionHandles:
    """Handles of session actors this process has used, newest last, at most ``size``: finding a named
    actor costs a round trip to Ray's control store, calling a known one does not."""

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self._handles: OrderedDict[str, Handle[SessionActor]] = OrderedDict()

    def get(self, session_id: str) -> Handle[SessionActor] | None:
        found = self._handles.get(session_id)
        if found is not None:
            self._handles.move_to_end(session_id)
        return found

    def put(self, session_id: str, handle: Handle[SessionActor]) -> None:
        self._handles[session_id] = handle
        self._handles.move_to_end(session_id)
        while len(self._handles) > self.size:
            self._handles.popitem(last=False)

    def drop(self, session_id: str) -> None:
        self._handles.pop(session_id, None)


async def session_call(
    runtime: Runtime,
    settings: Settings,
    session_id: str,
    policy: SessionPolicy,
    idle_s: float,
    call: Callable[[Handle[SessionActor]], Any],
    handles: SessionHandles | None = None,
) -> Any:
    """``await call(handle)`` on the session's actor, asking again (a new actor, read from the store)
    when the one found was killed or released itself meanwhile. ``handles`` caches the lookups."""
    for attempt in range(RETRIES):
        handle = handles.get(session_id) if handles is not None else None
        if handle is None:
            handle = await session_actor(runtime, settings, session_id, policy, idle_s)
            if handles is not None:
                handles.put(session_id, handle)
        try:
            return await call(handle)
        except Exception as exc:
            if not _actor_gone(exc) or attempt == RETRIES - 1:
                raise
            if handles is not None:
                handles.drop(session_id)
            log.info("session %s: its actor went away (%s); asking a new one", session_id, type(exc).__name__)
            await asyncio.sleep(RETRY_DELAY_S * attempt)
    raise AssertionError("unreachable")


__all__ = ["RETRIES", "RETRY_DELAY_S", "SessionActor", "SessionHandles", "session_actor", "session_call"]
