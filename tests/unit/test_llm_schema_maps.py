"""Tool schemas as a grammar-decoding model sees them: maps as lists of named entries, signatures in
the prompt, one call on a forced turn; and the model's calls turned back into the tool's own shape."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field

from core.llm.base import LLMRequest, Message, ToolSpec
from core.llm.prompted_tools import PromptedTools
from core.llm.schema_bounds import bounded
from core.llm.schema_maps import is_map, lists_as_maps, maps_as_lists
from core.llm.schema_text import signature


class Item(BaseModel):
    amount: float | None = Field(None, description="Cost in yen.")
    label: str | None = None


class Point(BaseModel):
    date: str
    value: float


class Named(BaseModel):
    name: str
    size: int


class Costs(BaseModel):
    items: dict[str, Item] = Field(description="Cost items by key.")
    changes: dict[str, float] = Field(default_factory=dict)
    series: dict[str, list[Point]] | None = Field(None, max_length=8)
    named: dict[str, Named] = Field(default_factory=dict)
    margin: float | None = None


SCHEMA = Costs.model_json_schema()


def _maps(schema: Any) -> int:
    if isinstance(schema, list):
        return sum(_maps(s) for s in schema)
    if isinstance(schema, dict):
        return int(is_map(schema)) + sum(_maps(s) for s in schema.values())
    return 0


def test_maps_become_bounded_lists_of_named_entries() -> None:
    out = maps_as_lists(SCHEMA)
    props = out["properties"]
    items = props["items"]
    assert items["type"] == "array" and items["description"] == "Cost items by key."
    entry = items["items"]  # an object value is flattened beside its name
    assert set(entry["properties"]) == {"name", "amount", "label"} and entry["required"] == ["name"]
    assert props["changes"]["items"]["properties"]["value"] == {"type": "number"}
    assert props["changes"]["items"]["required"] == ["name", "value"]
    series = next(b for b in props["series"]["anyOf"] if b.get("type") == "array")
    assert series["maxItems"] == 8  # the map's maxProperties bounds the list
    assert series["items"]["properties"]["value"]["type"] == "array"
    named = props["named"]["items"]  # a value with its own "name" is not flattened: it sits under "value"
    assert set(named["properties"]) == {"name", "value"}
    assert set(out["$defs"]) == {"Point", "Named"}  # Item is inlined into its entries, so it is dropped
    assert _maps(SCHEMA) == 4 and _maps(out) == 0
    assert SCHEMA["properties"]["items"]["type"] == "object"  # the caller's schema is untouched
    keyed = maps_as_lists(
        {"type": "object", "additionalProperties": {"type": "integer"}, "propertyNames": {"maxLength": 5}}
    )
    assert keyed["items"]["properties"]["name"] == {"type": "string", "maxLength": 5}  # the keys' bounds hold
    capped = bounded(out, 2)  # entry lists are capped like any array, which maxProperties never was
    assert capped["properties"]["items"]["maxItems"] == 2


def test_the_models_entry_lists_become_the_tools_maps_and_validate() -> None:
    written = {
        "items": [{"name": "material", "amount": 400}, {"name": "labor", "amount": 600, "label": "労務費"}],
        "changes": [{"name": "material", "value": 0.2}],
        "series": [{"name": "cost", "value": [{"date": "2024-01", "value": 1.0}]}],
        "named": [{"name": "a", "value": {"name": "inner", "size": 2}}],
        "margin": 0.1,
    }
    restored = lists_as_maps(written, SCHEMA)
    assert restored == {
        "items": {"material": {"amount": 400}, "labor": {"amount": 600, "label": "労務費"}},
        "changes": {"material": 0.2},
        "series": {"cost": [{"date": "2024-01", "value": 1.0}]},
        "named": {"a": {"name": "inner", "size": 2}},
        "margin": 0.1,
    }
    Costs.model_validate(restored)
    assert lists_as_maps({"items": {"x": {"amount": 1}}, "series": None}, SCHEMA) == {
        "items": {"x": {"amount": 1}},  # a map written as a map stays one
        "series": None,
    }


def test_a_repeated_name_keeps_the_last_entry_and_malformed_entries_are_left_for_validation() -> None:
    twice = lists_as_maps({"changes": [{"name": "a", "value": 1}, {"name": "a", "value": 2}]}, SCHEMA)
    assert twice == {"changes": {"a": 2}}  # as a repeated key in JSON
    odd = {"changes": [{"value": 1}], "items": [{"name": "a"}, "b"]}
    assert lists_as_maps(odd, SCHEMA) == odd  # the tool's validation names what is wrong
    assert lists_as_maps({"changes": [{"name": "a"}]}, SCHEMA) == {"changes": [{"name": "a"}]}


def test_a_signature_is_a_short_type_line() -> None:
    text = signature(maps_as_lists(SCHEMA))
    assert text.startswith("{items: [{name: string, amount?: number | null /* Cost in yen. */")
    assert "changes?: [{name: string, value: number}]" in text
    assert "margin?: number | null" in text and "Point" not in text  # definitions are inlined
    assert signature({"type": "string", "enum": ["a", "b"]}) == '"a" | "b"'
    tree = {
        "$defs": {
            "Node": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}
        }
    }
    assert signature({**tree, "$ref": "#/$defs/Node"}) == "{kids?: [Node]}"  # recursion is named, not unrolled
    assert signature({"type": "object", "additionalProperties": {"type": "integer"}}) == "{[key: string]: integer}"
    assert signature({"type": "object", "properties": {"n": {"type": "integer", "default": 3}}}) == "{n?: integer = 3}"
    assert len(text) < len(json.dumps(SCHEMA)) / 2


COSTS = ToolSpec(name="costs", description="Cost impact.", input_schema=SCHEMA)
OTHER = ToolSpec(name="other", description="Another.", input_schema={"type": "object", "properties": {}})


def _plan(choice: Any) -> PromptedTools:
    return PromptedTools(
        LLMRequest(system="", messages=[Message(role="user", content="go")], tools=[COSTS, OTHER], tool_choice=choice)
    )


def test_prompted_tools_decode_entry_lists_and_hand_the_tool_its_maps() -> None:
    plan = _plan("required")
    calls = plan.schema["properties"]["tool_calls"]
    assert calls["maxItems"] == 1  # a forced turn asks for exactly one call
    arguments = calls["items"]["anyOf"][0]["properties"]["arguments"]
    assert arguments["properties"]["items"]["type"] == "array"
    assert "arguments: {items: [{name: string" in plan.system and '"$defs"' not in plan.system
    written = json.dumps({"tool_calls": [{"name": "costs", "arguments": {"items": [{"name": "m", "amount": 4}]}}]})
    (call,), text, output = plan.parse(written, lambda: "c1")
    assert (call.name, call.arguments, text, output) == ("costs", {"items": {"m": {"amount": 4}}}, "", None)
    free = _plan(None)
    tools_part = plan.system[: plan.system.index("- other: Another.")]  # a server's prompt cache keeps it
    assert free.system.startswith(tools_part) and plan.system.endswith("Call exactly one tool now.")
    assert free.schema["anyOf"][0]["properties"]["tool_calls"]["maxItems"] > 1  # unforced turns may call several
