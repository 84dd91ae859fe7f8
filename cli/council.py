"""``magi ask`` (the MAGI council decides) and the commands plugins add (``magi spec`` from sdd).

Exit codes of ``magi ask``: 0 APPROVE, 1 DENY, 3 CONDITIONAL, 4 no decision (quorum lost), 2 bad
input or settings (as for every magi command). With ``--runs K``, the code of the outcome more than
half of the runs reached (a split 3, like one split deliberation), else 4: no majority is no decision.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cli.common import emit, settings_from
from core.errors import ConfigError, InputError
from core.files import MAX_INPUT_BYTES, read_input_text
from core.messages import catalogue
from magi.events import CouncilDecided, CouncilEvent, PhaseStarted, SageAnswered


def _add_council_options(parser: argparse.ArgumentParser, *, exclude: tuple[str, ...] = ()) -> None:
    """The council's options (derived from its settings section), per-sage models and how to run."""
    from magi.settings import COUNCIL_OPTIONS

    COUNCIL_OPTIONS.add_flags(parser, exclude=exclude)
    for sage in ("melchior", "balthasar", "casper"):
        parser.add_argument(f"--model-{sage}", metavar="MODEL", help=f"model of {sage.upper()} (llm.models)")
    parser.add_argument("--address", help="Ray cluster address (default: $RAY_ADDRESS, else a local Ray)")
    parser.add_argument("--in-process", action="store_true", help="run the sages in this process, without Ray")
    parser.add_argument("--no-progress", action="store_true", help="do not report progress on stderr")


class CouncilProgress:
    """Progress of a deliberation as short lines on stderr (only on a terminal, unless disabled)."""

    def __init__(self, enabled: bool) -> None:
        from rich.console import Console

        self.console = Console(stderr=True, highlight=False) if enabled else None

    def __call__(self, event: CouncilEvent) -> None:
        if self.console is None:
            return
        from cli.language import say

        if isinstance(event, PhaseStarted):
            phase = f"council.phase_{event.phase}"
            known = phase in catalogue("cli").messages
            where = say("council.round", n=event.round) if event.round else say(phase) if known else event.phase
            self.console.print(f"[bold]▶ {where}[/bold]")
        elif isinstance(event, SageAnswered):
            mark = "[green]✓[/green]" if event.ok else f"[red]✗ {say('council.failed')}[/red]"
            self.console.print(f"  {event.sage.upper()} {mark}")
        elif isinstance(event, CouncilDecided):
            verdict = f"verdict.{event.decision}"
            said = say(verdict) if verdict in catalogue("cli").messages else event.decision
            self.console.print(f"[bold]{say('council.decision', decision=said)}[/bold]")


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser], shared: argparse.ArgumentParser) -> None:
    parser = commands.add_parser(
        "ask",
        parents=[shared],
        help="ask the MAGI council (three sages) to decide",
        description="Three sages think (blind vote), debate and vote. Exit: 0 APPROVE, 1 DENY, 3 CONDITIONAL, "
        "4 no decision, 2 bad input.",
    )
    parser.add_argument("prompt", nargs="?", help="the request to decide on; '-' reads it from stdin")
    parser.add_argument("--file", type=Path, metavar="FILE", help="read the request from FILE")
    _add_council_options(parser)
    parser.set_defaults(handler=run_ask)


def preparse_plugins(argv: Sequence[str] | None) -> tuple[str | None, list[Path]]:
    """(--config, --plugin files) from the raw arguments, before the full parser exists."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--config")
    pre.add_argument("--plugin", action="append", type=Path, default=[])
    known, _ = pre.parse_known_args(list(sys.argv[1:] if argv is None else argv))
    return known.config, list(known.plugin)


def register_plugins(
    commands: argparse._SubParsersAction[Any],
    shared: argparse.ArgumentParser,
    argv: Sequence[str] | None,
) -> None:
    """Add the loaded plugins' commands; a plugin that does not load adds none (the error shows on use)."""
    from core.errors import MagiError
    from core.settings import load_settings
    from magi.plugins import load_plugins
    from magi.settings import CouncilSettings

    config, extra = preparse_plugins(argv)
    try:
        plugins = load_plugins(CouncilSettings.of(load_settings(config)), extra)
    except MagiError:
        return
    for plugin in plugins:
        for command in plugin.commands:
            parser = commands.add_parser(
                command.name, parents=[shared], help=f"{command.help} (plugin {plugin.name})", description=command.help
            )
            parser.add_argument("request", help="what to build; '-' reads it from stdin")
            parser.add_argument("--dir", type=Path, default=Path("."), help="the project folder (default: here)")
            parser.add_argument("--feature", help="feature folder name under .kiro/specs (default: from the request)")
            _add_council_options(parser, exclude=("runs",))
            parser.set_defaults(handler=_plugin_handler(command.action, plugin.name))


