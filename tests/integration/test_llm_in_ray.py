"""The `python:` LLM provider works inside Ray workers, built from settings alone."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

import ray

from core.llm import Message, generate, make_llm
from core.llm.limiter import NAMESPACE, actor_name
from core.settings import Settings, load_settings


@ray.remote
def ask_in_worker(settings: Settings, question: str) -> tuple[str, int]:
    client = make_llm(settings.llm)
    assert client is not None
    generated = asyncio.run(generate(client, system="test", messages=[Message(role="user", content=question)]))
    return generated.response.text, os.getpid()


def settled_limiter_state() -> dict[str, Any]:
    """The cluster limiter's state once the callers' releases have reached it: a release is sent
    fire-and-forget when a call ends, so it may arrive after the task's result does."""
    limiter = ray.get_actor(actor_name(), namespace=NAMESPACE)
    state: dict[str, Any] = ray.get(limiter.state.remote())
    for _ in range(100):
        if state["in_use"] == 0:
            break
        time.sleep(0.1)
        state = ray.get(limiter.state.remote())
    return state


def test_python_provider_from_a_file_inside_workers(ray_cluster: None, tmp_path: Path) -> None:
    model = tmp_path / "scripted_model.py"
    model.write_text("def reply(request):\n    return request.messages[-1].content.upper()\n", encoding="utf-8")
    settings = load_settings(overrides={"llm": {"provider": f"python:{model}:reply"}})
    answers = ray.get([ask_in_worker.remote(settings, q) for q in ("ja", "en", "magi")])
    assert [text for text, _ in answers] == ["JA", "EN", "MAGI"]
    assert all(pid != os.getpid() for _, pid in answers)  # really ran in worker processes


def test_shipped_echo_provider_and_the_limiter_inside_workers(ray_cluster: None) -> None:
    settings = load_settings(overrides={"llm": {"provider": "python:core.llm.testing:echo", "max_concurrency": 2}})
    answers = ray.get([ask_in_worker.remote(settings, q) for q in ("melchior", "balthasar", "casper")])
    assert [text for text, _ in answers] == ["melchior", "balthasar", "casper"]
    state = settled_limiter_state()  # the workers went through the cluster limiter
    assert state["permits"] == 2 and state["granted"] >= 3 and state["in_use"] == 0


def test_callers_recover_when_the_limiter_is_killed_for_good(ray_cluster: None) -> None:
    """An operator's ``ray.kill`` (no restart) must not wedge the workers that hold the old handle."""
    settings = load_settings(overrides={"llm": {"provider": "python:core.llm.testing:echo"}})
    assert ray.get(ask_in_worker.remote(settings, "before"))[0] == "before"
    ray.kill(ray.get_actor(actor_name(), namespace=NAMESPACE), no_restart=True)
    answers = ray.get([ask_in_worker.remote(settings, q) for q in ("after", "again")])
    assert [text for text, _ in answers] == ["after", "again"]
    fresh = settled_limiter_state()
    assert fresh["in_use"] == 0 and fresh["granted"] >= 2
