"""An option is declared once: every system's CLI flags, HTTP body fields and Python keywords are its
settings section's options, and a bad value names the option as the caller spelt it."""

from __future__ import annotations

import argparse
import asyncio
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, ClassVar

import pytest
from pydantic import BaseModel, ConfigDict, Field

from core.errors import ConfigError
from core.options import Option, Options, OptionSpec, Shorthand
from core.settings import Section, load_settings


def _systems() -> list[tuple[str, Options, str, Callable[[], type[BaseModel]], Callable[..., Any] | None]]:
    """(system, its options, its CLI command, its HTTP body model, its Python API taking option keywords)."""
    from advisor.settings import ADVISOR_OPTIONS
    from critic.api import acritique
    from critic.settings import CRITIC_OPTIONS
    from magi.api import ask
    from magi.settings import COUNCIL_OPTIONS
    from research.api import aresearch
    from research.settings import RESEARCH_OPTIONS
    from router.api import route
    from router.settings import ROUTER_OPTIONS

    def body(module: str, name: str) -> Callable[[], type[BaseModel]]:
        return lambda: getattr(__import__(f"deployments.{module}", fromlist=[name]), name)  # type: ignore[no-any-return]

    return [
        ("research", RESEARCH_OPTIONS, "research", body("research", "ResearchRequest"), aresearch),
        ("council", COUNCIL_OPTIONS, "ask", body("magi", "AskRequest"), ask),
        ("critic", CRITIC_OPTIONS, "critic", body("critic", "CriticRequest"), acritique),
        ("router", ROUTER_OPTIONS, "route", body("router", "RouteBody"), route),
        ("advisor", ADVISOR_OPTIONS, "advisor", body("advisor", "ChatBody"), None),
    ]


SYSTEMS = _systems()
IDS = [s[0] for s in SYSTEMS]


def subcommand(name: str) -> argparse.ArgumentParser:
    from cli.main import build_parser

    parser = build_parser(["--help"])
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found: argparse.ArgumentParser = commands.choices[name]
    return found


