"""The critic's JSON schemas, exported to ``data/critic/schemas/`` for the steps around it.

``python -m critic.schemas`` rewrites the files; tests/unit/test_critic_models.py fails when they
differ from the models, so the shipped schemas always describe what the critic reads and writes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from core.resources import data_path
from critic.models import CriticInput, CriticOutput, IdeaJudgement

SCHEMAS: dict[str, type[BaseModel]] = {
    "critic_input.json": CriticInput,
    "critic_output.json": CriticOutput,
    "idea_judgement.json": IdeaJudgement,
}


def schema_of(model: type[BaseModel]) -> dict[str, Any]:
    """The camelCase JSON schema of ``model`` as it is validated (input) and written (output)."""
    return model.model_json_schema(by_alias=True, mode="serialization" if model is CriticOutput else "validation")


def schema_text(model: type[BaseModel]) -> str:
    return json.dumps(schema_of(model), ensure_ascii=False, indent=2, sort_keys=True) + "\n"


def export(folder: Path | None = None) -> list[Path]:
    """Write every schema into ``folder`` (default: the bundled ``data/critic/schemas``)."""
    target = folder or data_path("critic", "schemas")
    written = []
    for name, model in SCHEMAS.items():
        path = target / name
        path.write_text(schema_text(model), encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    for written_path in export():
        sys.stdout.write(f"{written_path}\n")

__all__ = ["SCHEMAS", "export", "schema_of", "schema_text"]
