"""One cluster-wide limit on LLM calls in flight, and one cluster-wide pause after a rate limit.

Every call made through :class:`LimitedClient` first takes a permit (a *lease*) and gives it back
afterwards. With Ray initialised the permits live in ONE named actor (``magi-llm-limiter`` in
namespace ``magi``), so callers on every node share them; without Ray an in-process
:class:`LocalLimiter` gives the same semantics to the threads and event loops of one process.

* Permits: ``llm.max_concurrency`` (default 8); the latest value a caller asks for wins.
* Leases expire after ``LEASE_TTL_S`` unless renewed; a caller renews every ``LEASE_TTL_S / 3``
  while its call runs, so a caller that dies (killed worker, lost node) frees its permit within
  the TTL instead of leaking it. A caller cancelled while waiting withdraws its request.
* Pause: a 429/529 with Retry-After seen by any caller (reported by the Anthropic adapter through
  :func:`report_rate_limit`, or raised as an ``LLMError`` with ``retry_after_s``) stops every new
  acquisition on the cluster until that time; calls already in flight finish.

The actor is *detached* (``lifetime="detached"``, ``num_cpus=0``): it is created on first use by
whichever process gets there first (``get_if_exists=True``) and must outlive that process, because
callers in other jobs and workers hold handles to it. It costs no CPU while idle. Leases make its
state self-healing, so it never needs a reset; if it crashes (or its node is lost) Ray restarts it
empty and resends the callers' requests. Its name ends with the fingerprint of core's code
(:func:`actor_name`): an upgrade gets a limiter of its own, and the old one is retired once it holds
no permit (core/residents.py); while old and new callers run side by side during a rolling upgrade,
each code's calls are limited by its own limiter.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from contextvars import ContextVar
from typing import Any, Protocol

from core.errors import LLMError
from core.llm.base import LLMClient, LLMRequest, LLMResponse
from core.llm.metrics import PAUSES, PERMITS_IN_USE, WAITERS
from core.llm.streaming import StreamEvent, stream
from core.residents import ResidentKind, register_resident
from core.version import code_fingerprint

ACTOR_NAME = "magi-llm-limiter"  # the prefix of the limiter's actor name (actor_name: with the code's fingerprint)
NAMESPACE = "magi"
LEASE_TTL_S = 30.0
LOCAL_POLL_S = 0.005  # how often a waiting in-process caller looks again (waits only when saturated)
ACTOR_WAKE_S = 0.5  # longest sleep of a waiting acquire in the actor between checks
PAUSE_STATUSES = frozenset({429, 529})

_rate_limit_hook: ContextVar[Callable[[float], object] | None] = ContextVar("magi_llm_rate_limit_hook", default=None)


def report_rate_limit(seconds: float) -> None:
    """Tell the limiter of the current call (if any) that the server asked everyone to wait ``seconds``."""
    hook = _rate_limit_hook.get()
    if hook is not None and seconds > 0:
        hook(seconds)


@contextmanager
def rate_limit_hook(hook: Callable[[float], object]) -> Iterator[None]:
    """Route :func:`report_rate_limit` calls made inside the block to ``hook``."""
    token = _rate_limit_hook.set(hook)
    try:
        yield
    finally:
        _rate_limit_hook.reset(token)


class PermitBook:
    """The limiter's state and rules, free of any concurrency machinery (shared by both limiters)."""

    def __init__(self, permits: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.permits = permits
        self.clock = clock
        self.leases: dict[str, float] = {}  # lease id -> expiry
        self.withdrawn: dict[str, float] = {}  # lease ids released before they were granted -> expiry
        self.paused_until = 0.0
        self.peak = 0
        self.granted = 0
        self.expired = 0

    def _expire(self, now: float) -> None:
        for lease_id in [k for k, until in self.leases.items() if until <= now]:
            del self.leases[lease_id]
            self.expired += 1
        for lease_id in [k for k, until in self.withdrawn.items() if until <= now]:
            del self.withdrawn[lease_id]

    def try_acquire(self, lease_id: str, ttl_s: float) -> float | None:
        """None when granted, -1.0 when the request was withdrawn, else seconds worth waiting before retrying."""
        now = self.clock()
        self._expire(now)
        if self.withdrawn.pop(lease_id, None) is not None:
            return -1.0
        if lease_id in self.leases:
            return None
        if now < self.paused_until:
            return self.paused_until - now
        if len(self.leases) >= self.permits:
            return min(self.leases.values()) - now  # at the latest, the next expiry frees a permit
        self.leases[lease_id] = now + ttl_s
        self.granted += 1
        self.peak = max(self.peak, len(self.leases))
        return None

    def renew(self, lease_id: str, ttl_s: float) -> bool:
        """Extend a lease; False when it had already expired (its permit may be in use elsewhere)."""
        now = self.clock()
        self._expire(now)
        if lease_id not in self.leases:
            return False
        self.leases[lease_id] = now + ttl_s
        return True

    def release(self, lease_id: str, ttl_s: float = LEASE_TTL_S) -> None:
        """Give a permit back; an id not (yet) granted is withdrawn, so a late grant is refused."""
        if self.leases.pop(lease_id, None) is None:
            self.withdrawn[lease_id] = self.clock() + ttl_s

    def pause(self, seconds: float) -> None:
        self.paused_until = max(self.paused_until, self.clock() + seconds)

    def state(self) -> dict[str, Any]:
        now = self.clock()
        self._expire(now)
        return {
            "permits": self.permits,
            "in_use": len(self.leases),
            "peak": self.peak,
            "granted": self.granted,
            "expired": self.expired,
            "paused_for_s": max(0.0, self.paused_until - now),
        }


class Limiter(Protocol):
    """Permits shared by callers; see the module docstring for the semantics."""

    ttl_s: float

    async def acquire(self, lease_id: str) -> None: ...

    def renew(self, lease_id: str) -> None: ...

    def release(self, lease_id: str) -> None: ...

    def pause(self, seconds: float) -> Awaitable[Any] | None:
        """Stop new acquisitions for ``seconds``; may return something to await for the pause to be in force."""


class LocalLimiter:
    """The in-process limiter: a :class:`PermitBook` under a thread lock, waited on by polling."""

    def __init__(self, permits: int, *, ttl_s: float = LEASE_TTL_S, clock: Callable[[], float] = time.monotonic):
        self.ttl_s = ttl_s
        self.book = PermitBook(permits, clock)
        self._lock = threading.Lock()

    def set_permits(self, permits: int) -> None:
        with self._lock:
            self.book.permits = permits

    async def acquire(self, lease_id: str) -> None:
        try:
            while True:
                with self._lock:
                    wait = self.book.try_acquire(lease_id, self.ttl_s)
                if wait is None:
                    return
                await asyncio.sleep(min(max(wait, 0.0), LOCAL_POLL_S))
        except BaseException:
            self.release(lease_id)  # cancelled while waiting: withdraw (or give back a fresh grant)
            raise

    def renew(self, lease_id: str) -> None:
        with self._lock:
            self.book.renew(lease_id, self.ttl_s)

    def release(self, lease_id: str) -> None:
        with self._lock:
            self.book.release(lease_id, self.ttl_s)

    def pause(self, seconds: float) -> None:
        with self._lock:
            self.book.pause(seconds)

    def state(self) -> dict[str, Any]:
        with self._lock:
            return self.book.state()


class LimiterActor:
    """The Ray actor holding the cluster's permits (async: waiting acquires do not block others)."""

    def __init__(self, permits: int) -> None:
        self.book = PermitBook(permits)
        self._wakeup: asyncio.Event | None = None

    def _notify(self) -> None:
        if self._wakeup is not None:
            self._wakeup.set()
            self._wakeup = None

    async def acquire(self, lease_id: str, ttl_s: float, permits: int) -> bool:
        self.book.permits = permits
        while True:
            wait = self.book.try_acquire(lease_id, ttl_s)
            if wait is None:
                return True
            if wait < 0:
                return False
            if self._wakeup is None:
                self._wakeup = asyncio.Event()
            with suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), timeout=min(max(wait, 0.001), ACTOR_WAKE_S))

    async def renew(self, lease_id: str, ttl_s: float) -> bool:
        return self.book.renew(lease_id, ttl_s)

    async def release(self, lease_id: str, ttl_s: float) -> None:
        self.book.release(lease_id, ttl_s)
        self._notify()

    async def pause(self, seconds: float) -> None:
        self.book.pause(seconds)

    async def state(self) -> dict[str, Any]:
        return self.book.state()

    async def in_use(self) -> int:
        """Permits held now (an upgrade retires an old limiter only when none is)."""
        return int(self.book.state()["in_use"])


