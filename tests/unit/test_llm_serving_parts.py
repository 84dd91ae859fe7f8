"""The small pieces of the served model: decoding bounds, the llm app's settings and body check."""

from __future__ import annotations

from core.llm.schema_bounds import bounded
from deployments.llm import check_body
from deployments.llm_settings import LLMServerSettings


def test_arrays_and_maps_are_capped_for_the_decoder() -> None:
    schema = {
        "type": "object",
        "properties": {
            "free": {"type": "array", "items": {"type": "string"}},
            "capped": {"type": "array", "maxItems": 2},
            "wide": {"type": "array", "maxItems": 120},
            "at_least": {"type": "array", "minItems": 5},
            "named": {"type": "object", "additionalProperties": {"type": "array"}, "maxProperties": 8},
            "record": {"type": "object", "properties": {"x": {"type": "integer"}}},
        },
        "$defs": {"Inner": {"type": "object", "properties": {"xs": {"type": "array"}}}},
    }
    out = bounded(schema, 3)
    assert out["properties"]["free"]["maxItems"] == 3
    assert out["properties"]["capped"]["maxItems"] == 2
    assert out["properties"]["wide"]["maxItems"] == 3  # a larger bound of the caller's is capped too
    assert out["properties"]["named"]["maxProperties"] == 3  # a map's keys, like an array's items
    assert out["properties"]["named"]["additionalProperties"]["maxItems"] == 3
    assert "maxProperties" not in out["properties"]["record"]  # a record's fields are fixed
    assert out["properties"]["at_least"]["maxItems"] == 5  # never below the minimum
    assert out["$defs"]["Inner"]["properties"]["xs"]["maxItems"] == 3
    assert "maxItems" not in schema["properties"]["free"]  # the caller's schema is untouched
    assert "maxLength" not in out["properties"]["free"]["items"]  # strings: only when asked
    strings = bounded(
        {
            "properties": {
                "a": {"type": "string"},
                "b": {"type": "string", "enum": ["x"]},
                "c": {"type": "string", "maxLength": 500},
                "d": {"type": "string", "maxLength": 10},
            }
        },
        3,
        40,
    )["properties"]
    assert strings["a"]["maxLength"] == 40 and "maxLength" not in strings["b"]
    assert (strings["c"]["maxLength"], strings["d"]["maxLength"]) == (40, 10)


def test_replicas_are_fixed_or_autoscaled_from_settings() -> None:
    fixed = LLMServerSettings(min_replicas=2, max_replicas=2, num_cpus=0.5).deployment_options()
    assert fixed["num_replicas"] == 2 and "autoscaling_config" not in fixed
    assert fixed["ray_actor_options"] == {"num_cpus": 0.5}
    scaled = LLMServerSettings(min_replicas=1, max_replicas=4, target_ongoing_requests=3).deployment_options()
    assert scaled["num_replicas"] == "auto"
    assert scaled["autoscaling_config"] == {"min_replicas": 1, "max_replicas": 4, "target_ongoing_requests": 3.0}
    assert LLMServerSettings(parallel=3).llama_config().parallel == 3


def test_the_body_check_names_what_is_wrong() -> None:
    assert check_body({"messages": [{"role": "user", "content": "x"}], "max_tokens": 5}) is None
    assert "JSON object" in (check_body(["x"]) or "")
    assert "'messages'" in (check_body({"messages": []}) or "")
    assert "'max_tokens'" in (check_body({"messages": [{"role": "user", "content": "x"}], "max_tokens": 0}) or "")
