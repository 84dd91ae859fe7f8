"""Free-form maps as lists of named entries, for a model that decodes tool arguments under a grammar.

A map (an object whose keys the caller chooses: ``{"material_cost": {...}, "labor_cost": {...}}``)
is where a weak model goes wrong under a JSON-schema grammar: the grammar lets any key follow any
key, so the model writes the same key again and again until ``max_tokens`` cuts the JSON off, and
llama.cpp's grammar does not enforce ``maxProperties``. A list of entries with a ``name`` has none of
that: its length is capped like any array (``core.llm.schema_bounds``) and every entry closes.

:func:`maps_as_lists` rewrites a schema for the decoder; :func:`lists_as_maps` turns what the model
wrote back into the maps the tool's own schema asks for, before the tool validates it. An entry
whose value is an object with properties is flattened (``{"name": "material_cost", "amount": 400}``),
otherwise it carries a ``value`` (``{"name": "material_cost", "value": 0.2}``). When the model names
an entry twice, the last one wins, as with a repeated key in JSON.
"""

from __future__ import annotations

from typing import Any

NAME = "name"
VALUE = "value"
_KEY_CONSTRAINTS = ("minLength", "maxLength", "pattern", "enum")
_BRANCHES = ("anyOf", "oneOf")


def is_map(schema: Any) -> bool:
    """An object whose keys are free (``additionalProperties`` is a schema) and that names no property."""
    return (
        isinstance(schema, dict)
        and schema.get("type") == "object"
        and isinstance(schema.get("additionalProperties"), dict)
        and not schema.get("properties")
    )


def maps_as_lists(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` (a root with its ``$defs``) with every map replaced by an array of named entries."""
    defs = schema.get("$defs") or {}
    out: dict[str, Any] = _rewrite(schema, defs)
    if "$defs" in out:  # a definition inlined into flat entries may no longer be referenced
        used = _referenced({k: v for k, v in out.items() if k != "$defs"}, out["$defs"])
        out["$defs"] = {name: d for name, d in out["$defs"].items() if name in used}
        if not out["$defs"]:
            del out["$defs"]
    return out


def lists_as_maps(value: Any, schema: dict[str, Any]) -> Any:
    """``value`` written under :func:`maps_as_lists` of ``schema``, with its entry lists made maps again.

    Anything not shaped as expected is left as written, so the tool's validation reports it."""
    return _restore(value, schema, schema.get("$defs") or {})


def _resolve(schema: Any, defs: dict[str, Any]) -> Any:
    ref = schema.get("$ref") if isinstance(schema, dict) else None
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return defs.get(ref.removeprefix("#/$defs/"), schema)
    return schema


def _referenced(schema: Any, defs: dict[str, Any], seen: set[str] | None = None) -> set[str]:
    """Names of the definitions ``schema`` refers to, directly or through other definitions."""
    seen = set() if seen is None else seen
    if isinstance(schema, list):
        for item in schema:
            _referenced(item, defs, seen)
    elif isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref.removeprefix("#/$defs/")
            if name not in seen and name in defs:
                seen.add(name)
                _referenced(defs[name], defs, seen)
        for value in schema.values():
            _referenced(value, defs, seen)
    return seen


def _flat_fields(value_schema: Any, defs: dict[str, Any]) -> dict[str, Any] | None:
    """The value's properties when an entry can carry them beside its name, else None."""
    target = _resolve(value_schema, defs)
    if not isinstance(target, dict) or target.get("type") != "object" or is_map(target):
        return None
    properties = target.get("properties")
    if not isinstance(properties, dict) or not properties or NAME in properties:
        return None
    return target


def _rewrite(schema: Any, defs: dict[str, Any]) -> Any:
    if isinstance(schema, list):
        return [_rewrite(item, defs) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if is_map(schema):
        return _entries(schema, defs)
    return {key: _rewrite(value, defs) for key, value in schema.items()}


def _entries(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    names = schema.get("propertyNames")
    names = names if isinstance(names, dict) else {}
    name = {"type": "string", **{k: names[k] for k in _KEY_CONSTRAINTS if k in names}}
    value_schema = schema["additionalProperties"]
    flat = _flat_fields(value_schema, defs)
    if flat is not None:
        fields = {key: _rewrite(field, defs) for key, field in flat["properties"].items()}
        entry: dict[str, Any] = {
            "type": "object",
            "properties": {NAME: name, **fields},
            "required": [NAME, *flat.get("required", [])],
        }
        if flat.get("additionalProperties") is False:
            entry["additionalProperties"] = False
    else:
        entry = {
            "type": "object",
            "properties": {NAME: name, VALUE: _rewrite(value_schema, defs)},
            "required": [NAME, VALUE],
            "additionalProperties": False,
        }
    array: dict[str, Any] = {"type": "array", "items": entry}
    for key, bound in (("minProperties", "minItems"), ("maxProperties", "maxItems")):
        if key in schema:
            array[bound] = schema[key]
    if "description" in schema:
        array["description"] = schema["description"]
    return array


def _restore(value: Any, schema: Any, defs: dict[str, Any]) -> Any:
    schema = _resolve(schema, defs)
    if not isinstance(schema, dict):
        return value
    for keyword in _BRANCHES:
        branches = schema.get(keyword)
        if isinstance(branches, list):
            branch = next((b for b in branches if _fits(value, _resolve(b, defs))), None)
            return value if branch is None else _restore(value, branch, defs)
    if is_map(schema):
        return _restore_map(value, schema["additionalProperties"], defs)
    if isinstance(value, dict) and isinstance(schema.get("properties"), dict):
        properties = schema["properties"]
        return {k: _restore(v, properties[k], defs) if k in properties else v for k, v in value.items()}
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_restore(item, schema["items"], defs) for item in value]
    return value


def _restore_map(value: Any, value_schema: Any, defs: dict[str, Any]) -> Any:
    if isinstance(value, dict):  # written as a map after all: its values may hold entry lists
        return {k: _restore(v, value_schema, defs) for k, v in value.items()}
    if not isinstance(value, list) or not all(isinstance(e, dict) and isinstance(e.get(NAME), str) for e in value):
        return value
    flat = _flat_fields(value_schema, defs) is not None
    restored: dict[str, Any] = {}
    for entry in value:
        if not flat and VALUE not in entry:
            return value
        item = {k: v for k, v in entry.items() if k != NAME} if flat else entry[VALUE]
        restored[entry[NAME]] = _restore(item, value_schema, defs)
    return restored


def _fits(value: Any, branch: Any) -> bool:
    """Whether ``value`` has the JSON shape of ``branch`` as :func:`maps_as_lists` rewrote it."""
    if not isinstance(branch, dict):
        return False
    kind = branch.get("type")
    if is_map(branch):
        return isinstance(value, list | dict)
    if kind == "object":
        return isinstance(value, dict)
    if kind == "array":
        return isinstance(value, list)
    if kind == "null":
        return value is None
    return kind is not None and not isinstance(value, list | dict | type(None))


__all__ = ["NAME", "VALUE", "is_map", "lists_as_maps", "maps_as_lists"]
