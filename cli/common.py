"""Options every command shares (``--format``, ``--config``) and how results are printed."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, get_args

from core.settings import Settings, load_settings
from core.telemetry.settings import LoggingSettings


def shared_options() -> argparse.ArgumentParser:
    """Parent parser: accepted before or after the subcommand without clobbering each other."""
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument(
        "--format",
        choices=["json", "markdown"],
        default=argparse.SUPPRESS,
        help="output format (default: markdown, or output_format in magi.yaml)",
    )
    parent.add_argument(
        "--config",
        metavar="FILE",
        default=argparse.SUPPRESS,
        help="settings file (default: $MAGI_CONFIG or ./magi.yaml)",
    )
    log_format = LoggingSettings.model_fields["format"]
    parent.add_argument(
        "--log-format",
        choices=list(get_args(log_format.annotation)),
        default=argparse.SUPPRESS,
        help=f"log lines on stderr: {log_format.description} (default: logging.format in magi.yaml, text)",
    )
    parent.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=argparse.SUPPRESS,
        help="log details to stderr; show tracebacks of internal errors",
    )
    return parent


def settings_from(args: argparse.Namespace) -> Settings:
    """Effective settings: file < environment < ``--format`` (a command applies its own options after)."""
    overrides = {
        "output_format": getattr(args, "format", None),
        "logging": {"format": getattr(args, "log_format", None)},
    }
    return load_settings(getattr(args, "config", None), overrides, origin="command-line flag")


def emit(settings: Settings, data: dict[str, Any], markdown: str) -> None:
    """Print the command's result to stdout in the chosen format."""
    if settings.output_format == "json":
        sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")
    else:
        sys.stdout.write(markdown.rstrip() + "\n")


__all__ = [
    "emit",
    "settings_from",
    "shared_options",
]
