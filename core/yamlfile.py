"""Reading the YAML files that hold policy (rules, vocabularies, settings) with one kind of error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from core.errors import ConfigError


def read_yaml(path: Path, what: str) -> Any:
    """Parsed YAML of ``path``; an unreadable or malformed file is a ConfigError naming ``what``."""
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {path}: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{what} {path} is not valid YAML: {exc}") from exc
