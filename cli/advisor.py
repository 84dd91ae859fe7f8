"""``magi advisor "MESSAGE" [--session ID]``: one chat turn of the price pass-through advisor, from the CLI
(sessions hosted in this process by the same code as the Serve app's replicas, on the same store);
``--consent accept|refuse`` answers a pending mode change; ``magi advisor --purge`` removes sessions and
files past the retention."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from advisor.settings import ADVISOR_OPTIONS
from cli.common import emit, settings_from
from cli.language import say


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser], shared: argparse.ArgumentParser) -> None:
    parser = commands.add_parser(
        "advisor",
        parents=[shared],
        help="chat with the price pass-through advisor (one turn)",
        description="One turn of the advisor: MESSAGE, or --consent to answer a mode change; --purge cleans up.",
    )
    parser.add_argument("message", nargs="?", help="what you want to ask (Japanese)")
    parser.add_argument("--session", metavar="ID", default="cli", help="session id (default: cli)")
    parser.add_argument("--consent", choices=["accept", "refuse"], help="answer the pending mode change")
    ADVISOR_OPTIONS.add_flags(parser)
    parser.add_argument("--purge", action="store_true", help="remove sessions and files older than the retention")
    parser.set_defaults(handler=run)


async def _turn(args: argparse.Namespace) -> int:
    from advisor.conversation import SESSION_NAMESPACE
    from advisor.events import AdvisorEvent, AnswerDelta, TurnDone
    from advisor.orchestrator import Orchestrator
    from advisor.settings import AdvisorSettings
    from core.store import open_store
    from sessions.gateway import SessionHost
    from sessions.ids import LOCAL_OWNER, session_key, validate_session_id
    from sessions.store import SessionRepository

    settings = ADVISOR_OPTIONS.apply(settings_from(args), ADVISOR_OPTIONS.from_args(args))
    session = validate_session_id(args.session, "--session")
    orchestrator = Orchestrator(
        settings, SessionHost(SessionRepository(open_store(settings)), AdvisorSettings.of(settings).session_policy())
    )
    done: TurnDone | None = None
    events: list[AdvisorEvent] = []
    key = session_key(SESSION_NAMESPACE, LOCAL_OWNER, session)
    async for event in orchestrator.turn(key, LOCAL_OWNER, args.message, args.consent):
        events.append(event)
        if isinstance(event, AnswerDelta) and settings.output_format != "json":
            sys.stdout.write(event.text)
            sys.stdout.flush()
        elif isinstance(event, TurnDone):
            done = event
    if settings.output_format == "json":
        emit(settings, {"session": session, "events": [e.model_dump(mode="json") for e in events]}, "")
    elif done is not None:
        if done.pending:
            sys.stdout.write(done.text)
            sys.stdout.write("\n\n" + say("advisor.consent_hint"))
        if done.files:
            files = "\n".join(f"- {json.dumps(f['url'])[1:-1]}" for f in done.files)
            sys.stdout.write(f"\n\n{say('advisor.files')}\n{files}")
        sys.stdout.write("\n")
    return 0


def run(args: argparse.Namespace) -> int:
    from core.errors import InputError

    if args.purge:
        from advisor.retention import purge

        settings = settings_from(args)
        report = purge(settings)
        emit(
            settings,
            {"sessions": report.sessions, "files": report.files},
            say("advisor.purged", sessions=len(report.sessions), files=report.files),
        )
        return 0
    if (args.message is None) == (args.consent is None):
        raise InputError('give either a MESSAGE or --consent accept|refuse (e.g. magi advisor "値上げの相談です")')
    return asyncio.run(_turn(args))


__all__ = ["register", "run"]
