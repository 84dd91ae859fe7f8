"""Batch research as a Ray job: one report per topic of a file, resumable, a few topics at a time.

    RAY_AUTH_MODE=token .venv/bin/ray job submit --working-dir . --
        "$PWD/.venv/bin/python" -m jobs.research_batch topics.txt --out /abs/out

(one command; docs/operations/ray-jobs.md has it in full and a test runs it as written).

Each topic gets a stable id (readable prefix + short hash of the normalised topic) and a folder
``OUT/<id>/`` holding ``report.md`` and ``report.json``, then ``done.json`` written last: a topic is
finished only when its marker exists. A re-submitted job skips finished topics and redoes the rest.
A failing topic leaves ``error.json`` (one line) and does not stop the others; the exit code is 1
if any topic failed, 2 for a bad topics file or setting. ``OUT/summary.json`` lists every topic.

A topic whose research was cut by a fault of the cluster (a node lost with its agents, Ray's
"actor died") is researched again at once, up to ``TOPIC_ATTEMPTS`` times in all: only the topics a
lost node held are redone (``attempts`` in the summary; ``redone`` counts them), and the reports of
finished topics, written by this driver, are never touched.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import re
import sys
import time
import unicodedata
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from core.errors import InputError, MagiError, RuntimeSetupError
from core.files import atomic_write_text, ensure_writable_dir, remove_stale_temp_files
from core.settings import Settings, load_settings
from core.telemetry import configure_tracing, request_scope, setup_logging
from core.telemetry.settings import LoggingSettings, TelemetrySettings
from core.validation import clean_text
from research.settings import RESEARCH_OPTIONS

MARKER = "done.json"
TOPIC_ATTEMPTS = 3  # a topic cut by a lost node is researched again; twice more is plenty
ERROR = "error.json"
SUMMARY = "summary.json"
Status = Literal["done", "skipped", "failed"]


@dataclass(frozen=True)
class Topic:
    text: str
    id: str
    line: int


@dataclass
class TopicOutcome:
    topic: str
    id: str
    status: Status
    sources: int = 0
    seconds: float = 0.0
    error: str | None = None
    attempts: int = 1  # > 1: its research was cut by a lost node (or worker) and done again


# --- pure helpers (no Ray) -------------------------------------------------------------------------


def normalise(topic: str) -> str:
    """NFKC, whitespace collapsed: the form that is researched and hashed."""
    return " ".join(unicodedata.normalize("NFKC", topic).split())


def topic_id(topic: str, prefix_chars: int = 24) -> str:
    """Stable folder name: a readable prefix of the topic (any script) and 10 hex of its hash."""
    key = normalise(topic).casefold()
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:10]
    prefix = re.sub(r"[^\w]+", "-", key, flags=re.UNICODE).strip("-_")[:prefix_chars].strip("-_")
    return f"{prefix}-{digest}" if prefix else digest


def parse_topics(text: str, *, source: str = "topics", max_chars: int = 500) -> list[Topic]:
    """One topic a line; blank lines and ``#`` lines ignored; duplicates (same id) collapsed."""
    topics: list[Topic] = []
    seen: set[str] = set()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = normalise(raw)
        if not line or line.startswith("#"):
            continue
        line = clean_text(line, f"{source}:{number}: the topic", max_chars=max_chars)
        tid = topic_id(line)
        if tid not in seen:
            seen.add(tid)
            topics.append(Topic(text=line, id=tid, line=number))
    if not topics:
        raise InputError(f"{source} holds no topics; write one topic a line (# starts a comment)")
    return topics


def read_topics(path: Path) -> list[Topic]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"topics file {path} does not exist") from None
    except UnicodeDecodeError:
        raise InputError(f"topics file {path} is not UTF-8 text") from None
    except OSError as exc:
        raise InputError(f"cannot read topics file {path}: {exc.strerror}") from None
    return parse_topics(text, source=str(path))


