"""``magi tool NAME --input FILE.json [--session ID] [--format json]``: one advisor tool on its own;
``magi tool NAME --schema`` prints the tool's input fields (its JSON schema).

The input file holds the tool's JSON input (the same as the tool loop and ``POST /advisor/tools/NAME``
take). Bad JSON or an input that does not validate exits 2 naming the field. With ``--session`` the
run is recorded in that advisor session (the one ``magi advisor --session ID`` continues): the tool
sees the session's earlier results and its result is kept for later ones. Without it, files go to
the artifact store under ``advisor/cli/`` and nothing is recorded; their paths are printed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cli.common import emit, settings_from
from cli.language import say

if TYPE_CHECKING:
    from pydantic import BaseModel

    from core.llm.base import LLMClient
    from core.settings import Settings


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser], shared: argparse.ArgumentParser) -> None:
    from advisor.tools import REGISTRY

    parser = commands.add_parser(
        "tool",
        parents=[shared],
        help="run one price pass-through advisor tool (calculate_cost_impact, generate_chart, ...)",
        description="Run the advisor tool NAME on the JSON input in FILE and print its output.",
    )
    parser.add_argument("name", choices=list(REGISTRY), metavar="NAME", help="one of: " + ", ".join(REGISTRY))
    parser.add_argument("--input", type=Path, metavar="FILE.json", help="the tool's input as JSON")
    parser.add_argument("--schema", action="store_true", help="print the tool's input fields (JSON schema) and exit")
    parser.add_argument("--session", metavar="ID", help="record the run in this advisor session")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from advisor.settings import LLM_ROLES
    from advisor.tools import REGISTRY, get_tool, validate_input
    from core.errors import InputError
    from core.files import read_input_text
    from core.llm.factory import make_llm
    from core.validation import load_json
    from sessions.ids import validate_session_id

    settings = settings_from(args)
    tool = get_tool(args.name)
    if args.schema:
        schema = tool.input_model.model_json_schema()
        emit(settings, schema, json.dumps(schema, ensure_ascii=False, indent=2))
        return 0
    if args.input is None:
        raise InputError(f"magi tool {args.name}: give --input FILE.json (see its fields with --schema)")
    raw = load_json(
        read_input_text(args.input, "--input"), f"--input {args.input}", "a JSON object of the tool's fields"
    )
    if not isinstance(raw, dict):
        raise InputError(f"--input {args.input}: expected a JSON object of the tool's fields, got {type(raw).__name__}")
    data = validate_input(REGISTRY[args.name], raw)
    llm = make_llm(settings.llm, LLM_ROLES[-1])  # the tools run in the advisor's specialist mode
    if args.session is not None:
        result = asyncio.run(_recorded(settings, validate_session_id(args.session, "--session"), args.name, data, llm))
    else:
        result = asyncio.run(_standalone(settings, args.name, data, llm))
    files = result.get("files") or []
    lines = [f"# {args.name}", "", "```json", json.dumps(result, ensure_ascii=False, indent=2), "```"]
    if files:
        lines += ["", say("tool.files"), *(f"- {f['url']}" for f in files)]
    emit(settings, result, "\n".join(lines))
    return 0


async def _standalone(settings: Settings, name: str, data: BaseModel, llm: LLMClient | None) -> dict[str, Any]:
    from advisor.tools import REGISTRY, dump
    from advisor.tools.base import ToolContext

    return dump(await REGISTRY[name].run(data, ToolContext(settings, session_id="cli", llm=llm)))


async def _recorded(
    settings: Settings, session: str, name: str, data: BaseModel, llm: LLMClient | None
) -> dict[str, Any]:
    from advisor.conversation import SESSION_NAMESPACE
    from advisor.recorded import run_in_session
    from advisor.settings import AdvisorSettings
    from core.store import open_store
    from sessions.gateway import SessionHost
    from sessions.ids import LOCAL_OWNER, session_key
    from sessions.store import SessionRepository

    sessions = SessionHost(SessionRepository(open_store(settings)), AdvisorSettings.of(settings).session_policy())
    key = session_key(SESSION_NAMESPACE, LOCAL_OWNER, session)
    return await run_in_session(settings, sessions, key, LOCAL_OWNER, name, data, llm)


__all__ = ["register", "run"]
