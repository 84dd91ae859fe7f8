"""``magi history council|critic [N]``: the past decisions and evaluation runs kept in the store.

Lists this machine's own results (what ``magi ask`` and ``magi critic`` kept, and what a service
without API keys kept for its callers), newest first, numbered from 1; ``N`` reopens the N-th as it was
answered. ``--format json`` gives the records with their ids and the cursor of the next page
(``--cursor``), as ``GET /magi/decisions`` and ``GET /critic/evaluations`` do over HTTP.
"""

from __future__ import annotations

import argparse
from datetime import datetime
from typing import Any

from cli.common import emit, settings_from
from cli.language import say
from core.history import DEFAULT_PAGE, MAX_PAGE, Record, RecordPage
from core.messages import Catalogue, Lang, catalogue, format_number, language_of

SYSTEMS = ("council", "critic")


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser], shared: argparse.ArgumentParser) -> None:
    parser = commands.add_parser(
        "history",
        parents=[shared],
        help="list past council decisions or critic runs, or reopen one",
        description="List the council's decisions or the critic's runs kept here, newest first; N reopens one.",
    )
    parser.add_argument("system", choices=SYSTEMS, help="council (magi ask) or critic (magi critic)")
    parser.add_argument("number", nargs="?", type=int, metavar="N", help="reopen the N-th newest (1 = the newest)")
    parser.add_argument("--limit", type=int, default=DEFAULT_PAGE, help=f"how many to list (1-{MAX_PAGE})")
    parser.add_argument("--cursor", help="continue after a page (its nextCursor in --format json)")
    parser.set_defaults(handler=run)


def _history(system: str, settings: Any) -> Any:
    from core.store import open_store

    if system == "council":
        from magi.history import decisions

        return decisions(open_store(settings))
    from critic.history import runs

    return runs(open_store(settings))


def _when(created_at: str) -> str:
    """The record's time in this machine's time zone, to the minute."""
    return datetime.fromisoformat(created_at).astimezone().strftime("%Y-%m-%d %H:%M")


def _outcome(system: str, record: Record, c: Catalogue, lang: Lang) -> str:
    if system == "council":
        return c.text(f"runs.decision.{record.outcome}", lang)
    if record.outcome == "selected":
        total = record.summary.get("total")
        shown = format_number(float(total), lang, 1) if total is not None else "—"
        return c.text("history.selected", lang, title=record.summary.get("selected") or "", total=shown)
    return c.text("history.none", lang)


def listing(system: str, page: RecordPage, start: int = 1) -> str:
    """The page as a numbered table in the language the records were asked in."""
    c = catalogue("magi" if system == "council" else "critic")
    lang: Lang = language_of(" ".join(r.title for r in page.items))
    lines = [c.text("history.title", lang), ""]
    if not page.items:
        return "\n".join([*lines, c.text("history.empty", lang)]) + "\n"
    lines += [c.text("history.header", lang), "|---|---|---|---|"]
    for n, record in enumerate(page.items, start=start):
        title = record.title.replace("|", "｜")
        lines.append(f"| {n} | {_when(record.created_at)} | {title} | {_outcome(system, record, c, lang)} |")
    lines += ["", c.text("history.reopen", lang)]
    if page.next_cursor:
        lines.append(c.text("history.more", lang))
    return "\n".join(lines) + "\n"


def reopened(system: str, result: dict[str, Any]) -> str:
    """The kept answer rendered as its command printed it."""
    if system == "council":
        from magi.output import RunsReport, from_json, runs_markdown, to_markdown

        kept = from_json(result)
        return runs_markdown(kept) if isinstance(kept, RunsReport) else to_markdown(kept)
    from critic.markdown import critic_markdown
    from critic.models import CriticOutput

    return critic_markdown(CriticOutput.model_validate(result))


def run(args: argparse.Namespace) -> int:
    from core.errors import InputError
    from sessions.ids import LOCAL_OWNER

    settings = settings_from(args)
    history = _history(args.system, settings)
    if args.number is None:
        page = history.page(LOCAL_OWNER, limit=args.limit, cursor=args.cursor)
        emit(settings, page.model_dump(mode="json", by_alias=True), listing(args.system, page))
        return 0
    if not 1 <= args.number <= MAX_PAGE:
        raise InputError(say("history.bad_number", n=args.number, most=MAX_PAGE))
    page = history.page(LOCAL_OWNER, limit=args.number)
    if len(page.items) < args.number:
        raise InputError(say("history.only", kept=len(page.items), system=args.system))
    found = history.get(LOCAL_OWNER, page.items[args.number - 1].id)
    if found is None:  # removed since it was listed
        raise InputError(say("history.gone", n=args.number, system=args.system))
    record, result = found
    data = {"record": record.model_dump(mode="json", by_alias=True), "result": result}
    emit(settings, data, reopened(args.system, result))
    return 0


__all__ = ["listing", "register", "reopened", "run"]