def limiter_code() -> str:
    """The fingerprint of the code the limiter runs (all of core: everything it imports is there)."""
    return code_fingerprint("core")


def actor_name() -> str:
    """The limiter's actor name for this code, ``magi-llm-limiter-<fingerprint>``."""
    return f"{ACTOR_NAME}-{limiter_code()}"


# A limiter of an older code (or of a release before 0.4.0, named without a fingerprint) is retired
# once it holds no permit.
register_resident(ResidentKind(ACTOR_NAME, limiter_code, LimiterActor.in_use.__name__))


def limiter_actor(permits: int) -> Any:
    """The cluster's limiter actor, created on first use (needs ``ray.init`` first)."""
    import ray

    actor_class = ray.remote(num_cpus=0)(LimiterActor)
    return actor_class.options(
        name=actor_name(),
        namespace=NAMESPACE,
        get_if_exists=True,
        lifetime="detached",
        max_concurrency=1000,
        # A crashed limiter comes back empty and callers' requests are resent: every method is
        # idempotent per lease id. Calls in flight during the crash lose their leases (briefly more
        # than the limit may run); the callers' releases of them are then harmless no-ops.
        max_restarts=-1,
        max_task_retries=-1,
    ).remote(permits)


class RayLimiter:
    """Client side of the limiter actor; release/renew/pause are fire-and-forget (never early)."""

    def __init__(self, permits: int, *, ttl_s: float = LEASE_TTL_S) -> None:
        self.permits = permits
        self.ttl_s = ttl_s
        self._actor = limiter_actor(permits)

    async def acquire(self, lease_id: str) -> None:
        import ray

        try:
            try:
                granted = await self._actor.acquire.remote(lease_id, self.ttl_s, self.permits)
            except ray.exceptions.ActorDiedError:  # killed for good (ray.kill): the next get makes a new one
                self._actor = limiter_actor(self.permits)
                granted = await self._actor.acquire.remote(lease_id, self.ttl_s, self.permits)
        except BaseException:
            self.release(lease_id)
            raise
        if not granted:
            raise LLMError(
                f"the LLM limiter ({actor_name()}) refused lease {lease_id}: it was withdrawn; retry the call"
            )

    def renew(self, lease_id: str) -> None:
        self._actor.renew.remote(lease_id, self.ttl_s)

    def release(self, lease_id: str) -> None:
        self._actor.release.remote(lease_id, self.ttl_s)

    def pause(self, seconds: float) -> Awaitable[Any]:
        ref: Awaitable[Any] = self._actor.pause.remote(seconds)
        return ref

    async def state(self) -> dict[str, Any]:
        result: dict[str, Any] = await self._actor.state.remote()
        return result


