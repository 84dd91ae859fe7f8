"""deployments/serve.yaml is the one list of HTTP apps: `serve run` and `magi serve` both read it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from ray.serve import Application
from ray.serve.schema import ServeDeploySchema

from core.errors import ConfigError
from deployments.apps import SERVE_CONFIG, load_serve_config

BUNDLED = yaml.safe_load(SERVE_CONFIG.read_text(encoding="utf-8"))


def test_the_file_ships_in_the_deployments_package() -> None:
    assert SERVE_CONFIG.parent == Path(__import__("deployments").__file__).parent
    assert SERVE_CONFIG.name == "serve.yaml"


def test_ray_serve_accepts_the_file() -> None:
    schema = ServeDeploySchema.model_validate(BUNDLED)
    assert [a.name for a in schema.applications] == [a.name for a in load_serve_config().applications]


def test_every_app_names_an_application_builder_with_its_own_name_and_prefix() -> None:
    apps = load_serve_config().applications
    assert apps, "serve.yaml lists no application"
    assert len({a.name for a in apps}) == len(apps)
    assert len({a.route_prefix for a in apps}) == len(apps)
    for app in apps:
        built = app.builder()(dict(app.args))  # binding builds the app graph; no Ray cluster needed
        assert isinstance(built, Application), f"{app.import_path} returned {type(built).__name__}"


def write(tmp_path: Path, apps: str) -> Path:
    path = tmp_path / "serve.yaml"
    path.write_text("http_options: {host: 127.0.0.1, port: 8000}\napplications:\n" + apps, encoding="utf-8")
    return path


def test_two_apps_with_one_name_or_prefix_are_refused(tmp_path: Path) -> None:
    one = "  - {name: research, route_prefix: /, import_path: deployments.research:app}\n"
    with pytest.raises(
        ConfigError,
        match=r"serve\.yaml: line 2, column 1: applications: two applications share "
        r"the name 'research'",
    ):
        load_serve_config(write(tmp_path, one + one))
    other = "  - {name: magi, route_prefix: /, import_path: deployments.research:app}\n"
    with pytest.raises(ConfigError, match="share the route_prefix '/'"):
        load_serve_config(write(tmp_path, one + other))


def test_a_bad_import_path_is_named_with_its_line(tmp_path: Path) -> None:
    bad = "  - name: research\n    route_prefix: /\n    import_path: deployments.research\n"
    with pytest.raises(
        ConfigError,
        match=re.escape(
            "line 5, column 5: applications[0] ('research').import_path: import_path must be 'package.module:builder'"
        ),
    ):
        load_serve_config(write(tmp_path, bad))
    missing = "  - {name: research, route_prefix: /, import_path: deployments.research:nothing}\n"
    (app,) = load_serve_config(write(tmp_path, missing)).applications
    with pytest.raises(ConfigError, match=r"cannot import deployments\.research:nothing .*fix import_path"):
        app.builder()
    not_builder = "  - {name: research, route_prefix: /, import_path: deployments.research:POLL_S}\n"
    (app,) = load_serve_config(write(tmp_path, not_builder)).applications
    with pytest.raises(ConfigError, match="is not an application builder"):
        app.builder()
