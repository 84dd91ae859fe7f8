"""Base of the boundary models every system shares: snake_case in Python, camelCase in JSON."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class CamelModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


__all__ = ["CamelModel"]