def _plugin_handler(action: str, plugin: str) -> Any:
    def handler(args: argparse.Namespace) -> int:
        return asyncio.run(plugin_command(args, action, plugin))

    return handler


async def plugin_command(args: argparse.Namespace, action: str, plugin_name: str) -> int:
    """Run a plugin command's workflow (e.g. ``magi spec``) with the council's settings and runtime."""
    from magi.api import check_llm
    from magi.plugins import ACTIONS, find_plugin, load_plugins
    from magi.question import clean_question
    from magi.settings import CouncilSettings

    settings = council_settings(args)
    cfg = CouncilSettings.of(settings)
    raw = sys.stdin.read(MAX_INPUT_BYTES) if args.request == "-" else str(args.request)
    request = clean_question(raw, max_chars=cfg.max_prompt_chars, where="the request")
    plugin = find_plugin(load_plugins(cfg), plugin_name)
    if plugin is None:
        raise ConfigError(f"plugin {plugin_name!r} is not loaded (disabled in council.disabled_plugins?)")
    check_llm(settings.llm, f"magi {args.command}")
    module, _, function = ACTIONS[action].partition(":")
    workflow = getattr(importlib.import_module(module), function)
    if args.in_process:
        from core.runtime import InProcessRuntime

        result = await workflow(request, settings, InProcessRuntime(), plugin, workdir=args.dir, feature=args.feature)
    else:
        from core.runtime import ray_runtime

        async with ray_runtime(settings, address=args.address) as runtime:
            result = await workflow(request, settings, runtime, plugin, workdir=args.dir, feature=args.feature)
    emit(settings, result.model_dump(mode="json", by_alias=True), result.markdown())
    return int(result.exit_code)


def read_prompt(args: argparse.Namespace) -> str:
    """The request from the argument, stdin (``-``) or ``--file``: exactly one of them."""
    given = [x for x in (args.prompt, args.file) if x is not None]
    if len(given) != 1:
        raise InputError("give the request once: as an argument, '-' to read stdin, or --file FILE")
    if args.file is not None:
        return read_input_text(Path(args.file), "request file")
    if args.prompt == "-":
        return sys.stdin.read(MAX_INPUT_BYTES)
    return str(args.prompt)


def council_settings(args: argparse.Namespace) -> Any:
    """The settings with the command's council options and per-sage models on top."""
    from magi.settings import COUNCIL_OPTIONS

    settings = COUNCIL_OPTIONS.apply(settings_from(args), COUNCIL_OPTIONS.from_args(args))
    models = {f"magi.{s}": m for s in ("melchior", "balthasar", "casper") if (m := getattr(args, f"model_{s}", None))}
    if models:
        names = {"llm.models": "--model-<sage>"}
        settings = settings.updated(
            {"llm": {"models": {**settings.llm.models, **models}}}, origin="command-line option", names=names
        )
    return settings


def run_ask(args: argparse.Namespace) -> int:
    return asyncio.run(ask_command(args))


async def ask_command(args: argparse.Namespace) -> int:
    from magi.api import ask, check_llm
    from magi.output import RunsReport, runs_markdown, to_json, to_markdown
    from magi.plugins import load_plugins, overrides_for
    from magi.question import clean_question
    from magi.settings import CouncilSettings

    settings = council_settings(args)
    cfg = CouncilSettings.of(settings)
    question = clean_question(read_prompt(args), max_chars=cfg.max_prompt_chars)
    plugins = load_plugins(cfg)
    check_llm(settings.llm, "magi ask")  # before any work (exit 2)
    overrides = overrides_for(plugins)
    progress = CouncilProgress(enabled=not args.no_progress and sys.stderr.isatty())
    if args.in_process:
        from core.runtime import InProcessRuntime

        result = await ask(question, settings, InProcessRuntime(), overrides=overrides, on_event=progress)
    else:
        from core.runtime import ray_runtime

        async with ray_runtime(settings, address=args.address) as runtime:
            result = await ask(question, settings, runtime, overrides=overrides, on_event=progress)
    markdown = runs_markdown(result) if isinstance(result, RunsReport) else to_markdown(result)
    keep(settings, result)
    emit(settings, to_json(result), markdown)
    return result.exit_code


def keep(settings: Any, result: Any) -> None:
    """Keep the answer for ``magi history council``; a store that cannot be written costs the history
    entry only (said on stderr), never the answer."""
    from cli.language import say
    from core.errors import MagiError
    from magi.history import remember  # before the store opens: it registers its table
    from sessions.ids import LOCAL_OWNER

    try:
        from core.store import open_store

        remember(open_store(settings), LOCAL_OWNER, result)
    except MagiError as exc:
        sys.stderr.write(say("history.not_kept", reason=str(exc)) + "\n")


__all__ = [
    "CouncilProgress",
    "ask_command",
    "council_settings",
    "keep",
    "plugin_command",
    "preparse_plugins",
    "read_prompt",
    "register",
    "register_plugins",
    "run_ask",
]
