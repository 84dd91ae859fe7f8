"""The ``magi`` entry point. Each system registers its own subcommand in ``COMMANDS``."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from cli import advisor, council, critic, doctor, history, kb, research, route, serve, tool
from cli.common import shared_options
from cli.language import localize, say
from core import __version__
from core.errors import MagiError, first_line
from core.telemetry import configure_tracing, request_scope, setup_logging
from core.telemetry.logs import LogFormat
from core.validation import printable

COMMANDS = (research, doctor, serve, council, critic, route, advisor, tool, kb, history)


class MagiParser(argparse.ArgumentParser):
    """argparse, but an unknown command lists the commands and every error exits 2 on stderr."""

    command_names: Sequence[str] = ()

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        hint = (
            f"\n{say('usage.unknown_command')}: {', '.join(self.command_names)}" if "invalid choice" in message else ""
        )
        self.exit(2, f"{self.prog}: {say('usage.error')}: {message}{hint}\n")


def build_parser(argv: Sequence[str] | None = None) -> MagiParser:
    shared = shared_options()
    parser = MagiParser(
        prog="magi", parents=[shared], description="MAGI Cluster: multi-agent research and decision systems on Ray."
    )
    parser.add_argument("--version", action="version", version=f"magi {__version__}")
    parser.add_argument("--plugin", metavar="FILE", action="append", type=Path, help="load a MAGI plugin (YAML)")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=MagiParser)
    for module in COMMANDS:
        module.register(commands, shared)
    council.register_plugins(commands, shared, argv)  # plugin commands (magi spec ...): known only from argv
    parser.command_names = tuple(commands.choices)
    return localize(parser)


def log_format(args: argparse.Namespace) -> LogFormat:
    """``--log-format``, else ``logging.format`` from the settings (text when they cannot be read yet:
    the command itself will then report what is wrong with them); traces start here when
    ``telemetry.otlp_endpoint`` is set."""
    try:
        from cli.common import settings_from
        from core.telemetry.settings import LoggingSettings, TelemetrySettings

        settings = settings_from(args)
    except MagiError:
        return "json" if getattr(args, "log_format", None) == "json" else "text"
    configure_tracing(TelemetrySettings.of(settings).otlp_endpoint)
    return LoggingSettings.of(settings).format


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    verbose = bool(getattr(args, "verbose", False))
    # Without -v only errors are logged: failures also reach the result, the summary and the bars.
    setup_logging(logging.INFO if verbose else logging.ERROR, log_format(args))
    if not args.command:
        parser.print_help(sys.stderr)
        return 2
    try:
        with request_scope():  # one id for everything the command does, in every actor it calls
            return int(args.handler(args))
    except MagiError as exc:
        sys.stderr.write(f"magi {args.command}: error: {printable(first_line(exc))}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write(f"magi {args.command}: interrupted\n")
        return 130
    except Exception as exc:  # a bug, not a user error: one line by default, the traceback with -v
        if verbose:
            raise
        sys.stderr.write(
            f"magi {args.command}: internal error: {type(exc).__name__}: {first_line(exc)} "
            "(run with -v for the traceback, and please report it)\n"
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())

__all__ = [
    "COMMANDS",
    "MagiParser",
    "build_parser",
    "log_format",
    "main",
]