def finished(out: Path, topic: Topic) -> dict[str, Any] | None:
    """The topic's marker if it is finished (marker present and readable), else ``None``."""
    try:
        marker = json.loads((out / topic.id / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return marker if isinstance(marker, dict) else None


def one_line(exc: BaseException) -> str:
    first = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


Research = Callable[[str], Awaitable[Any]]


async def run_topic(topic: Topic, out: Path, research: Research) -> TopicOutcome:
    """Research one topic (``research`` returns a ``ConsensusResearchResult``) and record it: reports, then the
    marker; or ``error.json``. Never raises for a failed research."""
    from core.runtime import lost_in_cluster
    from research.outputs import write_outputs

    folder = out / topic.id
    remove_stale_temp_files(folder)  # a job stopped mid-write leaves them; this topic owns the folder
    started = time.perf_counter()
    attempts = 0
    try:
        while True:
            attempts += 1
            try:
                result = await research(topic.text)
                break
            except Exception as exc:
                if attempts >= TOPIC_ATTEMPTS or not lost_in_cluster(exc):
                    raise
                print(f"[redo] {topic.id}: {one_line(exc)}; researching it again", flush=True)
        await asyncio.to_thread(write_outputs, result, folder)
    except Exception as exc:
        seconds = round(time.perf_counter() - started, 1)
        error = one_line(exc)
        try:
            atomic_write_text(
                folder / ERROR,
                json.dumps(
                    {"topic": topic.text, "id": topic.id, "error": error, "seconds": seconds}, ensure_ascii=False
                )
                + "\n",
            )
        except OSError as write_exc:  # the folder itself is unusable: the summary still reports the topic
            error = f"{error} (and {folder / ERROR} could not be written: {write_exc.strerror or write_exc})"
        return TopicOutcome(topic.text, topic.id, "failed", seconds=seconds, error=error, attempts=attempts)
    seconds = round(time.perf_counter() - started, 1)
    marker = {
        "topic": topic.text,
        "id": topic.id,
        "runId": result.run_id,
        "sources": len(result.sources),
        "seconds": seconds,
        "attempts": attempts,
        "report": "report.md",
        "result": "report.json",
    }
    atomic_write_text(folder / MARKER, json.dumps(marker, ensure_ascii=False, indent=2) + "\n")
    (folder / ERROR).unlink(missing_ok=True)  # a stale error of an earlier attempt
    return TopicOutcome(topic.text, topic.id, "done", sources=len(result.sources), seconds=seconds, attempts=attempts)


async def run_batch(
    topics: Sequence[Topic],
    out: Path,
    research: Research,
    concurrency: int,
    report: Callable[[TopicOutcome], None] = lambda _: None,
) -> list[TopicOutcome]:
    """Skip finished topics, research the rest ``concurrency`` at a time; outcomes in file order."""
    outcomes: dict[str, TopicOutcome] = {}
    todo: list[Topic] = []
    for topic in topics:
        marker = finished(out, topic)
        if marker is None:
            todo.append(topic)
            continue
        outcomes[topic.id] = TopicOutcome(
            topic.text,
            topic.id,
            "skipped",
            sources=int(marker.get("sources", 0)),
            seconds=float(marker.get("seconds", 0.0)),
        )
        report(outcomes[topic.id])

    slots = asyncio.Semaphore(max(1, concurrency))

    async def work(topic: Topic) -> None:
        async with slots:
            outcomes[topic.id] = await run_topic(topic, out, research)
        report(outcomes[topic.id])

    await asyncio.gather(*(work(t) for t in todo))
    return [outcomes[t.id] for t in topics]


def summary_table(outcomes: Sequence[TopicOutcome]) -> str:
    rows = [("topic", "status", "sources", "seconds")]
    rows += [
        (o.topic if len(o.topic) <= 40 else o.topic[:39] + "…", o.status, str(o.sources), f"{o.seconds:.1f}")
        for o in outcomes
    ]
    widths = [max(_width(r[i]) for r in rows) for i in range(4)]
    lines = [
        "  ".join(cell + " " * (w - _width(cell)) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines += [f"{o.topic}: {o.error}" for o in outcomes if o.error]
    return "\n".join(lines)


def _width(text: str) -> int:
    """Terminal columns: CJK wide characters take two."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def write_summary(out: Path, outcomes: Sequence[TopicOutcome]) -> Path:
    counts = {s: sum(o.status == s for o in outcomes) for s in ("done", "skipped", "failed")}
    data = {**counts, "redone": sum(o.attempts > 1 for o in outcomes), "topics": [asdict(o) for o in outcomes]}
    return atomic_write_text(out / SUMMARY, json.dumps(data, ensure_ascii=False, indent=2) + "\n")


# --- the job driver ---------------------------------------------------------------------------------


def in_ray_job(environ: dict[str, str] | os._Environ[str] = os.environ) -> bool:
    """True when this process is the driver of a job submitted through the Ray Jobs API."""
    return "RAY_JOB_CONFIG_JSON_ENV_VAR" in environ


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m jobs.research_batch", description="Research every topic of TOPICS_FILE; resumable."
    )
    parser.add_argument("topics_file", metavar="TOPICS_FILE", type=Path, help="UTF-8, one topic a line")
    parser.add_argument("--out", metavar="DIR", type=Path, required=True, help="output folder (absolute in a job)")
    parser.add_argument("--concurrency", type=int, default=2, metavar="N", help="topics researched at once (2)")
    RESEARCH_OPTIONS.add_flags(parser)  # the research options, per topic
    return parser


def settings_for(args: argparse.Namespace) -> Settings:
    return RESEARCH_OPTIONS.apply(load_settings(), RESEARCH_OPTIONS.from_args(args, origin="job argument"))


def store_outside_working_dir(settings: Settings, out: Path, working_dir: Path) -> Settings:
    """Settings whose ``data_dir`` survives the job: a Ray job runs in an unpacked copy of its
    working_dir that goes with the Ray session, so a ``data_dir`` inside it (the default ``.magi`` is
    relative) becomes ``OUT/.magi`` next to the reports. An absolute ``data_dir`` elsewhere is kept;
    a cluster should set ``store_url`` (PostgreSQL) so every node writes to the same store."""
    if settings.data_dir.resolve().is_relative_to(working_dir.resolve()):
        return settings.updated({"data_dir": out / ".magi"})
    return settings


def describe_store(settings: Settings) -> str:
    """Where this job's runs and caches go, for its log."""
    from core.masking import masked

    if settings.store_url:
        return f"store {masked(settings.store_url)}, data_dir {settings.data_dir}"
    return f"store SQLite in {settings.data_dir} (set MAGI_STORE_URL to PostgreSQL on a multi-node cluster)"


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.concurrency < 1:
            raise InputError("--concurrency must be at least 1")
        if in_ray_job() and not args.out.is_absolute():
            raise InputError(
                f"--out {args.out} is relative: a job runs in a temporary copy of its working_dir; "
                "pass an absolute folder"
            )
        topics = read_topics(args.topics_file)
        ensure_writable_dir(args.out.absolute(), "--out folder")  # before any research, not after it
        settings = settings_for(args)
        if in_ray_job():
            settings = store_outside_working_dir(settings, args.out.absolute(), Path.cwd())
        logs = LoggingSettings.of(settings)
        setup_logging(logs.level, logs.format)  # the job logs as the cluster's services do
        configure_tracing(TelemetrySettings.of(settings).otlp_endpoint)
        with request_scope():  # one id for the whole batch, in every run's row, log line and span
            return asyncio.run(drive(topics, args.out.absolute(), settings, args.concurrency))
    except MagiError as exc:
        sys.stderr.write(f"research_batch: error: {str(exc).splitlines()[0]}\n")
        return exc.exit_code


async def drive(topics: Sequence[Topic], out: Path, settings: Settings, concurrency: int) -> int:
    import ray

    import research
    from core.events import ListSink
    from core.runtime import RayRuntime, start_ray, stop_ray
    from nlp.settings import NlpSettings
    from research.engine import preflight, run_research

    preflight(topics[0].text, settings)  # a bad corpus fails before Ray starts
    if all(finished(out, t) is not None for t in topics):  # nothing to do: no Ray needed
        return report_and_exit(out, await run_batch(topics, out, _nothing, concurrency))
    if in_ray_job() and not settings.ray.address:
        raise RuntimeSetupError("running as a Ray job but RAY_ADDRESS is unset; refusing to start a second Ray")
    owned = not ray.is_initialized() and not settings.ray.address
    start_ray(settings)  # attaches to the job's cluster (RAY_ADDRESS), else starts a local Ray
    cpus = int(ray.cluster_resources().get("CPU", 1))  # type: ignore[no-untyped-call]
    print(
        f"research_batch: {len(topics)} topics, concurrency {concurrency}, cluster CPUs {cpus}, "
        f"project code from {Path(research.__file__).parent.parent}",
        flush=True,
    )
    print(f"research_batch: {describe_store(settings)}", flush=True)
    if NlpSettings.of(settings).workers is None:  # NLP workers hold one CPU each: share the CPUs across topics
        settings = settings.updated({"nlp": {"workers": max(1, cpus // concurrency)}})

    async def research_one(topic: str) -> Any:
        runtime = RayRuntime()
        try:
            return await run_research(topic, settings, runtime, ListSink())
        finally:
            await runtime.close()

    def report(o: TopicOutcome) -> None:
        detail = o.error if o.error else f"{o.sources} sources, {o.seconds:.1f} s"
        print(f"[{o.status}] {o.id}: {detail}", flush=True)

    try:
        outcomes = await run_batch(topics, out, research_one, concurrency, report)
    finally:
        if owned:
            stop_ray()
    return report_and_exit(out, outcomes)


async def _nothing(_topic: str) -> None:
    """Never called: every topic is finished."""


def report_and_exit(out: Path, outcomes: Sequence[TopicOutcome]) -> int:
    write_summary(out, outcomes)
    print(summary_table(outcomes), flush=True)
    return 1 if any(o.status == "failed" for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())

__all__ = [
    "ERROR",
    "MARKER",
    "SUMMARY",
    "TOPIC_ATTEMPTS",
    "Research",
    "Status",
    "Topic",
    "TopicOutcome",
    "build_parser",
    "describe_store",
    "drive",
    "finished",
    "in_ray_job",
    "main",
    "normalise",
    "one_line",
    "parse_topics",
    "read_topics",
    "report_and_exit",
    "run_batch",
    "run_topic",
    "settings_for",
    "store_outside_working_dir",
    "summary_table",
    "topic_id",
    "write_summary",
]
