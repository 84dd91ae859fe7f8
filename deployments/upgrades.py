"""Rolling upgrades on Serve: when the old code's callers are gone, and retiring the old code's agents.

Serve updates an app in place: a new code version replaces the replicas one at a time (a new one may
start before the old one stops, ``max_surge_percent``), and a replica being replaced takes no new
request and finishes those in flight (``serve.drain_s``) before it stops. The resident agents of the
old code (sages, critic workers, the LLM limiter: core/residents.py) keep serving the old replicas
meanwhile; every replica of the new code retires them, in the background, once Serve reports the
rollout settled (every app running, every replica running: none starting, updating or draining) and
they hold no work.
"""

from __future__ import annotations

import asyncio
import logging
import sys

from core.residents import Retirer

log = logging.getLogger(__name__)
RETIRE_EVERY_S = 10.0  # how often a replica looks for agents of an older code


async def serve_settled() -> bool:
    """True when no app of this Serve instance is being deployed or updated and every replica runs:
    no caller of an older code is left (a replica still draining its requests counts as one)."""
    from ray import serve

    status = await asyncio.to_thread(serve.status)
    for app in status.applications.values():
        if app.status != "RUNNING":
            return False
        for deployment in app.deployments.values():
            if deployment.status != "HEALTHY":
                return False
            if any(count and state != "RUNNING" for state, count in deployment.replica_states.items()):
                return False
    return True


async def retire_old_agents(every_s: float = RETIRE_EVERY_S) -> None:
    """A replica's background task: retire the resident agents of older code, forever; a failed round
    is logged and the next one tries again (it never ends the task)."""
    retirer = Retirer(serve_settled)
    while True:
        try:
            await retirer.tick()
        except Exception as exc:  # a Ray hiccup: the next round looks again
            log.warning("retiring agents of an older code failed this round: %s", exc)
        await asyncio.sleep(every_s)


def start_retiring() -> asyncio.Task[None] | None:
    """Start :func:`retire_old_agents` on this loop when Ray runs here (a Serve replica); None in a
    process without Ray (an app tested in process)."""
    ray = sys.modules.get("ray")
    if ray is None or not ray.is_initialized():
        return None
    return asyncio.get_event_loop().create_task(retire_old_agents())


__all__ = ["RETIRE_EVERY_S", "retire_old_agents", "serve_settled", "start_retiring"]
