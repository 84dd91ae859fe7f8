"""How a chat system reaches its sessions: virtual actors hosted many to a process.

A session is one logical actor per key (Orleans' grains, Akka's sharded entities), not a process:
:class:`SessionHost` keeps the active ones of this process (a Serve replica of the router or the
advisor, or the CLI: the same code) in memory, serialises each one's turns with its own
``asyncio.Lock``, activates a session from the store on its first message and passivates it when it
has been idle ``idle_s`` or is the least recently used beyond ``max_active``.

The store is the source of truth: every change is written, with its revision check
(``sessions/store.py``), before the caller gets the change's value. Two replicas may host the same
session at once (a request routed to the other one, a replica just replaced): whichever write loses
the race reads the fresh state and applies its change again, so turns stay serial across replicas
and none is lost; a replica that dies loses nothing but its cache.

A change is a callable ``(state, now) -> value`` (the router's ``Turn``, the advisor's ``Commit``);
it may run twice when it loses a race, so it only edits the state it is given.

A store that cannot be reached (PostgreSQL restarting) fails a change at once, so a new turn is
refused (the app answers 503) rather than left hanging; a change whose work is already done (the
answer a model gave) may instead wait ``store_wait_s`` for the store to come back
(:data:`COMMIT_STORE_WAIT_S`), so that work is not thrown away.

Store calls run in a worker thread when the store is a network database (PostgreSQL: a round trip
must not hold the event loop); on SQLite they run on the loop, like the routing they carry: a turn's
local write takes well under a millisecond, less than the two thread wake-ups a hop costs on a busy
machine, and one writer per replica also keeps SQLite's file lock uncontended within it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple, Protocol, TypeVar

from sqlalchemy.exc import DBAPIError

from core.store import unavailable
from sessions.metrics import ACTIVATIONS, ACTIVE, PASSIVATIONS
from sessions.models import SessionPolicy, SessionState
from sessions.settings import SessionsSettings
from sessions.store import SessionRepository, admit_session, read_session, update_session

log = logging.getLogger(__name__)
T = TypeVar("T")
R = TypeVar("R")
Change = Callable[[SessionState, datetime], T]
COMMIT_STORE_WAIT_S = 60.0  # how long finished work waits for a restarting store before it is given up
STORE_RETRY_S = 0.5


class SessionGateway(Protocol):
    async def update(
        self, session_id: str, owner: str, change: Change[T], client: str | None = None, *, store_wait_s: float = 0.0
    ) -> T: ...


class Admission(NamedTuple):
    """A new session of ``namespace`` (a system's keys) is refused when its owner holds ``limit``."""

    namespace: str
    limit: int


@dataclass(eq=False)
class _Activation:
    """One active session: its lock, its last stored state (None: read the store) and its users."""

    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    state: SessionState | None = None
    last_used: float = 0.0
    users: int = 0  # callers inside or waiting for the lock: never passivated while > 0


class SessionHost:
    """The sessions active in this process, each a virtual actor; see the module docstring."""

    def __init__(
        self,
        repo: SessionRepository,
        policy: SessionPolicy,
        *,
        admission: Admission | None = None,
        max_active: int = 10_000,
        idle_s: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
        offload: bool | None = None,
    ) -> None:
        self.repo = repo
        self.offload = repo.store.dialect != "sqlite" if offload is None else offload
        self.policy = policy
        self.admission = admission
        self.max_active = max_active
        self.idle_s = idle_s
        self._clock = clock
        self._active: OrderedDict[str, _Activation] = OrderedDict()  # least recently used first
        self.activations = 0  # sessions activated from the store (a figure for tests and benchmarks)

    @classmethod
    def bounded(
        cls, repo: SessionRepository, policy: SessionPolicy, namespace: str, limits: SessionsSettings
    ) -> SessionHost:
        """The host of a Serve replica: one system's sessions, bounded as the ``sessions:`` section says."""
        return cls(
            repo,
            policy,
            admission=Admission(namespace, limits.max_per_client),
            max_active=limits.max_active,
            idle_s=limits.idle_s,
        )

    def __len__(self) -> int:
        return len(self._active)

    def hosts(self, session_id: str) -> bool:
        """Whether ``session_id`` is active here with its state in memory."""
        found = self._active.get(session_id)
        return found is not None and found.state is not None

    async def update(
        self, session_id: str, owner: str, change: Change[T], client: str | None = None, *, store_wait_s: float = 0.0
    ) -> T:
        """Apply ``change`` to the session (created on first use), store it, then return its value.
        TooManySessionsError when it would be a new session one too many for ``client`` (None: the
        owner; a caller without an API key is told apart by its address, deployments/identity.py); the
        store's error when it cannot be reached for ``store_wait_s`` (0: at once)."""
        activation = self._enter(session_id)
        try:
            async with activation.lock:
                try:
                    done: tuple[T, SessionState] = await self._stored(
                        session_id, owner, change, activation.state, client, store_wait_s
                    )
                    value, activation.state = done
                except BaseException:
                    activation.state = None  # whatever happened, the next turn reads the store
                    raise
                return value
        finally:
            self._leave(session_id, activation)

    async def read(self, session_id: str, owner: str) -> SessionState:
        """The stored session (the store, not this host's copy: another replica may have moved it on)."""
        return await self._io(read_session, self.repo, session_id, owner, self.policy)

    async def delete(self, session_id: str) -> None:
        """Remove the session from the store and from this host."""
        await self._io(self.repo.delete, session_id)
        found = self._active.get(session_id)
        if found is not None:
            found.state = None
            if not found.users:
                del self._active[session_id]

    def passivate_idle(self) -> int:
        """Passivate what has waited too long or is one too many; returns how many went."""
        return self._passivate(self._clock())

    async def passivate_forever(self, every_s: float | None = None) -> None:
        """Passivate idle sessions even when no message arrives (a replica's background task)."""
        while True:
            await asyncio.sleep(every_s if every_s is not None else min(self.idle_s, 30.0))
            gone = self.passivate_idle()
            if gone:
                log.debug("passivated %d idle sessions; %d active", gone, len(self._active))

    async def _stored(
        self,
        session_id: str,
        owner: str,
        change: Change[T],
        cached: SessionState | None,
        client: str | None,
        wait_s: float,
    ) -> tuple[T, SessionState]:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                return await self._io(self._apply, session_id, owner, change, cached, client)
            except DBAPIError as exc:
                if not unavailable(exc) or time.monotonic() >= deadline:
                    raise
                log.warning("session %s: store unavailable; trying again: %s", session_id, exc.orig or exc)
                cached = None  # whatever was written before the cut, the store has the truth
            await asyncio.sleep(STORE_RETRY_S)

    async def _io(self, call: Callable[..., R], *args: Any) -> R:
        """``call(*args)``, a store call: in a worker thread when ``offload`` (see the module docstring)."""
        return await asyncio.to_thread(call, *args) if self.offload else call(*args)

    def _apply(
        self, session_id: str, owner: str, change: Change[T], cached: SessionState | None, client: str | None
    ) -> tuple[T, SessionState]:
        if cached is None and self.admission is not None:
            namespace, limit = self.admission
            admit_session(self.repo, session_id, owner, namespace, limit, self.policy, client)
        return update_session(self.repo, session_id, owner, change, self.policy, cached=cached, client=client)

    def _enter(self, session_id: str) -> _Activation:
        now = self._clock()
        activation = self._active.get(session_id)
        if activation is None:
            activation = self._active[session_id] = _Activation()
            self.activations += 1
            ACTIVATIONS.inc()
        else:
            self._active.move_to_end(session_id)
        activation.users += 1
        activation.last_used = now
        self._passivate(now)
        return activation

    def _leave(self, session_id: str, activation: _Activation) -> None:
        activation.users -= 1
        activation.last_used = self._clock()
        if not activation.users and activation.state is None and self._active.get(session_id) is activation:
            del self._active[session_id]  # a refused or failed first message leaves nothing behind

    def _passivate(self, now: float) -> int:
        gone = 0
        for _ in range(len(self._active)):
            session_id, oldest = next(iter(self._active.items()))
            if len(self._active) <= self.max_active and now - oldest.last_used < self.idle_s:
                break
            if oldest.users:  # in use: it is not idle, whatever its clock says
                self._active.move_to_end(session_id)
                continue
            del self._active[session_id]
            gone += 1
        if gone:
            PASSIVATIONS.inc(gone)
        ACTIVE.set(len(self._active))
        return gone


__all__ = ["COMMIT_STORE_WAIT_S", "Admission", "Change", "SessionGateway", "SessionHost"]
