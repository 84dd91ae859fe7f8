"""Resident agents of an older code are retired by the new code once nothing uses them (core/residents.py),
on a real Ray: real sages and critic workers named with another code's fingerprint, as an upgrade
leaves them."""

from __future__ import annotations

import pytest

import core.llm.limiter  # registers the limiter's kind, as every replica has it
from core.residents import IDLE_CHECKS, RayResidents, Retirer, old_agents, resident_kinds
from core.runtime import DEFAULT_NAMESPACE, RayRuntime
from core.settings import load_settings
from critic.engine import worker_code
from critic.worker import CriticWorker
from magi.models import SageName
from magi.sage import Sage
from magi.seats import sage_code, sage_key

pytestmark = pytest.mark.usefixtures("ray_cluster")
OLD = "0ldc0de0"  # the fingerprint an earlier code had
SLOT = 97  # a seat of this test's own: the session's council tests leave conversations on seat 0's sage


async def settled() -> bool:
    return True


async def rollout_under_way() -> bool:
    return False


async def alive(name: str) -> bool:
    return name in await RayResidents().names()


async def test_an_old_sage_goes_once_its_last_conversation_closed_and_the_current_one_stays() -> None:
    runtime = RayRuntime()
    try:
        old = await runtime.get_or_create(
            Sage, SageName.MELCHIOR, key=f"melchior-0-{OLD}", namespace=DEFAULT_NAMESPACE, detached=True
        )
        current = await runtime.get_or_create(
            Sage, SageName.MELCHIOR, key=sage_key(SageName.MELCHIOR, SLOT), namespace=DEFAULT_NAMESPACE, detached=True
        )
        llm = load_settings(None, {"llm": {"provider": "python:magi.scripted:respond"}}).llm
        opened = old.call(Sage.open, "d-1", system="s", llm=llm, budget_tokens=1000, expires_after_s=600)
        assert await opened
        old_name, current_name = f"Sage:melchior-0-{OLD}", f"Sage:{sage_key(SageName.MELCHIOR, SLOT)}"
        assert [a.name for a in old_agents([old_name, current_name], resident_kinds())] == [old_name]

        waiting = Retirer(rollout_under_way)
        for _ in range(IDLE_CHECKS + 1):
            assert await waiting.tick() == []  # callers of the old code may still come
        retirer = Retirer(settled)
        for _ in range(IDLE_CHECKS + 1):
            assert old_name not in await retirer.tick()  # a deliberation still talks to it
        assert await old.call(Sage.close, "d-1") == []
        gone = []
        for _ in range(IDLE_CHECKS):
            gone += await retirer.tick()
        assert old_name in gone and not await alive(old_name)
        assert await alive(current_name) and await current.call(Sage.conversations) == 0
        assert sage_code() != OLD
    finally:
        await runtime.close()


async def test_an_old_critic_worker_goes_when_idle() -> None:
    runtime = RayRuntime()
    try:
        worker = await runtime.get_or_create(CriticWorker, key=f"0-{OLD}", detached=True)
        assert await worker.call(CriticWorker.in_flight) == 0  # started, and judging nothing
        name = f"CriticWorker:0-{OLD}"
        assert await alive(name) and worker_code() != OLD
        retirer = Retirer(settled)
        gone = []
        for _ in range(IDLE_CHECKS):
            gone += await retirer.tick()
        assert name in gone and not await alive(name)
    finally:
        await runtime.close()


class CriticWorkerOfAnOlderRelease:
    """Stands for a 0.3.0 critic worker: it cannot say how busy it is (no in_flight method)."""

    async def judge(self) -> None:
        return None


async def test_an_agent_that_cannot_say_goes_after_the_grace_period() -> None:
    import ray

    name = f"CriticWorker:1-{OLD}"
    ray.remote(CriticWorkerOfAnOlderRelease).options(
        name=name, namespace=DEFAULT_NAMESPACE, lifetime="detached", num_cpus=0
    ).remote()
    now = [0.0]
    retirer = Retirer(settled, grace_s=60.0, clock=lambda: now[0])
    assert await retirer.tick() == []
    now[0] = 30.0
    assert await retirer.tick() == [] and await alive(name)
    now[0] = 61.0
    assert await retirer.tick() == [name] and not await alive(name)


async def test_a_limiter_of_a_release_before_fingerprints_is_old() -> None:
    kinds = resident_kinds()
    names = ["magi-llm-limiter", core.llm.limiter.actor_name(), "magi-llm-limiter-0ldc0de0", "Elsewhere:x"]
    assert [a.name for a in old_agents(names, kinds)] == ["magi-llm-limiter", "magi-llm-limiter-0ldc0de0"]
