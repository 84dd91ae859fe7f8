"""Per-request options, declared once in a settings section and derived for every surface.

A section marks the fields a caller may choose per request with :class:`Option` (in ``Annotated``);
a system lists its sections in one :class:`Options`. From that declaration come the CLI flags
(``--kebab-case``, help from the field description, type and choices from the annotation), the
HTTP request body (a pydantic model with camelCase aliases), the keywords of the Python API and of
the batch job, and one way to report a bad value: naming the option as the caller spelt it
(``command-line option '--rounds'``, ``request field 'earlyStop'``, ``argument 'iteration_count'``);
the environment and ``magi.yaml`` name theirs through :mod:`core.settings`.

Core knows no system: everything system-specific is in the markers and the sections.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import NoneType, UnionType
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, Field, create_model
from pydantic.fields import FieldInfo

from core.errors import ConfigError
from core.settings import S, Section, Settings

Surface = Literal["cli", "http", "python"]
SURFACES: tuple[Surface, ...] = ("cli", "http", "python")


@dataclass(frozen=True)
class Option:
    """Marks a section field as a per-request option: ``rounds: Annotated[int, Option()] = Field(...)``.

    ``name``: the caller's name when it is not the field's (``timeout`` for ``timeout_s``); the flag
    is its kebab-case, the JSON field its camelCase, the keyword itself (unless ``keyword`` says
    otherwise, e.g. a spec's name). ``off``: a bool default-on switched off by this flag
    (``no-anonymity``); JSON and keywords also take it (camelCase / snake_case) as "true = off".
    ``extend``: a list the caller adds to (repeatable flag). ``on``: the surfaces it appears on
    (server-side paths, for instance, are not an HTTP field)."""

    name: str | None = None
    keyword: str | None = None
    off: str | None = None
    metavar: str | None = None
    extend: bool = False
    on: tuple[Surface, ...] = SURFACES


@dataclass(frozen=True)
class Shorthand:
    """One caller value that sets several fields of a section (``--weights 60:40``); declared in the
    section's ``shorthands`` ClassVar. ``expand`` turns the text into ``{field: value}`` or raises
    ValueError with what is wrong (the mechanism adds who spelt it)."""

    name: str
    expand: Callable[[str], dict[str, Any]]
    help: str
    metavar: str = "TEXT"
    on: tuple[Surface, ...] = SURFACES


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def kebab(name: str) -> str:
    return "--" + name.replace("_", "-")


@dataclass(frozen=True)
class OptionSpec:
    """One option as every surface sees it."""

    section: type[Section]
    field: str  # the section's key
    name: str  # the caller's snake_case name (the flag and JSON field derive from it)
    marker: Option | Shorthand
    info: FieldInfo | None  # None for a shorthand

    @property
    def dotted(self) -> str:
        return f"{self.section.name}.{self.field}"

    @property
    def keyword(self) -> str:
        return (self.marker.keyword if isinstance(self.marker, Option) else None) or self.name

    @property
    def flag(self) -> str:
        return kebab(self.off or self.name)

    @property
    def json(self) -> str:
        return camel(self.name)

    @property
    def off(self) -> str | None:
        return self.marker.off.replace("-", "_") if isinstance(self.marker, Option) and self.marker.off else None

    def on(self, surface: Surface) -> bool:
        return surface in self.marker.on

    @property
    def kind(self) -> Any:
        """The value type a caller gives (None and field constraints removed; text for a shorthand)."""
        return str if self.info is None else _without_none(self.info.annotation)

    @property
    def flag_help(self) -> str:
        """The help of the CLI flag: a negating flag (``--no-anonymity``) says it turns the setting off."""
        if self.off and self.info is not None:
            return f"turn off (on by default): {self.info.description or self.name}"
        return self.help

    @property
    def help(self) -> str:
        """The setting's description and default (an HTTP field, a keyword: the setting itself)."""
        if isinstance(self.marker, Shorthand):
            return self.marker.help
        assert self.info is not None
        description = self.info.description or self.name
        default = self.info.get_default(call_default_factory=True)
        hidden = default in (None, [], {}) or isinstance(default, Path)  # a server's path is not shown
        shown = "" if hidden else f" (default: {_shown(default)})"
        return description + shown


def _shown(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _without_none(annotation: Any) -> Any:
    if get_origin(annotation) in (Union, UnionType):
        kept = [a for a in get_args(annotation) if a is not NoneType]
        return kept[0] if len(kept) == 1 else Union[tuple(kept)]  # noqa: UP007 - built at run time
    return annotation


def _marker(info: FieldInfo) -> Option | None:
    return next((m for m in info.metadata if isinstance(m, Option)), None)


def declared(section: type[Section]) -> list[OptionSpec]:
    """The options a section declares, in field order, then its shorthands."""
    specs = [
        OptionSpec(section, key, marker.name or key, marker, info)
        for key, info in section.model_fields.items()
        if (marker := _marker(info)) is not None
    ]
    for short in getattr(section, "shorthands", ()):
        specs.append(OptionSpec(section, short.name, short.name, short, None))
    return specs


@dataclass(frozen=True)
class Given:
    """What one caller chose: option name -> value (None never stored), and how each was spelt."""

    values: dict[str, Any]
    spelt: dict[str, str]
    origin: str

    def __contains__(self, name: str) -> bool:
        return name in self.values

    def with_value(self, name: str, value: Any, spelt: str) -> Given:
        """A copy with one more value (e.g. a keyword in another unit converted by the API)."""
        return Given({**self.values, name: value}, {**self.spelt, name: spelt}, self.origin)


Complete = Callable[[dict[str, Any]], dict[str, Any]]


class Options:
    """The per-request options of one system: those its sections declare (names unique across them).

    ``complete`` may add values a choice implies (a corpus implies the local provider), given the
    values the caller chose; it never overrides one they gave."""

    def __init__(self, *sections: type[Section], complete: Complete | None = None) -> None:
        self.sections = sections
        self.complete = complete
        self.specs = [spec for section in sections for spec in declared(section)]
        seen: dict[str, str] = {}
        for spec in self.specs:
            for spelling in {spec.name, spec.keyword, *([spec.off] if spec.off else [])}:
                if seen.setdefault(spelling, spec.dotted) != spec.dotted:
                    raise ConfigError(f"option name {spelling!r} is declared twice ({seen[spelling]}, {spec.dotted})")

    def __repr__(self) -> str:
        return f"Options({', '.join(s.name for s in self.sections)})"

    def on(self, surface: Surface) -> list[OptionSpec]:
        return [s for s in self.specs if s.on(surface)]

    # --- CLI -------------------------------------------------------------------------------------

    def add_flags(self, parser: argparse.ArgumentParser, *, exclude: Iterable[str] = ()) -> None:
        """One flag per option (``dest`` is the option's name; not given: None)."""
        skipped = set(exclude)
        for spec in self.on("cli"):
            if spec.name not in skipped:
                parser.add_argument(spec.flag, dest=spec.name, help=spec.flag_help, **_argparse_kind(spec))

    def from_args(self, args: argparse.Namespace, origin: str = "command-line option") -> Given:
        values: dict[str, Any] = {}
        for spec in self.on("cli"):
            value = getattr(args, spec.name, None)
            if value is not None:
                values[spec.name] = value
        return Given(values, {s.name: s.flag for s in self.specs}, origin)

    # --- HTTP ------------------------------------------------------------------------------------

    def body(self, base: type[BaseModel], name: str | None = None) -> type[BaseModel]:
        """``base`` (the request's own fields and validators) plus one optional field per option,
        aliased camelCase (snake_case accepted too), described from the section."""
        fields: dict[str, Any] = {}
        for spec in self.on("http"):
            fields[spec.name] = (_http_kind(spec.kind) | None, Field(None, alias=spec.json, description=spec.help))
            if spec.off:
                negated = f"Set to true to turn {spec.name} off (same as {spec.json}: false)."
                fields[spec.off] = (bool | None, Field(None, alias=camel(spec.off), description=negated))
        model: type[BaseModel] = create_model(
            name or base.__name__, __base__=base, __module__=base.__module__, **fields
        )
        return model

    def from_body(self, body: BaseModel, origin: str = "request field") -> Given:
        values: dict[str, Any] = {}
        spelt: dict[str, str] = {}
        for spec in self.on("http"):
            value = getattr(body, spec.name, None)
            spelt[spec.name] = spec.json
            if spec.off and getattr(body, spec.off, None) is not None:
                off = getattr(body, spec.off)
                if value is not None and value == off:
                    raise ConfigError(f"{origin}s '{spec.json}' and '{camel(spec.off)}' contradict each other")
                value, spelt[spec.name] = not off, camel(spec.off)
            if value is not None:
                values[spec.name] = value
        return Given(values, spelt, origin)

    # --- Python keywords -------------------------------------------------------------------------

    def keywords(self) -> list[str]:
        found = []
        for spec in self.on("python"):
            found.append(spec.keyword)
            if spec.off:
                found.append(spec.off)
        return found

    def from_keywords(self, keywords: Mapping[str, Any], origin: str = "argument") -> Given:
        """``keywords`` of a Python call; an unknown one is a TypeError naming the known ones."""
        by_keyword = {s.keyword: s for s in self.on("python")}
        by_off = {s.off: s for s in self.on("python") if s.off}
        values: dict[str, Any] = {}
        spelt: dict[str, str] = {}
        for keyword, value in keywords.items():
            spec = by_keyword.get(keyword) or by_off.get(keyword)
            if spec is None:
                raise TypeError(f"unexpected keyword argument {keyword!r}; options: {', '.join(self.keywords())}")
            if value is None:
                continue
            if spec.off == keyword:
                value = not value
            values[spec.name] = value
            spelt[spec.name] = keyword
        return Given(values, spelt, origin)

    # --- applying --------------------------------------------------------------------------------

    def apply(self, settings: Settings, given: Given) -> Settings:
        """``settings`` with the caller's options on top; a bad value is a ConfigError naming the
        option as the caller spelt it."""
        values = dict(given.values)
        if self.complete is not None:
            values = {**self.complete(values), **values}
        tree: dict[str, dict[str, Any]] = {}
        names: dict[str, str] = {}
        by_name = {s.name: s for s in self.specs}
        for name, value in values.items():
            spec = by_name[name]
            spelling = given.spelt.get(name, spec.name)
            for key, item in self._expanded(settings, spec, value, f"{given.origin} '{spelling}'").items():
                tree.setdefault(spec.section.name, {})[key] = item
                names[f"{spec.section.name}.{key}"] = spelling
        if not tree:
            return settings
        return settings.updated(tree, origin=given.origin, names=names)

    def sections_of(self, settings: Settings, given: Given) -> tuple[Section, ...]:
        """Each of the system's sections with the caller's options applied (what its protocol receives)."""
        applied = self.apply(settings, given)
        return tuple(applied.section(cls) for cls in self.sections)

    def section(self, cls: type[S], settings: Settings, given: Given) -> S:
        return self.apply(settings, given).section(cls)

    @staticmethod
    def _expanded(settings: Settings, spec: OptionSpec, value: Any, who: str) -> dict[str, Any]:
        if isinstance(spec.marker, Shorthand):
            if not isinstance(value, str):
                raise ConfigError(f"{who}: expected text such as {spec.marker.metavar}, got {value!r}")
            try:
                return spec.marker.expand(value)
            except ValueError as exc:
                raise ConfigError(f"{who}: {value!r} {exc}") from None
        if spec.marker.extend:
            configured = getattr(settings.section(spec.section), spec.field)
            return {spec.field: [*configured, *value]}
        return {spec.field: value}


def _http_kind(kind: Any) -> Any:
    """JSON carries text for paths; other kinds as declared."""
    return str if kind is Path or (isinstance(kind, type) and issubclass(kind, Path)) else kind


def _argparse_kind(spec: OptionSpec) -> dict[str, Any]:
    kind = spec.kind
    marker = spec.marker
    metavar = marker.metavar if isinstance(marker, (Option, Shorthand)) else None
    if kind is bool:
        if spec.off:
            return {"action": "store_false", "default": None}
        return {"action": "store_true", "default": None}
    if isinstance(marker, Option) and marker.extend:
        (item,) = get_args(kind) or (str,)
        # SUPPRESS: a subcommand's flag must not reset what the same flag before the subcommand gave
        return {
            "action": "append",
            "type": _callable(_without_none(item)),
            "metavar": metavar or "VALUE",
            "default": argparse.SUPPRESS,
        }
    if get_origin(kind) is Literal:
        return {"choices": list(get_args(kind))}
    return {"type": _callable(kind), "metavar": metavar or spec.name.upper()}


def _callable(kind: Any) -> Callable[[str], Any]:
    origin = get_origin(kind)
    if origin is not None and origin is not Literal:  # Annotated[Path, ...] and the like
        args = get_args(kind)
        return _callable(args[0]) if args else str
    return kind if kind in (int, float, str) or (isinstance(kind, type) and issubclass(kind, Path)) else str


__all__ = [
    "SURFACES",
    "Given",
    "Option",
    "OptionSpec",
    "Options",
    "Shorthand",
    "Surface",
    "camel",
    "declared",
    "kebab",
]
