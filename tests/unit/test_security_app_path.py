"""The guard's open paths are paths inside an app, also under a route prefix (``/critic/healthz``)."""

from __future__ import annotations

import pytest

from deployments.security import app_path


@pytest.mark.parametrize(
    ("path", "root", "expected"),
    [
        ("/healthz", "", "/healthz"),
        ("/critic/healthz", "/critic", "/healthz"),
        ("/critic/healthz", "/critic/", "/healthz"),
        ("/critic", "/critic", "/"),
        ("/criticx/healthz", "/critic", "/criticx/healthz"),  # another prefix, not this app's
        ("/critic/../healthz", "/critic", "/../healthz"),  # no normalising into an open path
        ("/research/x", "", "/research/x"),
    ],
)
def test_app_path(path: str, root: str, expected: str) -> None:
    assert app_path({"path": path, "root_path": root}) == expected
