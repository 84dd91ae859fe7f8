"""A JSON schema as a short type signature, for a prompt that describes tools to a model.

A tool's JSON schema is mostly keywords (``"type"``, ``"properties"``, ``"anyOf"``, titles that repeat
the property names); written out in a prompt it costs a small model most of its context, and the
model reads the shape better as a signature: ``{city: string, days?: integer = 3 /* how far ahead */}``.
The signature is only guidance: where the server decodes under the schema's grammar, the grammar
keeps the exact bounds, and the tool still validates against its own schema.
"""

from __future__ import annotations

import json
from typing import Any

_SCALARS = ("string", "number", "integer", "boolean", "null")


def signature(schema: Any) -> str:
    """``schema`` (a root with its ``$defs``) as a one-line signature; ``?`` marks an optional field."""
    defs = (schema.get("$defs") or {}) if isinstance(schema, dict) else {}
    return _render(schema, defs, ())


def _render(schema: Any, defs: dict[str, Any], within: tuple[str, ...]) -> str:
    if not isinstance(schema, dict):
        return "any"
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        name = ref.removeprefix("#/$defs/")
        if name in within or name not in defs:  # a recursive definition is named, not unrolled
            return name
        return _render(defs[name], defs, (*within, name))
    if "const" in schema:
        return json.dumps(schema["const"], ensure_ascii=False)
    if "enum" in schema:
        return " | ".join(json.dumps(v, ensure_ascii=False) for v in schema["enum"])
    for keyword in ("anyOf", "oneOf"):
        if isinstance(schema.get(keyword), list):
            return _union([_render(b, defs, within) for b in schema[keyword]])
    kind = schema.get("type")
    if isinstance(kind, list):
        return _union([_render({**schema, "type": k}, defs, within) for k in kind])
    if kind == "array" or "items" in schema:
        return f"[{_render(schema.get('items'), defs, within)}]"
    if kind == "object" or "properties" in schema or "additionalProperties" in schema:
        return _object(schema, defs, within)
    return kind if kind in _SCALARS else "any"


def _union(parts: list[str]) -> str:
    unique = list(dict.fromkeys(parts))
    return " | ".join(unique)


def _object(schema: dict[str, Any], defs: dict[str, Any], within: tuple[str, ...]) -> str:
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    fields = []
    for name, field in properties.items():
        text = f"{name}{'' if name in required else '?'}: {_render(field, defs, within)}"
        if isinstance(field, dict) and field.get("default") is not None:
            text += f" = {json.dumps(field['default'], ensure_ascii=False)}"
        if isinstance(field, dict) and field.get("description"):
            text += f" /* {' '.join(str(field['description']).split())} */"
        fields.append(text)
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        fields.append(f"[key: string]: {_render(extra, defs, within)}")
    return "{" + ", ".join(fields) + "}"


__all__ = ["signature"]
