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
    ja_entities = [e.text for e in entities if e.lang == "ja"][:10]
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
    usage = result.usage
    emit(
        settings,
        summary,
        "\n".join(
            [
                f"# Research: {result.metadata.topic}",
                "",
                f"- report: {md_path}",
                f"- result: {json_path}",
                f"- transparency: {md_path.parent / 'transparency.md'}",
                f"- {len(result.iterations)} iteration(s), {len(result.sources)} sources, "
                f"{len(result.claims)} verified claims, {len(result.disputed)} disputed figures, "
                f"{len(entities)} entities ({', '.join(ja_entities)})",
                f"- citations: {check.passed} of {check.checked} passed verification",
                f"- final score {result.final_score.overall_score:.3f}; {result.iterations[-1].selection_reason}",
                *[f"- agent {f.agent_id} (iteration {f.iteration}) failed: {f.error}" for f in result.agent_failures],
                f"- LLM: {usage.calls} call(s), {usage.input_tokens} input / {usage.output_tokens} output tokens, "
                f"cost {usage.cost_text()}"
                if usage
                else "- LLM: none configured (extractive summary)",
                f"- {result.total_duration_ms / 1000:.1f} s, run {result.run_id}",
                *[f"- warning: {warning}" for warning in result.warnings],
            ]
        ),
    )
    return 0


__all__ = [
    "register",
    "research",
    "run",
]
