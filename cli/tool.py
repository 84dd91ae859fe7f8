"""``magi tool NAME --input FILE.json [--format json]``: one advisor tool on its own.

The input file holds the tool's JSON input (the same as the tool loop and ``POST /advisor/tools/NAME``
take). Bad JSON or an input that does not validate exits 2 naming the field. Files the tool writes go
to the artifact store under ``advisor/<--session or cli>/``; their paths are printed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

from cli.common import emit, settings_from


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser], shared: argparse.ArgumentParser) -> None:
    from advisor.tools import REGISTRY

    parser = commands.add_parser(
        "tool",
        parents=[shared],
        help="run one price pass-through advisor tool (calculate_cost_impact, generate_chart, ...)",
        description="Run the advisor tool NAME on the JSON input in FILE and print its output.",
    )
    parser.add_argument("name", choices=list(REGISTRY), metavar="NAME", help="one of: " + ", ".join(REGISTRY))
    parser.add_argument("--input", required=True, type=Path, metavar="FILE.json", help="the tool's input as JSON")
    parser.add_argument("--session", metavar="ID", default="cli", help="session whose files these are (default: cli)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from advisor.tools import call_tool, dump
    from advisor.tools.base import ToolContext
    from core.errors import InputError
    from core.files import read_input_text
    from core.llm.factory import make_llm
    from core.validation import load_json
    from sessions.ids import validate_session_id

    settings = settings_from(args)
    raw = load_json(
        read_input_text(args.input, "--input"), f"--input {args.input}", "a JSON object of the tool's fields"
    )
    if not isinstance(raw, dict):
        raise InputError(f"--input {args.input}: expected a JSON object of the tool's fields, got {type(raw).__name__}")
    session = validate_session_id(args.session, "--session")
    ctx = ToolContext(settings, session_id=session, llm=make_llm(settings.llm))
    result = dump(asyncio.run(call_tool(args.name, raw, ctx)))
    files = result.get("files") or []
    lines = [f"# {args.name}", "", "```json", json.dumps(result, ensure_ascii=False, indent=2), "```"]
    if files:
        lines += ["", "Files:", *(f"- {f['url']}" for f in files)]
    emit(settings, result, "\n".join(lines))
    return 0


__all__ = ["register", "run"]