def flags_of(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {flag: action for action in parser._actions for flag in action.option_strings}


@pytest.mark.parametrize(("system", "options", "command", "body", "api"), SYSTEMS, ids=IDS)
def test_every_cli_flag_is_the_sections_option(
    system: str, options: Options, command: str, body: Any, api: Any
) -> None:
    flags = flags_of(subcommand(command))
    assert options.on("cli"), f"{system} declares no option"
    for spec in options.on("cli"):
        action = flags[spec.flag]
        assert action.dest == spec.name and action.help == spec.flag_help
        if spec.info is not None:
            assert spec.info.description and spec.info.description in spec.help  # the help is the section's


@pytest.mark.parametrize(("system", "options", "command", "body", "api"), SYSTEMS, ids=IDS)
def test_every_http_field_is_the_sections_option(
    system: str, options: Options, command: str, body: Any, api: Any
) -> None:
    model = body()
    aliases = {f.alias or name: name for name, f in model.model_fields.items()}
    for spec in options.on("http"):
        assert aliases[spec.json] == spec.name
        assert model.model_fields[spec.name].description == spec.help
        if spec.off:
            assert spec.off in model.model_fields
    # the request's own fields (topic, prompt, ideas ...), declared in the base model: no option among them
    base = [c for c in model.__mro__ if issubclass(c, BaseModel) and c is not BaseModel][-1]
    assert not {s.name for s in options.specs} & set(base.model_fields)


@pytest.mark.parametrize(("system", "options", "command", "body", "api"), SYSTEMS, ids=IDS)
def test_every_python_keyword_is_the_sections_option(
    system: str, options: Options, command: str, body: Any, api: Any
) -> None:
    expected = [s.keyword for s in options.on("python")] + [s.off for s in options.on("python") if s.off]
    assert sorted(options.keywords()) == sorted(expected)
    if api is None:  # the advisor's Python entry is Orchestrator.turn(section=...): options via from_keywords
        return
    assert any(p.kind is inspect.Parameter.VAR_KEYWORD for p in inspect.signature(api).parameters.values())
    spec = next(s for s in options.on("python") if s.info is not None and s.kind in (int, float))
    too_big = 10**9  # above every bound: the option's own error, before any work
    args: tuple[Any, ...] = {"council": ("x", load_settings(), None), "critic": (_required("critic"),)}.get(
        system, ("x",)
    )
    with pytest.raises(ConfigError, match=rf"{spec.dotted} from argument '{spec.keyword}'"):
        result = api(*args, **{spec.keyword: too_big})
        if inspect.iscoroutine(result):
            asyncio.run(result)
    with pytest.raises(TypeError, match="unexpected keyword argument 'no_such_option'"):
        result = api(*args, no_such_option=1)
        if inspect.iscoroutine(result):
            asyncio.run(result)


@pytest.mark.parametrize(("system", "options", "command", "body", "api"), SYSTEMS, ids=IDS)
def test_each_surface_names_the_option_as_the_caller_spelt_it(
    system: str, options: Options, command: str, body: Any, api: Any
) -> None:
    spec = next(s for s in options.specs if s.info is not None and s.kind in (int, float))
    too_big = 10**9
    parser = argparse.ArgumentParser()
    options.add_flags(parser)
    from_flag = options.from_args(parser.parse_args([spec.flag, str(too_big)]))
    from_field = options.from_body(body().model_validate({**_required(system), spec.json: too_big}))
    from_keyword = options.from_keywords({spec.keyword: too_big})
    for given, shown in (
        (from_flag, f"command-line option '{spec.flag}'"),
        (from_field, f"request field '{spec.json}'"),
        (from_keyword, f"argument '{spec.keyword}'"),
    ):
        with pytest.raises(ConfigError, match=f"{spec.dotted} from {shown}"):
            options.apply(load_settings(), given)


def _required(system: str) -> dict[str, Any]:
    return {
        "research": {"topic": "価格転嫁"},
        "council": {"prompt": "Go?"},
        "critic": {"ideas": [{"id": "a", "title": "t", "description": "d"}]},
        "router": {"query": "q", "sessionId": "s1"},
        "advisor": {"message": "m"},
    }[system]


def test_option_names_are_unique_across_every_system() -> None:
    for system, options, *_ in SYSTEMS:
        names = [s.name for s in options.specs]
        assert len(names) == len(set(names)), system


# --- a new option appears on every surface by itself ------------------------------------------------


class DemoSettings(Section):
    name: ClassVar[str] = "demo"
    shorthands: ClassVar[tuple[Shorthand, ...]] = (
        Shorthand("size", lambda text: {"width": int(text.split("x")[0]), "height": int(text.split("x")[1])}, "WxH"),
    )

    width: Annotated[int, Option(metavar="N")] = Field(3, ge=1, le=9, description="How wide.")
    height: Annotated[int, Option()] = Field(3, ge=1, le=9, description="How high.")
    timeout_s: Annotated[float, Option("timeout", keyword="timeout_s")] = Field(5.0, gt=0, description="Patience.")
    colour: Annotated[bool, Option(off="no-colour")] = Field(True, description="Paint it.")
    secret_path: Annotated[Path | None, Option(on=("cli",))] = Field(None, description="A server file.")
    quiet: bool = Field(False, description="Not an option: set in magi.yaml only.")


class DemoBody(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)

    text: str


def test_a_new_option_appears_as_flag_field_and_keyword_by_itself() -> None:
    options = Options(DemoSettings)
    parser = argparse.ArgumentParser()
    options.add_flags(parser)
    flags = flags_of(parser)
    assert {"--width", "--height", "--timeout", "--no-colour", "--secret-path", "--size"} <= set(flags)
    assert "--quiet" not in flags and flags["--width"].help == "How wide. (default: 3)"
    model = options.body(DemoBody)
    assert set(model.model_fields) == {"text", "width", "height", "timeout", "colour", "no_colour", "size"}
    assert "secret_path" not in model.model_fields  # declared CLI-only
    assert sorted(options.keywords()) == ["colour", "height", "no_colour", "size", "timeout_s", "width"]

    args = parser.parse_args(["--width", "4", "--no-colour", "--timeout", "2.5"])
    assert options.from_args(args).values == {"width": 4, "timeout": 2.5, "colour": False}
    body = model.model_validate({"text": "t", "noColour": True, "height": 2})
    assert options.from_body(body).values == {"height": 2, "colour": False}
    assert options.from_keywords({"timeout_s": 1, "no_colour": False}).values == {"timeout": 1, "colour": True}


def test_a_shorthand_and_a_contradiction_are_reported_as_spelt() -> None:
    from core.options import Given

    options = Options(DemoSettings)
    with pytest.raises(ConfigError, match=r"request field 'size': 'big' .*invalid literal"):
        options._expanded(load_settings(), _spec(options, "size"), "big", "request field 'size'")
    model = options.body(DemoBody)
    with pytest.raises(ConfigError, match="'colour' and 'noColour' contradict"):
        options.from_body(model.model_validate({"text": "t", "colour": True, "noColour": True}))
    assert isinstance(options.from_keywords({}), Given)


def _spec(options: Options, name: str) -> OptionSpec:
    return next(s for s in options.specs if s.name == name)


def test_a_name_declared_twice_is_refused() -> None:
    class Clash(Section):
        name: ClassVar[str] = "clash"
        width: Annotated[int, Option()] = 1

    with pytest.raises(ConfigError, match="option name 'width' is declared twice"):
        Options(DemoSettings, Clash)


def test_critic_weights_shorthand_and_one_weight_alone() -> None:
    from critic.settings import CRITIC_OPTIONS, CriticSettings

    def section(given: dict[str, Any]) -> CriticSettings:
        return CRITIC_OPTIONS.section(CriticSettings, load_settings(), CRITIC_OPTIONS.from_keywords(given))

    assert (section({"weights": "60:40"}).market_weight, section({"weights": "60:40"}).synergy_weight) == (60, 40)
    assert section({"market_weight": 70}).synergy_weight == 30
    assert section({"use_cache": False}).cache is False and section({"no_cache": True}).cache is False
    with pytest.raises(ConfigError, match=r"argument 'weights': '70:40' has market and synergy weights"):
        section({"weights": "70:40"})


def test_the_council_plugin_flag_adds_to_the_configured_plugins(tmp_path: Path) -> None:
    from magi.settings import COUNCIL_OPTIONS, CouncilSettings

    config = tmp_path / "m.yaml"
    config.write_text(f"council:\n  plugins: [{tmp_path / 'a.yaml'}]\n", encoding="utf-8")
    parser = argparse.ArgumentParser()
    COUNCIL_OPTIONS.add_flags(parser)
    given = COUNCIL_OPTIONS.from_args(parser.parse_args(["--plugin", str(tmp_path / "b.yaml")]))
    council = COUNCIL_OPTIONS.section(CouncilSettings, load_settings(config), given)
    assert [p.name for p in council.plugins] == ["a.yaml", "b.yaml"]
