"""``jobs.research_batch``: its pure helpers, and the module as a real Ray job that is stopped and resubmitted.

The job test starts its own throwaway head (``ray start --head --block``, dashboard on, token auth off,
its own ``--temp-dir`` and ports) so it never touches the shared session Ray of the other integration
tests, and talks to it only over HTTP (``JobSubmissionClient``). The head is ended by its pid: ``ray stop``
would kill every Ray on the machine.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from core.errors import InputError
from core.events import ListSink
from core.runtime import InProcessRuntime
from core.settings import load_settings
from jobs.research_batch import (
    MARKER,
    Topic,
    finished,
    parse_topics,
    read_topics,
    run_batch,
    summary_table,
    topic_id,
)
from research.engine import run_research
from research.result import ConsensusResearchResult
from tests.ports import free_ports
from tests.unit.test_engine_in_process import write_corpus

REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLE_TOPICS = REPO_ROOT / "data" / "research" / "sample_topics.txt"
VENV_BIN = Path(sys.executable).parent


# --- helpers, no Ray ---------------------------------------------------------------------------------


def test_topic_ids_are_stable_readable_and_normalised() -> None:
    a = topic_id("中小企業の価格転嫁の現状")
    assert a == topic_id("  中小企業の価格転嫁の現状 ") and a.startswith("中小企業の価格転嫁の現状-")
    assert topic_id("Price  Pass-Through") == topic_id("price pass-through")  # case and spacing
    assert topic_id("ＡＢＣ") == topic_id("abc")  # NFKC: full-width letters
    assert topic_id("price pass-through").startswith("price-pass-through-")
    assert topic_id("???") != topic_id("!!!") and "/" not in topic_id("a/b/../c")


def test_parse_topics_skips_comments_blanks_and_duplicates() -> None:
    topics = parse_topics("# heading\n\n労務費の価格転嫁\n  労務費の価格転嫁 \nC# の価格\n")
    assert [t.text for t in topics] == ["労務費の価格転嫁", "C# の価格"]
    assert topics[0].line == 3
    with pytest.raises(InputError, match="no topics"):
        parse_topics("# only a comment\n\n")
    with pytest.raises(InputError, match=r"t\.txt:2: the topic has 501 characters"):
        parse_topics("ok\n" + "x" * 501, source="t.txt")


def test_unreadable_topics_files_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        read_topics(tmp_path / "missing.txt")
    (tmp_path / "bad.txt").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(InputError, match="not UTF-8"):
        read_topics(tmp_path / "bad.txt")
    assert len(read_topics(SAMPLE_TOPICS)) == 4


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def researched(tmp_path_factory: pytest.TempPathFactory) -> ConsensusResearchResult:
    """One real result (the engine in process over three small pages), which the batch tests hand out
    for every topic: run_batch then writes real reports with the real write_outputs."""
    corpus = write_corpus(tmp_path_factory.mktemp("corpus"))
    (corpus / "page3.html").unlink()
    settings = load_settings(
        overrides={
            "data_dir": tmp_path_factory.mktemp("data"),
            "search": {"corpus_dir": corpus},
            "nlp": {"workers": 1},
            "research": {"agents": 1, "iterations": 1},
        }
    )
    runtime = InProcessRuntime()
    try:
        return await run_research("中小企業の価格転嫁率", settings, runtime, ListSink())
    finally:
        await runtime.close()


def _for(result: ConsensusResearchResult, topic: str) -> ConsensusResearchResult:
    return result.model_copy(update={"metadata": result.metadata.model_copy(update={"topic": topic})})


async def test_run_batch_skips_finished_records_failures_and_resumes(
    tmp_path: Path, researched: ConsensusResearchResult, capsys: pytest.CaptureFixture[str]
) -> None:
    import jobs.research_batch as rb

    written: list[str] = []  # topics whose research succeeded (and whose reports were then written)
    topics = parse_topics("a\nb\nc\n")

    async def flaky(topic: str) -> Any:
        if topic == "b":
            raise RuntimeError("search failed\nsecond line")
        written.append(topic)
        return _for(researched, topic)

    async def steady(topic: str) -> Any:
        written.append(topic)
        return _for(researched, topic)

    first = await run_batch(topics, tmp_path, flaky, concurrency=2)
    assert [o.status for o in first] == ["done", "failed", "done"]
    assert first[1].error == "RuntimeError: search failed"
    assert json.loads((tmp_path / topics[1].id / "error.json").read_text())["error"] == "RuntimeError: search failed"
    assert finished(tmp_path, topics[1]) is None and finished(tmp_path, topics[0]) == json.loads(
        (tmp_path / topics[0].id / MARKER).read_text()
    )

    (tmp_path / topics[1].id / ".report.md.x1y2.tmp").write_text("half")  # a writer killed mid-write
    second = await run_batch(topics, tmp_path, steady, concurrency=2)
    assert [o.status for o in second] == ["skipped", "done", "skipped"]
    assert not list((tmp_path / topics[1].id).glob("*.tmp"))  # swept before the topic was redone
    assert sorted(written) == ["a", "b", "c"]  # nothing researched twice
    assert not (tmp_path / topics[1].id / "error.json").exists()  # the stale error went with the retry
    assert [o.sources for o in second] == [len(researched.sources)] * 3
    table = summary_table(second)
    assert table.splitlines()[0].split() == ["topic", "status", "sources", "seconds"] and "skipped" in table

    rb.write_summary(tmp_path, second)
    assert json.loads((tmp_path / "summary.json").read_text())["skipped"] == 2
    capsys.readouterr()


async def test_a_topic_cut_by_a_lost_node_is_redone_and_nothing_else(
    tmp_path: Path, researched: ConsensusResearchResult, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ray's own "actor died" (an agent on a node that went) behind the engine's error: that topic is
    researched again and counted as redone; a topic that fails for its own reason is not retried."""
    from ray.exceptions import ActorDiedError

    import jobs.research_batch as rb
    from research.errors import ResearchError

    tries: dict[str, int] = {}
    topics = parse_topics("a\nb\nc\n")

    async def node_lost_once(topic: str) -> Any:
        tries[topic] = tries.get(topic, 0) + 1
        if topic == "b" and tries[topic] == 1:
            try:
                raise ActorDiedError()
            except ActorDiedError as lost:
                raise ResearchError("research run failed: the agent's node went") from lost
        if topic == "c":
            raise ResearchError("no page could be read")  # the topic's own failure
        return _for(researched, topic)

    outcomes = await run_batch(topics, tmp_path, node_lost_once, concurrency=2)
    assert [o.status for o in outcomes] == ["done", "done", "failed"]
    assert tries == {"a": 1, "b": 2, "c": 1}  # only what the node held was done again
    assert [o.attempts for o in outcomes] == [1, 2, 1]
    assert json.loads((tmp_path / topics[1].id / MARKER).read_text())["attempts"] == 2
    rb.write_summary(tmp_path, outcomes)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert (summary["done"], summary["failed"], summary["redone"]) == (2, 1, 1)
    assert "[redo]" in capsys.readouterr().out


