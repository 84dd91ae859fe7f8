"""Shared test setup: isolated settings and logging, and the `network` marker gate."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
CORPUS_DIR = REPO_ROOT / "data" / "corpus"

# postgres_server, postgres_url, store_url; browser, page; three_nodes
pytest_plugins = ["tests.postgres", "tests.browser", "tests.three_nodes"]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gates = {
        "network": ("MAGI_NETWORK_TESTS", "needs the public internet; set MAGI_NETWORK_TESTS=1"),
        "registry": ("MAGI_REGISTRY_TESTS", "installs from a public package registry; set MAGI_REGISTRY_TESTS=1"),
    }
    for marker, (variable, reason) in gates.items():
        if os.environ.get(variable) == "1":
            continue
        skip = pytest.mark.skip(reason=reason)
        for item in items:
            if marker in item.keywords:
                item.add_marker(skip)


@pytest.fixture(autouse=True)
def isolated_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """No test sees the developer's MAGI_*/ANTHROPIC_* variables or ./magi.yaml, nor the logging set-up
    of a test before it; data goes to tmp."""
    for name in list(os.environ):
        if name.startswith(("MAGI_", "ANTHROPIC_")) and name != "MAGI_NETWORK_TESTS":
            monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    data_dir = tmp_path / "magi-data"
    monkeypatch.setenv("MAGI_DATA_DIR", str(data_dir))
    monkeypatch.chdir(tmp_path)
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    yield data_dir
    # A command run in the test process (the CLI's logging set-up) leaves its level and handler on the
    # root logger; later tests would see that level, and that handler's scrubbed messages.
    root.setLevel(level)
    for handler in [h for h in root.handlers if h not in handlers]:
        root.removeHandler(handler)
