"""cluster.yaml (AWS, and its commented on-prem variant) passes Ray's own launcher validation, offline.

``prepare_config`` merges the provider's bundled defaults and ``validate_config`` checks the JSON
schema shipped with Ray plus its node-type rules: no AWS credentials, network or ``ray.init``.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import jsonschema
import pytest
import yaml
from ray.autoscaler._private.util import prepare_config, validate_config

from tests.conftest import REPO_ROOT

CLUSTER_YAML = REPO_ROOT / "cluster.yaml"
BLOCK = re.compile(r"^# BEGIN LOCAL VARIANT\n(.*?)^# END LOCAL VARIANT$", re.DOTALL | re.MULTILINE)


def load_aws() -> dict[str, Any]:
    config = yaml.safe_load(CLUSTER_YAML.read_text(encoding="utf-8"))
    assert isinstance(config, dict)
    return config


def load_local() -> dict[str, Any]:
    match = BLOCK.search(CLUSTER_YAML.read_text(encoding="utf-8"))
    assert match, "cluster.yaml lost its '# BEGIN/END LOCAL VARIANT' block"
    lines = match.group(1).splitlines()
    assert all(line.startswith("#") for line in lines), "every line of the local variant must be commented"
    config = yaml.safe_load("\n".join(re.sub(r"^# ?", "", line) for line in lines))
    assert isinstance(config, dict)
    return config


def check(config: dict[str, Any]) -> dict[str, Any]:
    """What `ray up` does before touching the cloud: fill defaults, then validate."""
    prepared = prepare_config(copy.deepcopy(config))
    validate_config(prepared)
    return prepared


def test_aws_config_is_valid() -> None:
    config = load_aws()
    prepared = check(config)
    assert config["provider"] == prepared["provider"]
    assert prepared["provider"]["type"] == "aws"
    assert prepared["provider"]["region"] == "ap-northeast-1"
    head = prepared["available_node_types"][prepared["head_node_type"]]
    assert head["max_workers"] == 0
    workers = [v for k, v in prepared["available_node_types"].items() if k != prepared["head_node_type"]]
    assert [(w["min_workers"], w["max_workers"]) for w in workers] == [(0, 8)]
    assert prepared["max_workers"] == 8
    assert prepared["file_mounts"]["~/magi-cluster"] == "."
    assert "pip install -e ~/magi-cluster" in prepared["head_setup_commands"]
    assert "pip install -e ~/magi-cluster" in prepared["worker_setup_commands"]
    head_start = " ".join(prepared["head_start_ray_commands"])
    assert "ray start --head --port=6379 --dashboard-host=0.0.0.0" in head_start
    assert "--autoscaling-config=~/ray_bootstrap_config.yaml" in head_start
    assert "RAY_AUTH_MODE=token" in head_start
    assert "--address=$RAY_HEAD_IP:6379" in " ".join(prepared["worker_start_ray_commands"])


def test_commented_local_variant_is_valid() -> None:
    config = load_local()
    assert config["provider"]["type"] == "local"
    assert config["provider"]["head_ip"] and config["provider"]["worker_ips"]
    prepared = check(config)
    [node_type] = prepared["available_node_types"].values()
    assert node_type["max_workers"] == len(config["provider"]["worker_ips"])


def test_missing_provider_is_rejected() -> None:
    config = load_aws()
    del config["provider"]
    with pytest.raises(jsonschema.ValidationError, match="provider"):
        validate_config({**config, "cluster_synced_files": []})


@pytest.mark.parametrize(
    ("path", "value", "error"),
    [
        (("max_workers",), "eight", jsonschema.ValidationError),
        (("head_node_type",), "no-such-type", ValueError),
        (("available_node_types", "cpu_worker", "min_workers"), 9, ValueError),
        (("provider", "no_such_setting_typo"), True, None),  # provider keys are open: must still pass
        (("no_such_top_level_key",), True, jsonschema.ValidationError),
    ],
)
def test_broken_aws_config_is_rejected(path: tuple[str, ...], value: object, error: type[Exception] | None) -> None:
    config = load_aws()
    target = config
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    if error is None:
        check(config)
    else:
        with pytest.raises(error):
            check(config)
