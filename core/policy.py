"""Policy files: YAML that steers behaviour (rules, vocabularies, strategies), validated by pydantic.

Policy is data so that it can change without code, which means people edit it by hand: every
problem must point at the file, the line and the key. Each file carries ``version: N`` so that a
file written for a newer release fails with a clear message instead of being half understood.

Each policy has a model (a :class:`PolicyModel` subclass) next to the code that uses it::

    class Glossary(PolicyModel):
        policy_name: ClassVar[str] = "query glossary"
        terms: list[GlossaryTerm]

    glossary = load_policy(path, Glossary)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, ClassVar, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError

from core.errors import ConfigError
from core.yamlfile import YamlDocument, read_yaml_document, where

MAX_REPORTED_ERRORS = 5


S = TypeVar("S", bound=Sequence[str])


def compile_patterns(patterns: Sequence[str]) -> tuple[re.Pattern[str], ...]:
    """Each pattern compiled; a ValueError naming the first one that does not compile."""
    out = []
    for pattern in patterns:
        try:
            out.append(re.compile(pattern))
        except re.error as exc:
            raise ValueError(f"pattern {pattern!r} is not a valid regular expression ({exc})") from None
    return tuple(out)


def _each_compiles(patterns: S) -> S:
    compile_patterns(patterns)
    return patterns


# A policy field of regular expressions, each checked while the file is validated, so that the error
# carries its file, line and key.
PatternList = Annotated[list[str], AfterValidator(_each_compiles)]
PatternTuple = Annotated[tuple[str, ...], AfterValidator(_each_compiles)]


class PolicyModel(BaseModel):
    """Base of every policy file's model: unknown keys are errors (a typo must not pass silently).

    ``policy_version`` is the newest file format the code reads; raise it (and migrate in a
    ``model_validator(mode="before")``) when the format changes incompatibly.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    policy_name: ClassVar[str] = "policy file"
    policy_version: ClassVar[int] = 1

    version: int = 1


M = TypeVar("M", bound=PolicyModel)
B = TypeVar("B", bound=BaseModel)


def _label(loc: Sequence[int | str], data: Any) -> str:
    """``domains[1] ('bad').score``: the key path, with the ``name`` of list entries that have one."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
            data = data[part] if isinstance(data, list) and 0 <= part < len(data) else None
            if isinstance(data, dict) and isinstance(data.get("name"), str):
                text += f" ({data['name']!r})"
        elif isinstance(data, dict) and part in data:
            text += f".{part}" if text else part
            data = data[part]
        elif isinstance(data, dict) or not text:  # a missing key, or the first part
            text += f".{part}" if text else part
            data = None
        # else: a pydantic tag (union member, function validator): not part of the file's key path
    return text


def _problems(exc: ValidationError, data: Any, document: YamlDocument | None) -> list[str]:
    problems = []
    for err in exc.errors()[:MAX_REPORTED_ERRORS]:
        loc = err["loc"]
        position = document.position(loc) if document is not None else None
        at = f"line {position[0]}, column {position[1]}: " if position else ""
        key = _label(loc, data) or "top level"
        message = str(err["msg"]).removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            message = "unknown key (a typo?)"
        elif err["type"] in ("model_type", "model_attributes_type", "dict_type"):
            message = f"expected a mapping of keys, got {type(err['input']).__name__}"
        problems.append(f"{at}{key}: {message}")
    hidden = len(exc.errors()) - MAX_REPORTED_ERRORS
    if hidden > 0:
        problems.append(f"and {hidden} more")
    return problems


def validate_yaml(raw: Any, model: type[B], what: str, source: Path | str, document: YamlDocument | None = None) -> B:
    """Validate parsed YAML with any pydantic model; a ConfigError lists each problem with its key path
    and, when ``document`` (the file it came from) is given, its line and column."""
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        problems = _problems(exc, raw, document)
        raise ConfigError(
            f"{what} {source}: " + "; ".join(problems) + "; fix the file (its header comments describe each key)"
        ) from None


def validate_policy(raw: Any, model: type[M], source: Path | str, document: YamlDocument | None = None) -> M:
    """Validate already-parsed policy data (``document`` gives line numbers when it came from a file)."""
    return validate_yaml(raw, model, model.policy_name, source, document)


def check_version(document: YamlDocument, model: type[PolicyModel]) -> None:
    """A policy file must say which format it is written in, and not be newer than this code reads."""
    name, known, data = model.policy_name, model.policy_version, document.data
    if not isinstance(data, dict):
        raise ConfigError(
            f"{name} {where(document.path, document.position(()))}: expected a mapping of keys starting with "
            f"`version: {known}`, found {type(data).__name__ if data is not None else 'an empty file'}; "
            "restore the file from the magi-cluster release"
        )
    if "version" not in data:
        raise ConfigError(
            f"{name} {document.path}: no `version:` key; add `version: {known}` at the top "
            f"(the format this release of magi-cluster reads)"
        )
    version = data["version"]
    at = where(document.path, document.position(("version",)))
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ConfigError(f"{name} {at}: version must be a whole number from 1 to {known}, got {version!r}")
    if version > known:
        raise ConfigError(
            f"{name} {at}: version {version} is newer than this release of magi-cluster reads (up to {known}); "
            "upgrade magi-cluster, or use the file that ships with this release"
        )


def load_policy(path: Path, model: type[M]) -> M:
    """Read, version-check and validate one policy file; every failure is a ConfigError naming the
    file and, where known, the line and column."""
    document = read_yaml_document(path, model.policy_name)
    check_version(document, model)
    return validate_policy(document.data, model, path, document)


__all__ = [
    "MAX_REPORTED_ERRORS",
    "PatternList",
    "PatternTuple",
    "PolicyModel",
    "check_version",
    "compile_patterns",
    "load_policy",
    "validate_policy",
    "validate_yaml",
]
