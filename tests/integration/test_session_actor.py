"""The session actor on the shared local Ray: concurrent writers, a kill mid-conversation, idle release."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from core.runtime import Handle, RayRuntime
from core.settings import Settings, load_settings
from router.conversation import Reply, Turn, TurnOutcome
from sessions.actor import SessionActor, session_actor, session_call
from sessions.ids import SessionNotFoundError
from sessions.models import SessionPolicy, SessionState

POLICY = SessionPolicy(ttl_s=3600, previous_ttl_s=600, history_limit=500)


def _settings(tmp_path: Path) -> Settings:
    return load_settings(overrides={"data_dir": tmp_path / "data"})


async def test_fifty_concurrent_writers_lose_no_update(ray_cluster: None, tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    runtime = RayRuntime()
    handle = await session_actor(runtime, settings, "crowded", POLICY, 300.0)
    await asyncio.gather(
        *(handle.call(SessionActor.update, "", Reply(f"m{i}", "ja", "TestAgent", POLICY)) for i in range(50))
    )
    state: SessionState = await handle.call(SessionActor.read, "")
    assert sorted(e.text for e in state.history) == sorted(f"m{i}" for i in range(50))
    assert state.revision == 50  # one stored write per change


async def test_a_killed_actor_comes_back_with_its_state(ray_cluster: None, tmp_path: Path) -> None:
    import ray

    settings = _settings(tmp_path)
    runtime = RayRuntime()
    handle = await session_actor(runtime, settings, "visitor-7", POLICY, 300.0)
    first: TurnOutcome = await handle.call(SessionActor.update, "", Turn("エンジニアカフェの営業時間は？", 0.5, POLICY))
    assert first.result.request_type == "hours"
    before = await handle.call(SessionActor.where)
    ray.kill(handle.target, no_restart=True)  # mid-conversation

    async def follow_up(h: Handle[SessionActor]) -> TurnOutcome:
        return await h.call(SessionActor.update, "", Turn("日曜日は？", 0.5, POLICY))

    outcome: TurnOutcome = await session_call(runtime, settings, "visitor-7", POLICY, 300.0, follow_up)
    assert outcome.result.request_type == "hours" and outcome.result.debug_info.classification.inherited
    again = await session_actor(runtime, settings, "visitor-7", POLICY, 300.0)
    assert (await again.call(SessionActor.where))["pid"] != before["pid"]  # a new actor, same session
    state: SessionState = await again.call(SessionActor.read, "")
    assert [e.text for e in state.history] == ["エンジニアカフェの営業時間は？", "日曜日は？"]


async def test_idle_actor_releases_itself_and_returns_from_the_store(ray_cluster: None, tmp_path: Path) -> None:
    import ray

    settings = _settings(tmp_path)
    runtime = RayRuntime()
    handle = await session_actor(runtime, settings, "sleepy", POLICY, 0.5)
    await handle.call(SessionActor.update, "", Turn("料金はいくら？", 0.5, POLICY))
    for _ in range(600):  # bounded: the actor's own timer, not a test deadline
        names = {a["name"] for a in ray.util.list_named_actors(all_namespaces=True)}
        if "SessionActor:sleepy" not in names:
            break
        await asyncio.sleep(0.1)
    else:
        pytest.fail("the idle session actor never released itself")

    async def follow_up(h: Handle[SessionActor]) -> TurnOutcome:
        return await h.call(SessionActor.update, "", Turn("土日は？", 0.5, POLICY))

    outcome: TurnOutcome = await session_call(runtime, settings, "sleepy", POLICY, 300.0, follow_up)
    assert outcome.result.request_type == "price"


async def test_another_owner_gets_not_found(ray_cluster: None, tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    runtime = RayRuntime()
    handle = await session_actor(runtime, settings, "owned", POLICY, 300.0)
    await handle.call(SessionActor.update, "owner-a", Turn("Wi-Fiはありますか", 0.5, POLICY))
    with pytest.raises(SessionNotFoundError):
        await handle.call(SessionActor.read, "owner-b")
    with pytest.raises(SessionNotFoundError):
        await handle.call(SessionActor.update, "owner-b", Turn("日曜日は？", 0.5, POLICY))
