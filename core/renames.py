"""The table of settings renamed or removed since earlier releases (``data/settings/renames.yaml``).

Settings carry old configs forward: an old name in ``magi.yaml`` or the environment is read as its
successor with one warning naming both, and a key removed with no successor is ignored with a warning,
so a config that started one release starts the next. The table is data, one file for every section;
:mod:`core.settings` applies it and ``docs/generate.py`` lists it in the settings reference.
"""

from __future__ import annotations

from functools import cache
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from core.policy import PolicyModel, load_policy
from core.resources import data_path
from core.version import SEMVER

RENAMES_FILE = ("settings", "renames.yaml")


def _release(value: str) -> str:
    if not SEMVER.fullmatch(value):
        raise ValueError(f"'since' must be a release such as 0.3.0, got {value!r}")
    return value


class SectionRename(BaseModel):
    """A whole section under a new name (``magi:`` -> ``council:``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    old: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    new: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    since: str
    why: str = Field(min_length=1)

    _since = field_validator("since")(_release)


class KeyRename(BaseModel):
    """One key under a new name, or removed (``new`` null). ``old`` is ``section.key``, or a flat key
    from before sections; ``new`` is ``section.key`` (or a top-level key)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    old: str = Field(pattern=r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)?$")
    new: str | None = Field(pattern=r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)?$")
    since: str
    why: str = Field(min_length=1)

    _since = field_validator("since")(_release)

    @property
    def old_key(self) -> tuple[str, str]:
        """(section, key); the section of a flat or top-level key is ``""``."""
        return _split(self.old)

    @property
    def new_key(self) -> tuple[str, str] | None:
        return _split(self.new) if self.new is not None else None


class RenameTable(PolicyModel):
    policy_name: ClassVar[str] = "renamed-settings table"

    sections: list[SectionRename] = Field(default_factory=list)
    keys: list[KeyRename] = Field(default_factory=list)

    @model_validator(mode="after")
    def _one_entry_per_old_name(self) -> RenameTable:
        for kind, names in (("section", [s.old for s in self.sections]), ("key", [k.old for k in self.keys])):
            twice = sorted({n for n in names if names.count(n) > 1})
            if twice:
                raise ValueError(f"{kind} {', '.join(twice)} listed more than once")
        return self


def _split(dotted: str) -> tuple[str, str]:
    section, _, key = dotted.rpartition(".")
    return section, key


@cache
def rename_table() -> RenameTable:
    """The table, validated; a broken file is a ConfigError naming it and the line."""
    return load_policy(data_path(*RENAMES_FILE), RenameTable)


def section_renames() -> dict[str, SectionRename]:
    """Earlier section name -> its entry."""
    return {s.old: s for s in rename_table().sections}


def key_renames() -> dict[tuple[str, str], KeyRename]:
    """(section, key) as once written -> its entry; flat keys from before sections have section ``""``."""
    return {k.old_key: k for k in rename_table().keys}


__all__ = [
    "RENAMES_FILE",
    "KeyRename",
    "RenameTable",
    "SectionRename",
    "key_renames",
    "rename_table",
    "section_renames",
]
