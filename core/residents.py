"""Resident agents across upgrades: which ones run an older code, and retiring them once unused.

A resident agent (the council's sages, the critic's workers, the LLM limiter) is a detached, named
Ray actor created once per cluster and shared by every caller. Its name ends with the fingerprint of
the code it runs (:func:`core.version.code_fingerprint`), so a new release gets agents of its own
while the old ones keep serving the callers of the old code during a rolling upgrade. Nothing else
would ever end them: detached actors outlive their callers.

The new code retires them. A system registers each kind of resident agent it makes (the prefix of
its actor names, its current fingerprint, and the method that says how much work an agent holds);
:class:`Retirer` then, on each :meth:`~Retirer.tick`:

* finds the agents of a registered kind whose fingerprint is not the current one;
* does nothing while the rollout is under way (``settled`` says whether callers of the old code may
  still exist: a Serve app still updating, a replica still draining);
* kills an old agent once it holds no work on two checks in a row, so a conversation or a judgement
  in flight finishes where it started; an agent of a release that cannot say (no such method) goes
  once the rollout has been settled for ``grace_s``.

Core knows no system: the kinds are registered by their systems, and ``settled`` is given by the
layer that knows how the code is deployed (deployments/upgrades.py for Serve).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from core.runtime import forget_resident

log = logging.getLogger(__name__)
NAMESPACE = "magi"  # the namespace of every resident agent (core.runtime.DEFAULT_NAMESPACE)
CALL_TIMEOUT_S = 10.0  # an old agent that does not say how busy it is within this is asked again later
IDLE_CHECKS = 2  # an old agent is idle on this many checks in a row before it goes


@dataclass(frozen=True)
class ResidentKind:
    """One kind of resident agent: names ``<prefix>...<fingerprint>``; ``busy`` names the actor method
    returning the work it holds (conversations, calls, permits): 0 means none."""

    prefix: str
    fingerprint: Callable[[], str]
    busy: str | None

    def is_old(self, name: str) -> bool:
        """An agent of this kind running another code than this process's."""
        return name.startswith(self.prefix) and not name.endswith(self.fingerprint())


_KINDS: dict[str, ResidentKind] = {}


def register_resident(kind: ResidentKind) -> None:
    """Declare a kind of resident agent (at import of the module that creates them)."""
    _KINDS[kind.prefix] = kind


def resident_kinds() -> list[ResidentKind]:
    return list(_KINDS.values())


@dataclass(frozen=True)
class OldAgent:
    name: str
    kind: ResidentKind


def old_agents(names: list[str], kinds: list[ResidentKind]) -> list[OldAgent]:
    """The agents among ``names`` (resident namespace) that run an older code than this process."""
    found = []
    for name in sorted(names):
        kind = next((k for k in kinds if name.startswith(k.prefix)), None)
        if kind is not None and kind.is_old(name):
            found.append(OldAgent(name, kind))
    return found


class Retirer:
    """Retires the resident agents of older code; see the module docstring. One per process (a Serve
    replica runs :meth:`tick` periodically); several at once are harmless (a kill is idempotent)."""

    def __init__(
        self,
        settled: Callable[[], Awaitable[bool]],
        *,
        grace_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        cluster: RayResidents | None = None,
    ) -> None:
        self.settled = settled
        self.grace_s = grace_s
        self._clock = clock
        self._cluster = cluster or RayResidents()
        self._idle: dict[str, int] = {}  # old agent -> idle checks in a row
        self._settled_since: float | None = None
        self.retired: list[str] = []

    async def tick(self) -> list[str]:
        """One round: the names of the agents retired now."""
        kinds = resident_kinds()
        if not kinds:
            return []
        old = old_agents(await self._cluster.names(), kinds)
        if not old:
            self._idle.clear()
            return []
        if not await self.settled():
            self._settled_since = None
            self._idle.clear()
            return []
        now = self._clock()
        if self._settled_since is None:
            self._settled_since = now
        gone = []
        for agent in old:
            work = await self._cluster.busy(agent.name, agent.kind.busy)
            if work is None:  # cannot say (an older release's agent, or no answer)
                if now - self._settled_since < self.grace_s:
                    continue
            elif work > 0:
                self._idle.pop(agent.name, None)
                continue
            else:
                self._idle[agent.name] = self._idle.get(agent.name, 0) + 1
                if self._idle[agent.name] < IDLE_CHECKS:
                    continue
            await self._cluster.kill(agent.name)
            self._idle.pop(agent.name, None)
            gone.append(agent.name)
            log.info("retired %s: it ran an older code and held no work", agent.name)
        self.retired += gone
        return gone


class RayResidents:
    """The resident namespace of the Ray cluster this process is attached to (thin: Ray calls only)."""

    async def names(self) -> list[str]:
        import ray

        listed = await asyncio.to_thread(ray.util.list_named_actors, True)
        return [str(a["name"]) for a in listed if a["namespace"] == NAMESPACE]

    async def busy(self, name: str, method: str | None) -> int | None:
        import ray

        if method is None:
            return None
        try:
            actor = await asyncio.to_thread(ray.get_actor, name, NAMESPACE)
            call: Any = getattr(actor, method).remote()
            return int(await asyncio.wait_for(call, CALL_TIMEOUT_S))
        except (AttributeError, TypeError):
            return None  # an agent of a release without that method
        except (ValueError, TimeoutError, ray.exceptions.RayError) as exc:
            log.info("old agent %s did not say how busy it is (%s); asked again later", name, exc)
            return None

    async def kill(self, name: str) -> None:
        import ray

        try:
            actor = await asyncio.to_thread(ray.get_actor, name, NAMESPACE)
        except ValueError:
            return  # gone already (another replica retired it)
        ray.kill(actor, no_restart=True)
        forget_resident(name, NAMESPACE)


__all__ = [
    "CALL_TIMEOUT_S",
    "IDLE_CHECKS",
    "NAMESPACE",
    "OldAgent",
    "RayResidents",
    "ResidentKind",
    "Retirer",
    "old_agents",
    "register_resident",
    "resident_kinds",
]
