"""The capability profile the synergy is judged against, and the optional industry profile on top.

Both are policy files (``data/critic/mitsubishi_estate.yaml``, ``data/critic/industries/*.yaml``)
read through :func:`core.policy.load_policy`: a mistake is reported with the file, line and key.
The capability caps must add up to the synergy maximum (50), so the stage-1 points and the caps
can never disagree (the origin's 20/15/15 stage points did).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from core.errors import ConfigError
from core.policy import PolicyModel, load_policy
from core.resources import data_path

SYNERGY_MAX = 50.0
BASE_PROFILE = "mitsubishi_estate"
CAPABILITY_IDS = ("development", "operations", "finance", "innovation")


class Capability(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    name: str
    covers: list[str] = Field(default_factory=list)
    strength_level: int = Field(ge=1, le=10)
    cap: float = Field(gt=0)
    source: str


class Figure(BaseModel):
    """One number about an asset, with where it comes from and whether a public source confirms it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    label: str
    value: float
    unit: str
    source: str = Field(min_length=1)
    as_of: str = Field(min_length=1)
    verified: bool
    spec_value: float | None = None
    note: str = ""

    def text(self) -> str:
        shown = f"{self.value:,.0f}{self.unit}"
        if self.spec_value is not None:
            shown += f"（仕様書の値: {self.spec_value:,.0f}）"
        return f"{self.label} {shown}" + ("" if self.verified else "（未確認）")


class Asset(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    name: str
    figures: list[Figure] = Field(default_factory=list)


class CapabilityProfile(PolicyModel):
    policy_name: ClassVar[str] = "critic capability profile"

    name: str
    company: str
    capabilities: list[Capability]
    assets: list[Asset]
    criteria: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _four_capabilities_within_fifty(self) -> CapabilityProfile:
        ids = tuple(c.id for c in self.capabilities)
        if ids != CAPABILITY_IDS:
            raise ValueError(f"capabilities must be {', '.join(CAPABILITY_IDS)} in this order, got {', '.join(ids)}")
        total = sum(c.cap for c in self.capabilities)
        if abs(total - SYNERGY_MAX) > 1e-9:
            raise ValueError(f"the capability caps must add up to {SYNERGY_MAX:g} (the synergy maximum), got {total:g}")
        return self

    def capability(self, capability_id: str) -> Capability:
        return next(c for c in self.capabilities if c.id == capability_id)

    @property
    def asset_ids(self) -> list[str]:
        return [a.id for a in self.assets]


class IndustryProfile(PolicyModel):
    policy_name: ClassVar[str] = "critic industry profile"

    name: str
    title: str
    criteria: list[str] = Field(min_length=1)


class Profile(BaseModel):
    """What one evaluation is judged against: the base profile and, optionally, an industry's criteria."""

    model_config = ConfigDict(frozen=True)

    base: CapabilityProfile
    industry: IndustryProfile | None = None

    @property
    def key(self) -> str:
        """Names and versions, for cache keys and the output (``mitsubishi_estate@1+healthcare@1``)."""
        text = f"{self.base.name}@{self.base.version}"
        return text + (f"+{self.industry.name}@{self.industry.version}" if self.industry else "")

    @property
    def criteria(self) -> list[str]:
        return [*self.base.criteria, *(self.industry.criteria if self.industry else [])]


def industries_dir() -> Path:
    return data_path("critic", "industries")


def available_industries() -> list[str]:
    return sorted(p.stem for p in industries_dir().glob("*.yaml"))


def load_profile_file(path: Path) -> CapabilityProfile:
    return load_policy(path, CapabilityProfile)


@cache
def load_profile(industry: str | None = None) -> Profile:
    """The bundled base profile, plus ``data/critic/industries/<industry>.yaml`` when named."""
    base = load_profile_file(data_path("critic", f"{BASE_PROFILE}.yaml"))
    if industry is None:
        return Profile(base=base)
    path = industries_dir() / f"{industry}.yaml"
    if not path.is_file():
        raise ConfigError(
            f"no industry profile {industry!r} (looked for {path}); choose one of "
            f"{', '.join(available_industries()) or '(none installed)'} or add data/critic/industries/{industry}.yaml"
        )
    found = load_policy(path, IndustryProfile)
    if found.name != industry:
        raise ConfigError(f"industry profile {path}: name is {found.name!r}, expected {industry!r} (the file's name)")
    return Profile(base=base, industry=found)


__all__ = [
    "BASE_PROFILE",
    "CAPABILITY_IDS",
    "SYNERGY_MAX",
    "Asset",
    "Capability",
    "CapabilityProfile",
    "Figure",
    "IndustryProfile",
    "Profile",
    "available_industries",
    "industries_dir",
    "load_profile",
    "load_profile_file",
]
