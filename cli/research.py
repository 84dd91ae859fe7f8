"""``magi research TOPIC``: run a consensus research; write report.md, report.json and transparency.{json,md}.

A run that fails part-way writes ``partial.json`` (completed iterations, failed agents) to the same
folder and keeps it with the run record, then exits with the error. The output folder is proved
writable before any research starts; if the reports still cannot be written at the end, the run is
recorded as failed with the reason (its result kept in the store), never as completed.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import uuid
from contextlib import suppress
from pathlib import Path
from typing import Any

from cli.common import emit, settings_from
from research.settings import RESEARCH_OPTIONS


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser], shared: argparse.ArgumentParser) -> None:
    parser = commands.add_parser(
        "research",
        parents=[shared],
        help="run a consensus research on a topic",
        description="Research TOPIC with parallel agents and write a cited report.",
    )
    parser.add_argument("topic", help="what to research, in Japanese or English")
    RESEARCH_OPTIONS.add_flags(parser)
    parser.add_argument("--out", metavar="DIR", type=Path, help="output folder (default: out/research/RUN_ID)")
    parser.add_argument("--address", help="Ray cluster address (default: $RAY_ADDRESS, else a local Ray)")
    parser.add_argument("--no-progress", action="store_true", help="do not draw progress bars")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    return asyncio.run(research(args))


async def research(args: argparse.Namespace) -> int:
    # Heavy imports (Ray, spaCy, trafilatura) only when the command runs: `magi --help` stays instant.
    from cli.progress import ProgressBars
    from core.errors import InputError
    from core.events import FanoutSink, ListSink
    from core.files import ensure_writable_dir
    from core.runtime import ray_runtime
    from core.store import open_store
    from research import runs
    from research.engine import preflight, run_research
    from research.errors import ResearchError
    from research.events import ResearchCompleted
    from research.outputs import write_outputs, write_partial

    settings = RESEARCH_OPTIONS.apply(settings_from(args), RESEARCH_OPTIONS.from_args(args))
    topic = preflight(args.topic, settings)  # a bad corpus or topic fails before Ray starts
    run_id = uuid.uuid4().hex[:12]
    out_dir = args.out or Path("out") / "research" / run_id
    created = ensure_writable_dir(out_dir)  # a folder that cannot take the report fails before any work
    store = open_store(settings)
    events = ListSink()
    with ProgressBars(enabled=not args.no_progress and sys.stderr.isatty()) as bars:
        sink = FanoutSink(events, bars)
        async with ray_runtime(settings, address=args.address) as runtime:
            runs.record_started(store, run_id, topic)
            try:
                result = await run_research(topic, settings, runtime, sink, run_id=run_id)
            except Exception as exc:
                partial = exc.partial if isinstance(exc, ResearchError) else None
                runs.finish_failed(store, run_id, str(exc), partial=partial)
                if partial:
                    try:
                        path = write_partial(partial, out_dir)
                    except OSError as write_exc:
                        raise ResearchError(
                            f"{exc} (partial.json could not be written to {out_dir}: "
                            f"{write_exc.strerror or write_exc}; it is kept with run {run_id} in the store)"
                        ) from exc
                    raise ResearchError(f"{exc} (written to {path})") from exc
                if created:
                    with suppress(OSError):
                        out_dir.rmdir()  # only if still empty: nothing of this run is in it
                raise
    terminal = next(e for e in reversed(events.events) if isinstance(e, ResearchCompleted))  # the engine's own
    try:
        md_path, json_path = write_outputs(result, out_dir)
    except OSError as exc:  # the folder went away or filled up during the run: the run did not complete
        reason = f"the report could not be written to {out_dir}: {exc.strerror or exc}"
        runs.finish_failed(store, run_id, reason, partial=result.model_dump(mode="json", by_alias=True))
        raise InputError(f"{reason}; the result is kept with run {run_id} in the store") from exc
    runs.finish_completed(store, result, terminal)
    entities = result.entities
    check = result.citation_check
    summary = {
        "runId": result.run_id,
        "topic": result.metadata.topic,
        "report": str(md_path),
        "result": str(json_path),
        "iterations": len(result.iterations),
        "sources": len(result.sources),
        "claims": len(result.claims),
        "disputed": len(result.disputed),
        "entities": len(entities),
        "citationsPassed": check.passed,
        "citationsChecked": check.checked,
        "agentFailures": len(result.agent_failures),
        "durationMs": result.total_duration_ms,
        "overallScore": round(result.final_score.overall_score, 3),
        "llmCalls": result.usage.calls if result.usage else 0,
        "llmCostUsd": result.usage.cost_usd if result.usage else 0.0,
        "llmQuotesDropped": result.llm_quotes_dropped,
        "warnings": result.warnings,
    }
    emit(settings, summary, terminal_summary(result, md_path, json_path))
    return 0


def terminal_summary(result: Any, md_path: Path, json_path: Path) -> str:
    """What a person reads in the terminal after a run, in the report's language (the topic's): where the
    files are, what was found, how far to trust it; the transparency report holds the reasons."""
    from core.messages import catalogue, format_number
    from research.labels import report_language

    lang = report_language(result.metadata.topic)
    c = catalogue("research")

    def line(key: str, **fields: object) -> str:
        return c.text(key, lang, **fields)

    def score(value: float) -> str:
        return format_number(value, lang, 2)

    final, usage = result.final_score, result.usage
    examples = [e.text for e in result.entities if e.lang == lang][:8]
    lines = [
        line("cli.title", topic=result.metadata.topic),
        "",
        line("cli.report", path=md_path),
        line("cli.result", path=json_path),
        line("cli.transparency", path=md_path.parent / "transparency.md"),
        line(
            "cli.counts",
            iterations=len(result.iterations),
            sources=format_number(len(result.sources), lang),
            claims=format_number(len(result.claims), lang),
            disputed=format_number(len(result.disputed), lang),
            entities=format_number(len(result.entities), lang),
            examples=line("cli.examples", items=("、" if lang == "ja" else ", ").join(examples)) if examples else "",
        ),
        line("cli.citations", passed=result.citation_check.passed, checked=result.citation_check.checked),
        line(
            "cli.score",
            overall=score(final.overall_score),
            consistency=score(final.consistency_score),
            reliability=score(final.source_reliability_score),
            coverage=score(final.coverage_score),
        ),
        *[
            line("cli.failed", agent=f.agent_id + 1, iteration=f.iteration, error=f.error)
            for f in result.agent_failures
        ],
        line(
            "cli.llm",
            calls=format_number(usage.calls, lang),
            input=format_number(usage.input_tokens, lang),
            output=format_number(usage.output_tokens, lang),
            cost=usage.cost_text(),
        )
        if usage
        else line("cli.no_llm"),
        line("cli.time", seconds=format_number(result.total_duration_ms / 1000, lang, 1)),
        *[line("cli.warning", text=warning) for warning in result.warnings],
    ]
    return "\n".join(lines)


__all__ = [
    "register",
    "research",
    "run",
    "terminal_summary",
]
