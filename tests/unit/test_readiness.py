"""Readiness checks of the Serve skeleton (deployments/readiness.py, deployments/base.py) without Ray:
real stores, tasks and in-process workers; Serve itself is in tests/integration/test_serve_skeleton.py."""

from __future__ import annotations

import asyncio
import logging
import shutil
from pathlib import Path

import pytest
from starlette.requests import Request

from core.runtime import Handle
from core.settings import load_settings
from core.store import open_store
from core.version import release
from deployments.base import AppService, http_api, logging_config
from deployments.identity import STATE_KEY, Caller
from deployments.readiness import (
    Check,
    NotReady,
    Part,
    actors_check,
    llm_check,
    report,
    run_check,
    run_checks,
    store_check,
    task_check,
)


async def ready() -> str:
    return "fine"


async def broken() -> str:
    raise NotReady("disk full at /var/lib/secret")


async def slow() -> str:
    await asyncio.sleep(10)
    return "late"


async def test_a_failed_probe_answers_its_hint_and_logs_the_reason(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="deployments.readiness"):
        part = await run_check(Check("disk", broken, hint="the disk is not ready; see the service log"))
    assert part == Part("disk", False, "the disk is not ready; see the service log")
    assert "disk full at /var/lib/secret" in caplog.text  # the reason is for the operator's log only


async def test_a_probe_that_hangs_is_not_ready_after_the_timeout() -> None:
    part = await run_check(Check("slow", slow), timeout_s=0.05)
    assert not part.ready and "no answer within" in part.detail


async def test_the_report_is_200_when_every_part_is_ready_else_503() -> None:
    parts = await run_checks([Check("a", ready), Check("b", ready)])
    assert report(parts) == (
        200,
        {
            "status": "ok",
            "version": release(),
            "parts": {"a": {"ready": True, "detail": "fine"}, "b": parts[1].as_json()},
        },
    )
    status, body = report(await run_checks([Check("a", ready), Check("b", broken)]))
    assert status == 503 and body["status"] == "not ready" and body["parts"]["b"]["ready"] is False
    assert body["version"] == release()  # a failing replica still says what it runs


async def test_the_store_check_asks_the_store(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    store = open_store(load_settings(None, {"data_dir": str(data_dir)}))
    assert await run_check(store_check(store)) == Part("store", True, "reachable (sqlite)")
    store.close()
    shutil.rmtree(data_dir)  # the SQLite file and its folder are gone: a new connection cannot open it
    assert not (await run_check(store_check(store))).ready


async def test_the_llm_check_needs_a_configured_provider() -> None:
    assert not (await run_check(llm_check(load_settings(None, {}).llm, "POST /x"))).ready
    configured = load_settings(None, {"llm": {"provider": "python:magi.scripted:respond"}})
    part = await run_check(llm_check(configured.llm, "POST /x"))
    assert part.ready and part.detail == "configured (python:magi.scripted:respond)"


async def test_a_task_check_fails_once_the_task_ended() -> None:
    task = asyncio.get_running_loop().create_task(asyncio.sleep(10))
    check = task_check("ticker", lambda: task)
    assert check.owned and (await run_check(check)).detail == "running"
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert not (await run_check(check)).ready
    assert (await run_check(task_check("lazy", lambda: None, started_lazily=True))).ready
    assert not (await run_check(task_check("never", lambda: None))).ready


async def test_the_workers_check_counts_warm_workers() -> None:
    handles: dict[int, Handle[object]] = {}
    check = actors_check("workers", lambda: handles)
    assert not check.owned  # a dead worker is replaced in place, not by a new replica
    assert (await run_check(check)).detail == "none started yet (they start with the first request)"
    handles.update({0: Handle(object(), remote=False), 1: Handle(object(), remote=False)})
    assert (await run_check(check)).detail == "2 warm"


async def test_serves_probe_fails_only_on_what_a_restart_repairs() -> None:
    class Service(AppService):
        http_api = http_api("test", "test")

    service = Service(load_settings(None, {}))
    service.checks = [Check("store", broken)]
    await service.check_health()  # the store is down: a new replica would not help
    service.checks = [Check("store", ready), Check("workers", broken, owned=True)]
    with pytest.raises(NotReady, match="workers"):
        await service.check_health()
    probe = Request({"type": "http", "headers": [], "state": {STATE_KEY: Caller("local", "127.0.0.1", False)}})
    answer = await service.healthz(probe)
    assert answer.status_code == 503 and b"parts" not in answer.body  # a probe without a key: no parts


def test_the_logging_config_comes_from_the_serve_settings() -> None:
    settings = load_settings(None, {"logging": {"level": "WARNING", "format": "json"}, "serve": {"access_log": False}})
    assert logging_config(settings) == {
        "log_level": "WARNING",
        "encoding": "JSON",
        "enable_access_log": False,
        "additional_log_standard_attrs": ["name"],
    }
