"""Resident sages in process: one agent per sage for every deliberation, one conversation per
deliberation, none left behind (after success, failure, cancel, or a caller that never closed)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from core.llm.base import LLMRequest
from core.llm.testing import FunctionClient
from core.runtime import InProcessRuntime
from core.settings import Settings, load_settings
from magi.models import SAGES, SageName
from magi.protocol import deliberate
from magi.sage import Sage, UnknownDeliberation
from magi.scripted import respond
from magi.seats import held_conversations, sage_key, slot_of
from magi.settings import CouncilSettings

QUESTION = "Adopt trunk-based development?\nmagi-script: melchior=APPROVE balthasar=DENY casper=APPROVE"


def settings(**council: Any) -> Settings:
    return load_settings(None, {"llm": {"provider": "python:magi.scripted:respond"}, "council": council})


async def test_every_deliberation_uses_the_same_three_sages_and_leaves_no_history() -> None:
    runtime = InProcessRuntime()
    config = settings(rounds=1)
    first = await deliberate(QUESTION, config, runtime, seed=1)
    sages = {s: await runtime.get_or_create(Sage, s, key=sage_key(s, 0), detached=True) for s in SAGES}
    for seed in range(2, 7):
        result = await deliberate(QUESTION, config, runtime, seed=seed)
        assert result.decision == first.decision and not result.failures
        assert await held_conversations(runtime, CouncilSettings.of(config)) == {f"{s.value}-0": 0 for s in SAGES}
    for sage, handle in sages.items():  # no new agent was made: the same objects served every ask
        assert (await runtime.get_or_create(Sage, sage, key=sage_key(sage, 0), detached=True)) is handle
    assert all(first.transcripts.values())  # the history was there while the deliberation ran


async def test_concurrent_deliberations_keep_their_histories_and_usage_apart() -> None:
    runtime = InProcessRuntime()
    results = await asyncio.gather(*(deliberate(QUESTION, settings(rounds=1), runtime, seed=s) for s in range(8)))
    for result in results:
        for sage in SAGES:  # each deliberation's history holds its own turns only (1 Thinking, 1 Debate, 1 vote)
            assert len(result.transcripts[sage.value]) == 6
        assert result.usage_total.calls == 9
    assert sum((await held_conversations(runtime, CouncilSettings())).values()) == 0


async def test_a_failed_or_cancelled_deliberation_closes_its_conversations() -> None:
    runtime = InProcessRuntime()
    failing = "Go?\nmagi-script: melchior=fail@thinking balthasar=fail@voting casper=invalid@voting"
    await deliberate(failing, settings(rounds=0), runtime, seed=1)
    stuck = asyncio.ensure_future(
        deliberate("Go?\nmagi-script: casper=slow@thinking", settings(rounds=0), runtime, seed=2)
    )
    await asyncio.sleep(0.2)
    stuck.cancel()
    with pytest.raises(asyncio.CancelledError):
        await stuck
    assert sum((await held_conversations(runtime, CouncilSettings())).values()) == 0


async def test_a_conversation_whose_caller_is_gone_expires_when_the_next_opens() -> None:
    sage = Sage(SageName.CASPER)
    llm = settings().llm
    assert await sage.open("kept", system="CASPER-3", llm=llm, budget_tokens=1000, expires_after_s=60.0)
    assert not await sage.open("kept", system="CASPER-3", llm=llm, budget_tokens=1000, expires_after_s=60.0)
    assert await sage.open("lost", system="CASPER-3", llm=llm, budget_tokens=1000, expires_after_s=0.0)
    await asyncio.sleep(0.01)
    assert await sage.open("next", system="CASPER-3", llm=llm, budget_tokens=1000, expires_after_s=60.0)
    assert await sage.conversations() == 2  # "lost" was dropped, "kept" is within its time
    with pytest.raises(UnknownDeliberation, match="open it first"):
        await sage.ask("lost", "thinking", "Go?")
    await sage.close("next")
    await sage.close("kept")
    assert await sage.conversations() == 0


async def test_each_conversation_uses_the_client_it_was_opened_with() -> None:
    sage = Sage(SageName.MELCHIOR)
    seen: list[str] = []

    def tagged(tag: str) -> FunctionClient:
        def answer(request: LLMRequest) -> Any:
            seen.append(tag)
            return respond(request)

        return FunctionClient(answer, model="magi-scripted")

    llm = settings().llm
    for tag in ("a", "b"):
        await sage.open(tag, system="MELCHIOR-1", llm=llm, budget_tokens=4000, expires_after_s=60, client=tagged(tag))
    reply_b = await sage.ask("b", "thinking", "Deliberation s1. Go?")
    reply_a = await sage.ask("a", "thinking", "Deliberation s1. Go?")
    assert seen == ["b", "a"] and reply_a.calls == reply_b.calls == 1
    assert len(await sage.history("a")) == 2 and len(await sage.history("b")) == 2


def test_a_sage_is_named_by_its_slot_and_the_code_it_runs() -> None:
    key = sage_key(SageName.CASPER, 1)
    assert key.startswith("casper-1-") and len(key.rsplit("-", 1)[1]) == 8
    assert sage_key(SageName.CASPER, 1) == key  # the same code: the same agent


def test_a_deliberation_keeps_one_slot_and_deliberations_spread_over_the_replicas() -> None:
    ids = [f"{n:012x}" for n in range(60)]
    slots = [slot_of(i, 3) for i in ids]
    assert slots == [slot_of(i, 3) for i in ids] and set(slots) == {0, 1, 2}
    assert {slot_of(i, 1) for i in ids} == {0}
    with pytest.raises(ValueError):
        CouncilSettings(sage_replicas=0)
