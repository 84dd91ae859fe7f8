"""Bounds for constrained decoding: a JSON schema the decoder cannot loop in forever.

A server that decodes under a schema's grammar (llama.cpp, vLLM, Ollama) keeps a weak model inside
the schema, but an array without ``maxItems`` still lets it repeat one item until ``max_tokens`` cuts
the JSON off, and the answer is lost. The copy sent for decoding caps such arrays; the caller still
validates against its own, unchanged model, so only the decoder sees the bound.
"""

from __future__ import annotations

from typing import Any

MAX_ITEMS = 16  # the default of llm.schema_max_items: above what the systems' answers list, below a loop


def bounded(schema: Any, max_items: int = MAX_ITEMS) -> Any:
    """``schema`` with every array that has no ``maxItems`` capped at ``max_items`` (a deep copy)."""
    if isinstance(schema, list):
        return [bounded(item, max_items) for item in schema]
    if not isinstance(schema, dict):
        return schema
    copy = {key: bounded(value, max_items) for key, value in schema.items()}
    if copy.get("type") == "array" and "maxItems" not in copy:
        copy["maxItems"] = max(max_items, int(copy.get("minItems", 0)))
    return copy


__all__ = ["MAX_ITEMS", "bounded"]
