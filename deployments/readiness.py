"""Readiness of a Serve replica: is what the app needs there (its store, an LLM, its warm workers)?

An app lists its :class:`Check` s; ``GET /healthz`` runs them all and answers one part per check,
503 when any part is not ready, so a load balancer stops sending work a replica cannot do. Checks of
what only a new replica brings back (a background task that ended) are ``owned``: Serve's own health
probe (``check_health``) fails on them and Serve replaces the replica. A store or an LLM that is
missing is not cured by a restart, and a dead worker actor is replaced in place (see
:func:`actors_check`), so those only make ``/healthz`` say "not ready" while they last.

``/healthz`` is open without a key, so a part says only ready or not and what to look at; the reason
(which may name hosts or folders) goes to the replica's log.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.errors import first_line
from core.version import release

if TYPE_CHECKING:
    from core.runtime import Handle
    from core.settings import LLMSettings
    from core.store import Store

log = logging.getLogger(__name__)
PROBE_TIMEOUT_S = 5.0  # a probe that takes longer counts as failed (a store that hangs is not ready)

Probe = Callable[[], Awaitable[str]]  # the part's detail when ready; raises when not


class NotReady(Exception):
    """A probe's answer "not ready", with a reason fit for the log."""


@dataclass(frozen=True)
class Check:
    """One thing an app needs: ``probe`` returns a short detail or raises; ``owned`` parts are this
    replica's own state, which a restart of the replica repairs."""

    name: str
    probe: Probe
    owned: bool = False
    hint: str = "not ready; see the service log"  # the part's detail when not ready


@dataclass(frozen=True)
class Part:
    """The answer of one :class:`Check`."""

    name: str
    ready: bool
    detail: str
    owned: bool = False

    def as_json(self) -> dict[str, Any]:
        return {"ready": self.ready, "detail": self.detail}


async def run_check(check: Check, timeout_s: float = PROBE_TIMEOUT_S) -> Part:
    """Run one probe, bounded in time; a failure is logged with its reason and answered with the hint."""
    try:
        detail = await asyncio.wait_for(check.probe(), timeout_s)
    except TimeoutError:
        log.warning("readiness: %s did not answer within %.0f s", check.name, timeout_s)
        return Part(check.name, False, f"no answer within {timeout_s:.0f} s; {check.hint}", check.owned)
    except Exception as exc:  # any failure of a probe is "not ready"; the reason goes to the log only
        log.warning("readiness: %s not ready: %s", check.name, first_line(exc))
        return Part(check.name, False, check.hint, check.owned)
    return Part(check.name, True, detail, check.owned)


async def run_checks(checks: Sequence[Check], timeout_s: float = PROBE_TIMEOUT_S) -> list[Part]:
    """Every check at once (a slow store does not delay the others), in the order given."""
    return list(await asyncio.gather(*(run_check(c, timeout_s) for c in checks)))


def report(parts: Sequence[Part]) -> tuple[int, dict[str, Any]]:
    """The ``/healthz`` status and body: 200 ``{"status": "ok", "version": ..., "parts": ...}`` or 503
    "not ready"; ``version`` is the release this replica runs (during a rolling upgrade, old and new
    replicas answer side by side)."""
    ready = all(p.ready for p in parts)
    body = {
        "status": "ok" if ready else "not ready",
        "version": release(),
        "parts": {p.name: p.as_json() for p in parts},
    }
    return (200 if ready else 503), body


def store_check(store: Store) -> Check:
    """The store answers a query (PostgreSQL reachable, the SQLite file readable)."""

    async def probe() -> str:
        await asyncio.to_thread(store.query, "SELECT 1")
        return f"reachable ({store.dialect})"

    return Check("store", probe, hint="the store cannot be reached; see the service log")


def llm_check(llm: LLMSettings, command: str) -> Check:
    """An LLM is configured and its client can be made (nothing is sent to it); made once, then kept."""
    from core.llm import require_llm

    made: list[object] = []

    async def probe() -> str:
        if not made:
            made.append(require_llm(llm, command))
        return f"configured ({llm.provider})"

    return Check("llm", probe, hint="no LLM is configured on this service; ask its operator")


def task_check(name: str, task: Callable[[], asyncio.Task[Any] | None], *, started_lazily: bool = False) -> Check:
    """A background task of the replica still runs (a task that ended has stopped doing its work)."""

    async def probe() -> str:
        current = task()
        if current is None:
            if started_lazily:
                return "starts with the first request"
            raise NotReady(f"{name} was never started")
        if current.done():
            failure = None if current.cancelled() else current.exception()
            raise NotReady(f"{name} ended" + (f": {first_line(failure)}" if failure else ""))
        return "running"

    return Check(name, probe, owned=True, hint="a background task of this replica stopped; it will be restarted")


def sessions_check(active: Callable[[], int], passivation: Callable[[], asyncio.Task[Any] | None]) -> Check:
    """The sessions this replica hosts: how many are active, and its passivation task still runs (a
    stopped one would let idle sessions pile up until ``sessions.max_active``)."""
    running = task_check("session passivation", passivation)

    async def probe() -> str:
        await running.probe()
        return f"{active()} active on this replica"

    return Check("sessions", probe, owned=True, hint=running.hint)


def actors_check(name: str, handles: Callable[[], MutableMapping[Any, Handle[Any]]]) -> Check:
    """The worker actors the replica keeps warm (``handles``: the app's own table of them) all answer.

    None started yet is ready: they start on use. A dead one makes the part not ready and is taken out
    of the table, so the app starts a fresh one on its next use (the pools do that for a missing slot):
    the replica repairs itself without a restart, which would cut the requests it is serving."""

    async def probe() -> str:
        current = dict(handles())
        if not current:
            return "none started yet (they start with the first request)"
        answers = await asyncio.gather(*(_ping(h) for h in current.values()), return_exceptions=True)
        dead = [key for key, answer in zip(current, answers, strict=True) if isinstance(answer, BaseException)]
        if dead:
            table = handles()
            for key in dead:
                if table.get(key) is current[key]:  # not replaced meanwhile by the app itself
                    del table[key]
                    _release(current[key])
            raise NotReady(f"{len(dead)} of {len(current)} {name} did not answer; taken out of the pool")
        return f"{len(current)} warm"

    return Check(name, probe, hint="a worker process died; a new one starts with the next request")


async def _ping(handle: Handle[Any]) -> None:
    """Wait until the actor answers (Ray's own readiness call on every actor); a local object always does."""
    if handle.remote:
        await handle.target.__ray_ready__.remote()


def _release(handle: Handle[Any]) -> None:
    """Make sure a worker that stopped answering is gone (a hung one would keep its process)."""
    if handle.remote:
        import ray

        try:
            ray.kill(handle.target, no_restart=True)
        except Exception as exc:  # already gone: nothing to release
            log.info("readiness: dead worker already gone: %s", first_line(exc))


__all__ = [
    "PROBE_TIMEOUT_S",
    "Check",
    "NotReady",
    "Part",
    "Probe",
    "actors_check",
    "llm_check",
    "report",
    "run_check",
    "run_checks",
    "sessions_check",
    "store_check",
    "task_check",
]
