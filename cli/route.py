"""``magi route "QUERY" [--session ID]`` and ``magi route --batch FILE.jsonl``: the Engineer Cafe router.

Runs without Ray: the pure router, and for sessions the same session host as the Serve app's
replicas (``sessions/gateway.py``), in this process, on the same store. A batch file holds lines of
``{"query", "sessionId"}``, routed in order so follow-ups inherit their session's context; each gives
one RouteResult JSON line (the spec's camelCase keys). Bad input (a malformed line, a bad session id,
a query too long) is reported with its file and line before anything is routed, exit code 2.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from cli.common import emit, settings_from
from router.settings import ROUTER_OPTIONS

if TYPE_CHECKING:
    from core.settings import Settings
    from router.conversation import TurnOutcome
    from router.models import RouteRequest


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser], shared: argparse.ArgumentParser) -> None:
    parser = commands.add_parser(
        "route",
        parents=[shared],
        help="route an Engineer Cafe query to the agent that should answer it",
        description="Route QUERY (or every line of --batch FILE) and print the RouteResult.",
    )
    parser.add_argument("query", nargs="?", help="the visitor's question, in Japanese or English")
    parser.add_argument("--session", metavar="ID", help="session id: follow-ups inherit its context (stored)")
    parser.add_argument("--batch", metavar="FILE", type=Path, help='JSON Lines of {"query", "sessionId"}')
    ROUTER_OPTIONS.add_flags(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from core.errors import InputError
    from router.conversation import check_query, shared_router
    from router.markdown import route_markdown
    from router.settings import RouterSettings
    from sessions.ids import validate_session_id

    if (args.query is None) == (args.batch is None):
        raise InputError('give either a QUERY or --batch FILE (e.g. magi route "営業時間は？")')
    settings = ROUTER_OPTIONS.apply(settings_from(args), ROUTER_OPTIONS.from_args(args))
    section = RouterSettings.of(settings)

    if args.batch is not None:
        requests = _read_batch(args.batch, section.max_query_chars)
        for outcome in asyncio.run(_turns(settings, [(r.session_id, r.query) for r in requests])):
            sys.stdout.write(outcome.result.model_dump_json(by_alias=True) + "\n")
        return 0

    query = check_query(args.query, section.max_query_chars)
    if args.session is not None:
        session_id = validate_session_id(args.session, "--session")
        result = asyncio.run(_turns(settings, [(session_id, query)]))[0].result
    else:
        result = shared_router(section.confidence_threshold).route(query)
    body = result.model_dump(mode="json", by_alias=True)
    emit(
        settings,
        body,
        route_markdown(query, result),
    )
    return 0


async def _turns(settings: Settings, messages: list[tuple[str, str]]) -> list[TurnOutcome]:
    """Each (session id, query) routed in order as a turn of its session, hosted in this process."""
    from core.store import open_store
    from router.conversation import SESSION_NAMESPACE, Turn
    from router.settings import RouterSettings
    from sessions.gateway import SessionHost
    from sessions.ids import LOCAL_OWNER, session_key
    from sessions.store import SessionRepository

    section = RouterSettings.of(settings)
    policy = section.session_policy()
    host = SessionHost(SessionRepository(open_store(settings)), policy)
    outcomes = []
    for session_id, query in messages:
        turn = Turn(query, section.confidence_threshold, policy)
        outcomes.append(await host.update(session_key(SESSION_NAMESPACE, LOCAL_OWNER, session_id), LOCAL_OWNER, turn))
    return outcomes


def _read_batch(path: Path, max_chars: int) -> list[RouteRequest]:
    from core.errors import InputError
    from core.files import read_input_text
    from core.validation import load_json
    from router.conversation import check_query
    from router.models import RouteRequest
    from sessions.ids import validate_session_id

    text = read_input_text(path, "batch file")
    requests = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        raw = load_json(line, where, 'one object per line, {"query": ..., "sessionId": ...}')
        if not isinstance(raw, dict) or set(raw) - {"query", "sessionId"} or "query" not in raw:
            raise InputError(f'{where}: expected an object with "query" and "sessionId" (nothing else)')
        if "sessionId" not in raw:
            raise InputError(f"{where}: sessionId is missing")
        requests.append(
            RouteRequest(
                query=check_query(raw["query"], max_chars),
                session_id=validate_session_id(raw["sessionId"], f"{where}: sessionId"),
            )
        )
    if not requests:
        raise InputError(f"batch file {path} has no lines to route")
    return requests


__all__ = ["register", "run"]