_process_lock = threading.Lock()
_local: LocalLimiter | None = None
_remote: tuple[str, RayLimiter] | None = None  # (the cluster it belongs to, its client)


def _ray_cluster() -> str | None:
    """The GCS address of the Ray this process is attached to, or None when Ray is not initialised."""
    ray = sys.modules.get("ray")  # not imported means not initialised: skip the ~1 s import
    if ray is None or not ray.is_initialized():
        return None
    return str(ray.get_runtime_context().gcs_address)


def shared_limiter(permits: int) -> Limiter:
    """The limiter of this process: the cluster actor when Ray is up, else one in-process limiter.

    The actor's client is kept per cluster, so a process that shuts Ray down and attaches to
    another cluster (tests, notebooks) does not keep a handle into the old one.
    """
    global _local, _remote
    with _process_lock:
        cluster = _ray_cluster()
        if cluster is not None:
            if _remote is None or _remote[0] != cluster:
                _remote = (cluster, RayLimiter(permits))
            _remote[1].permits = permits
            return _remote[1]
        if _local is None:
            _local = LocalLimiter(permits)
        _local.set_permits(permits)
        return _local


@asynccontextmanager
async def lease(limiter: Limiter) -> AsyncIterator[str]:
    """Hold one permit for the block: renewed while it runs, given back however it ends."""
    lease_id = uuid.uuid4().hex
    with WAITERS.tracking():
        await limiter.acquire(lease_id)
    PERMITS_IN_USE.add(1)

    async def heartbeat() -> None:
        while True:
            await asyncio.sleep(limiter.ttl_s / 3)
            limiter.renew(lease_id)

    beat = asyncio.create_task(heartbeat())
    try:
        with rate_limit_hook(limiter.pause):
            yield lease_id
    except LLMError as exc:
        if exc.status_code in PAUSE_STATUSES and exc.retry_after_s:
            PAUSES.inc()
            in_force = limiter.pause(exc.retry_after_s)
            if in_force is not None:
                await in_force  # the pause holds before this caller reports the error
        raise
    finally:
        beat.cancel()
        limiter.release(lease_id)
        PERMITS_IN_USE.add(-1)


class LimitedClient:
    """Wraps a client so that every ``complete`` and ``stream`` holds a cluster-wide permit."""

    def __init__(self, inner: LLMClient, permits: int, limiter: Limiter | None = None) -> None:
        self.inner = inner
        self.permits = permits
        self._limiter = limiter

    def __getstate__(self) -> dict[str, Any]:
        # The limiter is per process: a copy in a Ray worker finds the cluster actor itself.
        return {"inner": self.inner, "permits": self.permits, "_limiter": None}

    @property
    def limiter(self) -> Limiter:
        return self._limiter if self._limiter is not None else shared_limiter(self.permits)

    async def complete(self, request: LLMRequest) -> LLMResponse:
        async with lease(self.limiter):
            return await self.inner.complete(request)

    async def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        async with lease(self.limiter):
            async for event in stream(self.inner, request):
                yield event


__all__ = [
    "ACTOR_NAME",
    "ACTOR_WAKE_S",
    "LEASE_TTL_S",
    "LOCAL_POLL_S",
    "NAMESPACE",
    "PAUSE_STATUSES",
    "LimitedClient",
    "Limiter",
    "LimiterActor",
    "LocalLimiter",
    "PermitBook",
    "RayLimiter",
    "actor_name",
    "lease",
    "limiter_actor",
    "limiter_code",
    "rate_limit_hook",
    "report_rate_limit",
    "shared_limiter",
]