def test_a_half_written_marker_does_not_count(tmp_path: Path) -> None:
    topic = Topic("x", topic_id("x"), 1)
    (tmp_path / topic.id).mkdir()
    (tmp_path / topic.id / MARKER).write_text('{"topic": ')
    assert finished(tmp_path, topic) is None


# --- the real job ------------------------------------------------------------------------------------


def _stop_head(head: subprocess.Popen[bytes]) -> None:
    """SIGTERM ``ray start --block`` (it kills the processes it started), then SIGKILL any descendant
    still alive, all by pid: the job driver runs in its own session, so a process-group kill misses it."""
    import ray  # noqa: F401, I001  (first: it puts Ray's vendored psutil on sys.path)
    import psutil

    try:
        family = psutil.Process(head.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        family = []
    head.send_signal(signal.SIGTERM)
    try:
        head.wait(timeout=30)
    except subprocess.TimeoutExpired:
        head.kill()
        head.wait(timeout=10)
    _, alive = psutil.wait_procs(family, timeout=15)
    for proc in alive:
        with suppress(psutil.NoSuchProcess):
            proc.kill()
    psutil.wait_procs(alive, timeout=10)


def start_head(temp_dir: str, env: dict[str, str], log: Any) -> tuple[subprocess.Popen[bytes], str]:
    """``ray start --head --block`` with the dashboard (Jobs API) and every port free on loopback, in its
    own session; returns the process and the dashboard URL."""
    gcs, dash, client, agent_http, agent_grpc, rt_env, node_mgr, obj_mgr, metrics = free_ports(9)
    head = subprocess.Popen(
        [
            str(VENV_BIN / "ray"),
            "start",
            "--head",
            "--block",
            "--node-ip-address=127.0.0.1",
            f"--port={gcs}",
            "--include-dashboard=true",
            "--dashboard-host=127.0.0.1",
            f"--dashboard-port={dash}",
            f"--ray-client-server-port={client}",
            f"--dashboard-agent-listen-port={agent_http}",
            f"--dashboard-agent-grpc-port={agent_grpc}",
            f"--runtime-env-agent-port={rt_env}",
            f"--node-manager-port={node_mgr}",
            f"--object-manager-port={obj_mgr}",
            f"--metrics-export-port={metrics}",
            "--num-cpus=2",
            "--disable-usage-stats",
            f"--temp-dir={temp_dir}",
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        cwd=temp_dir,
    )
    return head, f"http://127.0.0.1:{dash}"


@pytest.fixture
def job_head() -> Iterator[str]:
    """A throwaway single-node head with the dashboard (Jobs API) on loopback; yields its dashboard URL."""
    temp_dir = tempfile.mkdtemp(prefix="magi-rb-", dir="/tmp")  # short: Ray puts Unix sockets under it
    env = {k: v for k, v in os.environ.items() if k not in {"RAY_ADDRESS", "RAY_AUTH_TOKEN"}}
    env.update(
        RAY_AUTH_MODE="disabled",
        PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}",
        RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S="0",
    )
    log = open(Path(temp_dir) / "ray-start.log", "wb")  # noqa: SIM115 (closed in finally)
    head, url = start_head(temp_dir, env, log)
    try:
        from ray.job_submission import JobSubmissionClient

        deadline = time.monotonic() + 90
        while True:
            if head.poll() is not None:
                raise RuntimeError(
                    f"ray start exited {head.returncode}: "
                    + (Path(temp_dir) / "ray-start.log").read_text(errors="replace")[-2000:]
                )
            try:
                JobSubmissionClient(url).list_jobs()
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        yield url
    finally:
        _stop_head(head)
        log.close()
        shutil.rmtree(temp_dir, ignore_errors=True)


def _wait_terminal(client: Any, job_id: str, timeout_s: float) -> str:
    deadline = time.monotonic() + timeout_s
    while True:
        status = str(client.get_job_status(job_id))
        if status.split(".")[-1] in {"SUCCEEDED", "FAILED", "STOPPED"}:
            return status.split(".")[-1]
        if time.monotonic() > deadline:
            raise AssertionError(f"job {job_id} still {status} after {timeout_s} s:\n{client.get_job_logs(job_id)}")
        time.sleep(0.5)


@pytest.mark.slow
@pytest.mark.timeout(420)
def test_batch_job_is_stopped_midway_and_resumed_on_resubmit(
    job_head: str, tmp_path: Path, isolated_settings: Path
) -> None:
    from ray.job_submission import JobSubmissionClient

    client = JobSubmissionClient(job_head)
    out = tmp_path / "out"
    topics = read_topics(SAMPLE_TOPICS)
    runtime_env = {
        "working_dir": str(REPO_ROOT),
        "excludes": [
            "/.venv/",
            "/out/",
            "/.magi/",
            "/.git/",
            ".mypy_cache/",
            ".pytest_cache/",
            ".ruff_cache/",
            "__pycache__/",
            "*.egg-info/",
        ],
        "env_vars": {"MAGI_DATA_DIR": str(isolated_settings), "RAY_AUTH_MODE": "disabled"},
    }
    entrypoint = (
        f"python -m jobs.research_batch {SAMPLE_TOPICS.relative_to(REPO_ROOT)} --out {out} "
        "--agents 1 --iterations 1 --concurrency 2"
    )
    timings: dict[str, float] = {}

    started = time.monotonic()
    first = client.submit_job(entrypoint=entrypoint, runtime_env=runtime_env)
    deadline = time.monotonic() + 240
    while not any(finished(out, t) for t in topics):
        status = str(client.get_job_status(first)).split(".")[-1]
        assert status in {"PENDING", "RUNNING"}, client.get_job_logs(first)
        assert time.monotonic() < deadline, client.get_job_logs(first)
        time.sleep(0.2)
    timings["first topic finished"] = time.monotonic() - started
    assert client.stop_job(first)
    assert _wait_terminal(client, first, 60) == "STOPPED"
    timings["first job stopped"] = time.monotonic() - started
    done_before = {t.id for t in topics if finished(out, t)}
    assert 1 <= len(done_before) < len(topics)
    logs = client.get_job_logs(first)
    # The driver imports the project from the uploaded working_dir, not from the checkout.
    code_from = next(line for line in logs.splitlines() if "project code from" in line).rsplit(" ", 1)[-1]
    assert Path(code_from) != REPO_ROOT and "working_dir_files" in code_from, logs

    second = client.submit_job(entrypoint=entrypoint, runtime_env=runtime_env)
    assert _wait_terminal(client, second, 300) == "SUCCEEDED", client.get_job_logs(second)
    timings["second job finished"] = time.monotonic() - started

    for topic in topics:
        folder = out / topic.id
        marker = finished(out, topic)
        assert marker is not None and marker["topic"] == topic.text
        result = ConsensusResearchResult.model_validate_json((folder / "report.json").read_text(encoding="utf-8"))
        assert result.metadata.topic == topic.text and len(result.sources) == marker["sources"] > 0
        assert (folder / "report.md").read_text(encoding="utf-8") == result.final_report
        assert not (folder / "error.json").exists()
        names = sorted(p.name for p in folder.iterdir())  # no temp files
        expected = ["done.json", "report.json", "report.md", "transparency.json", "transparency.md"]
        assert names == sorted(expected + (["charts"] if result.charts else []))
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    statuses = {row["id"]: row["status"] for row in summary["topics"]}
    assert statuses == {t.id: "skipped" if t.id in done_before else "done" for t in topics}
    assert summary["failed"] == 0 and summary["skipped"] == len(done_before)
    table = client.get_job_logs(second)
    assert "topic" in table and "skipped" in table
    print(json.dumps({k: round(v, 1) for k, v in timings.items()}))


def test_a_job_keeps_its_store_out_of_the_working_dir(tmp_path: Path) -> None:
    from core.settings import load_settings
    from jobs.research_batch import describe_store, store_outside_working_dir

    working_dir = tmp_path / "session" / "working_dir_files" / "pkg"
    working_dir.mkdir(parents=True)
    out = tmp_path / "out"
    inside = load_settings(overrides={"data_dir": working_dir / ".magi"})
    assert store_outside_working_dir(inside, out, working_dir).data_dir == out / ".magi"
    elsewhere = load_settings(overrides={"data_dir": tmp_path / "data"})
    assert store_outside_working_dir(elsewhere, out, working_dir).data_dir == tmp_path / "data"
    shown = describe_store(load_settings(overrides={"store_url": "postgresql+psycopg://u:secret@db:5432/magi"}))
    assert "secret" not in shown and "db:5432/magi" in shown


async def test_a_topic_whose_folder_cannot_be_written_fails_alone(
    tmp_path: Path, researched: ConsensusResearchResult
) -> None:
    """A file where a topic's folder should be: that topic fails with the reason, the others finish."""
    topics = parse_topics("a\nb\n")
    (tmp_path / topics[0].id).write_text("in the way")

    async def research(topic: str) -> Any:
        return _for(researched, topic)

    outcomes = await run_batch(topics, tmp_path, research, concurrency=2)
    assert [o.status for o in outcomes] == ["failed", "done"]
    assert outcomes[0].error is not None and "error.json could not be written" in outcomes[0].error
