"""Unit tests run without Ray: any attempt to start or attach to it fails the test."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture(autouse=True)
def forbid_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    import ray

    def refuse(*_args: Any, **_kwargs: Any) -> None:
        raise AssertionError("unit tests must not start Ray; move this test to tests/integration")

    monkeypatch.setattr(ray, "init", refuse)
