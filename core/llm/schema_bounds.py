"""Bounds for constrained decoding: a JSON schema the decoder cannot loop in forever.

A server that decodes under a schema's grammar (llama.cpp, vLLM, Ollama) keeps a weak model inside
the schema, but a long array still lets it repeat one item until ``max_tokens`` cuts the JSON off, and
the answer is lost; so does a map with many keys, or a string it never closes (strings are capped only
when ``llm.schema_max_string_chars`` is set: a strong model's long answers must not be cut). Arrays and
maps are capped at ``llm.schema_max_items`` even when the caller's model allows more (a chart's 120
points): what the decoder may write must close within the caller's token budget. The copy sent for
decoding carries the caps; the caller still validates against its own, unchanged model, so only the
decoder sees the bounds.
"""

from __future__ import annotations

from typing import Any

MAX_ITEMS = 16  # the default of llm.schema_max_items: above what the systems' answers list, below a loop


def bounded(schema: Any, max_items: int = MAX_ITEMS, max_chars: int | None = None) -> Any:
    """``schema`` with every array and map capped at ``max_items`` entries (never below its minimum) and,
    with ``max_chars``, every free string capped at that many characters (a deep copy)."""
    if isinstance(schema, list):
        return [bounded(item, max_items, max_chars) for item in schema]
    if not isinstance(schema, dict):
        return schema
    copy = {key: bounded(value, max_items, max_chars) for key, value in schema.items()}
    if copy.get("type") == "array":
        copy["maxItems"] = _cap(copy, "minItems", "maxItems", max_items)
    if copy.get("type") == "object" and isinstance(copy.get("additionalProperties"), dict):
        copy["maxProperties"] = _cap(copy, "minProperties", "maxProperties", max_items)
    free_string = not ({"enum", "const", "pattern", "format"} & copy.keys())
    if max_chars is not None and copy.get("type") == "string" and free_string:
        cap = max(max_chars, int(copy.get("minLength", 0)))
        copy["maxLength"] = min(cap, int(copy.get("maxLength", cap)))
    return copy


def _cap(schema: dict[str, Any], least: str, most: str, limit: int) -> int:
    cap = max(limit, int(schema.get(least, 0)))
    return min(cap, int(schema.get(most, cap)))


__all__ = ["MAX_ITEMS", "bounded"]
