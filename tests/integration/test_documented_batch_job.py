"""The documented batch-job commands (docs/operations/ray-jobs.md), pasted as written into a fresh shell,
against a throwaway head.

The head is started as the page says (a token from ``ray get-auth-token --generate``, then
``ray start --head`` with ``RAY_AUTH_MODE`` unset, so Ray's default turns token auth on), on its own
ports and temp dir, in an environment without the venv on ``PATH`` and without any ``MAGI_*``
variable. The page's fenced block is then run by ``bash -c`` with only ``PATH``, ``HOME`` and the
head's ``RAY_ADDRESS``. Before that, the two ways the old command failed are reproduced: a client
without ``RAY_AUTH_MODE=token`` is refused, and a bare ``python`` entrypoint has no Ray.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from core.store import Store
from jobs.research_batch import finished, read_topics
from tests.integration.test_research_batch_job import REPO_ROOT, SAMPLE_TOPICS, VENV_BIN, _stop_head, start_head

MARKER = "<!-- batch-job-commands:"
BATCH_JOB_PAGE = REPO_ROOT / "docs" / "operations" / "ray-jobs.md"
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"  # no venv on it


def documented_batch_commands() -> str:
    """The fenced bash block that follows the batch-job marker in the Ray-jobs page, verbatim."""
    page = BATCH_JOB_PAGE.read_text(encoding="utf-8")
    after = page[page.index(MARKER) :]
    match = re.search(r"```bash\n(.*?)```", after, flags=re.DOTALL)
    assert match is not None, f"{BATCH_JOB_PAGE}: no ```bash block after the batch-job marker"
    return match.group(1)


@contextmanager
def token_head(home: Path) -> Iterator[tuple[str, Path]]:
    """``ray start --head`` in Ray's default auth mode with a token in ``home``; yields the dashboard URL
    and the head's temp dir (where jobs unpack their working_dir)."""
    temp_dir = tempfile.mkdtemp(prefix="magi-rt-", dir="/tmp")  # short: Ray puts Unix sockets under it
    env = {"PATH": SYSTEM_PATH, "HOME": str(home), "LANG": "C.UTF-8", "RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "0"}
    generated = subprocess.run(
        [str(VENV_BIN / "ray"), "get-auth-token", "--generate"], env=env, capture_output=True, text=True, timeout=60
    )
    assert generated.returncode == 0 and (home / ".ray" / "auth_token").is_file(), generated.stderr
    log = open(Path(temp_dir) / "ray-start.log", "wb")  # noqa: SIM115 (closed in finally)
    head, url = start_head(temp_dir, env, log)
    try:
        deadline = time.monotonic() + 90
        while True:  # up when the Jobs API answers an authenticated client
            if head.poll() is not None:
                raise RuntimeError(
                    f"ray start exited {head.returncode}: "
                    + (Path(temp_dir) / "ray-start.log").read_text(errors="replace")[-2000:]
                )
            listed = subprocess.run(
                [str(VENV_BIN / "ray"), "job", "list", "--address", url],
                env={**env, "RAY_AUTH_MODE": "token"},
                capture_output=True,
                text=True,
                timeout=60,
            )
            if listed.returncode == 0:
                break
            assert time.monotonic() < deadline, listed.stderr
            time.sleep(1)
        yield url, Path(temp_dir)
    finally:
        _stop_head(head)
        log.close()
        shutil.rmtree(temp_dir, ignore_errors=True)


def fresh_shell(script: str, home: Path, ray_address: str) -> subprocess.CompletedProcess[str]:
    """``bash -c script`` from the checkout with nothing but PATH (no venv), HOME and RAY_ADDRESS."""
    env = {"PATH": SYSTEM_PATH, "HOME": str(home), "LANG": "C.UTF-8", "RAY_ADDRESS": ray_address}
    return subprocess.run(["bash", "-c", script], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def head(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, Path]]:
    """One token-auth head for this module: (dashboard URL, head temp dir, the HOME holding its token)."""
    home = tmp_path_factory.mktemp("home")
    with token_head(home) as (url, head_temp_dir):
        yield url, head_temp_dir, home


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_documented_batch_job_commands_run_as_written_on_a_token_auth_head(head: tuple[str, Path, Path]) -> None:
    url, head_temp_dir, home = head
    commands = documented_batch_commands()
    assert "ray job submit" in commands and "RAY_AUTH_MODE=token" in commands
    # The old command, reproduced: without RAY_AUTH_MODE=token the client sends no token ...
    refused = fresh_shell(".venv/bin/ray job submit --working-dir . -- python -c 'print(1)'", home, url)
    assert refused.returncode != 0
    assert "AuthenticationError" in refused.stderr and "Missing authentication token" in refused.stderr
    # ... and with it, a bare `python` on the head's PATH has no Ray (or is no Python at all).
    bare = fresh_shell(
        "RAY_AUTH_MODE=token .venv/bin/ray job submit --working-dir . -- python -c 'import ray'", home, url
    )
    said = bare.stdout + bare.stderr
    assert bare.returncode != 0 and "failed" in said, said[-2000:]
    assert "python: not found" in said or "No module named 'ray'" in said, said[-2000:]

    started = time.monotonic()
    result = fresh_shell(commands, home, url)
    seconds = time.monotonic() - started
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    unpacked = list(head_temp_dir.rglob("working_dir_files"))
    stray = [str(p) for p in head_temp_dir.rglob(".magi")]
    out = home / "magi-batch"
    assert "succeeded" in result.stdout.lower(), result.stdout[-2000:]
    for topic in read_topics(SAMPLE_TOPICS):
        marker = finished(out, topic)
        assert marker is not None and marker["sources"] > 0 and (out / topic.id / "report.md").is_file()
    # The job's store: OUT/.magi, named in its log, holding what the run cached; none in the working_dir.
    store = out / ".magi" / "magi.sqlite3"
    assert f"store SQLite in {out / '.magi'}" in result.stdout, result.stdout[-3000:]
    with sqlite3.connect(store) as db:
        tables = [name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        rows = sum(db.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in tables)
    assert rows > 0, tables
    assert unpacked and stray == [], stray  # the working_dir was unpacked there, and no store went into it
    print({"documented_job_seconds": round(seconds, 1)})


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_job_given_a_store_url_writes_its_run_data_there(
    head: tuple[str, Path, Path], postgres_url: str, tmp_path: Path
) -> None:
    """The documented cluster variant: the store reaches the job through the runtime env's env_vars."""
    url, _, home = head
    topics = tmp_path / "topics.txt"
    topics.write_text("中小企業の価格転嫁の現状\n", encoding="utf-8")
    runtime_env = json.dumps({"env_vars": {"MAGI_STORE_URL": postgres_url}})
    out = home / "pg-batch"
    script = (
        "export RAY_AUTH_MODE=token\n"
        f".venv/bin/ray job submit --working-dir . --runtime-env-json '{runtime_env}' -- "
        f'"$PWD/.venv/bin/python" -m jobs.research_batch {topics} --out {out} --agents 1 --iterations 1\n'
    )
    result = fresh_shell(script, home, url)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "store postgresql+psycopg://" in result.stdout, result.stdout[-3000:]
    assert finished(out, read_topics(topics)[0]) is not None
    store = Store(postgres_url)
    try:
        assert store.query("SELECT COUNT(*) FROM page_snapshots")[0][0] > 0  # the job's collector wrote here
    finally:
        store.close()
    assert not (out / ".magi" / "magi.sqlite3").exists()  # nothing went to the SQLite fallback
