"""``magi kb ingest DIR [--category C]``: add your own documents (HTML, Markdown, text, PDF) to the
advisor's knowledge base (written to ``advisor.kb_dir``, default ``<data_dir>/advisor/kb``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from cli.common import emit, settings_from
from cli.language import say


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser], shared: argparse.ArgumentParser) -> None:
    parser = commands.add_parser(
        "kb", parents=[shared], help="the advisor's knowledge base", description="Knowledge base."
    )
    actions = parser.add_subparsers(dest="kb_action", required=True, metavar="ACTION")
    ingest = actions.add_parser(
        "ingest", parents=[shared], help="add the documents of DIR", description="Add the documents of DIR."
    )
    ingest.add_argument("folder", type=Path, metavar="DIR")
    ingest.add_argument(
        "--category",
        default="case_study",
        choices=["law", "guideline", "case_study", "calculation_formula"],
        help="category of the added chunks (default: case_study)",
    )
    ingest.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from advisor.kb.ingest import ingest

    settings = settings_from(args)
    report = ingest(settings, args.folder, args.category)
    skipped = ", ".join(f"{k}: {v}" for k, v in sorted(report.skipped.items())) or say("kb.none")
    emit(
        settings,
        {"folder": report.folder, "written": report.written, "chunks": report.chunks, "skipped": report.skipped},
        say("kb.ingested", documents=len(report.written), chunks=report.chunks, folder=report.folder, skipped=skipped),
    )
    return 0


__all__ = ["register", "run"]
