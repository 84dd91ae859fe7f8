"""The bridge command executor with real processes: no shell, group kill on timeout, caps, env allow-list."""

from __future__ import annotations

import asyncio
import os
import sys
import textwrap
from pathlib import Path

import pytest

from magi.executor import run_command
from magi.plugins import BridgeCommand

PY = sys.executable


def command(*argv: str, **options: object) -> BridgeCommand:
    return BridgeCommand.model_validate({"argv": list(argv), **options})


def alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"


async def gone(pid: int) -> bool:
    for _ in range(200):  # SIGKILL is asynchronous: give the kernel a moment
        if not alive(pid):
            return True
        await asyncio.sleep(0.05)
    return False


async def test_timeout_kills_the_child_and_the_grandchild(tmp_path: Path) -> None:
    script = tmp_path / "spawner.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import os, subprocess, sys, time
            grandchild = subprocess.Popen([{PY!r}, "-c", "import time; time.sleep(120)"])
            open("pids.txt", "w").write(f"{{os.getpid()}} {{grandchild.pid}}")
            print("started", flush=True)
            time.sleep(120)
            """
        )
    )
    result = await run_command(command(PY, str(script), timeout_s=4), workdir=tmp_path)
    assert result.timed_out and not result.ok
    assert "timed out" in result.describe() and "children" in result.describe()
    assert result.stdout.strip() == "started"
    child, grandchild = (int(x) for x in (tmp_path / "pids.txt").read_text().split())
    assert await gone(child) and await gone(grandchild)


async def test_exit_code_and_stderr_are_reported(tmp_path: Path) -> None:
    code = "import sys; print('out'); sys.stderr.write('first\\nthe reason\\n'); sys.exit(3)"
    result = await run_command(command(PY, "-c", code), workdir=tmp_path)
    assert result.exit_code == 3 and not result.ok and result.stdout == "out\n"
    assert result.describe().endswith("exited with code 3: the reason")


async def test_output_is_capped_without_blocking_the_command(tmp_path: Path) -> None:
    code = "import sys; sys.stdout.write('x' * 3_000_000); sys.stderr.write('e' * 5000)"
    result = await run_command(command(PY, "-c", code, max_output_bytes=2048), workdir=tmp_path)
    assert result.ok
    assert len(result.stdout) == 2048 and result.stdout_truncated and result.stdout_bytes == 3_000_000
    assert len(result.stderr) == 2048 and result.stderr_truncated


async def test_no_shell_env_allow_list_stdin_and_file_input(tmp_path: Path) -> None:
    os.environ["MAGI_TEST_SECRET"] = "hidden"
    try:
        code = "import os, sys; print(os.environ.get('MAGI_TEST_SECRET'), os.environ.get('KEPT'), sys.argv[1])"
        result = await run_command(
            command(PY, "-c", code, "$(echo injected); rm -rf /", env=["KEPT"]),
            workdir=tmp_path,
            environ={**os.environ, "KEPT": "yes"},
        )
    finally:
        del os.environ["MAGI_TEST_SECRET"]
    assert result.stdout.strip() == "None yes $(echo injected); rm -rf /"  # passed literally, not run
    upper = await run_command(
        command(PY, "-c", "import sys; print(sys.stdin.read().upper())", input="stdin"),
        workdir=tmp_path,
        input_text="hi",
    )
    assert upper.stdout.strip() == "HI"
    read = await run_command(
        command(PY, "-c", "import sys; print(open(sys.argv[1]).read())", "{input_file}", input="file"),
        workdir=tmp_path,
        input_text="from a file",
    )
    assert read.stdout.strip() == "from a file"


async def test_missing_program_and_folder_are_results_not_crashes(tmp_path: Path) -> None:
    missing = await run_command(command("magi-no-such-program-xyz"), workdir=tmp_path)
    assert missing.error and "program not found: magi-no-such-program-xyz" in missing.describe()
    nowhere = await run_command(command(PY, "-V", cwd="does/not/exist"), workdir=tmp_path)
    assert nowhere.error and "does not exist" in nowhere.error


async def test_the_timeout_measures_the_command_not_a_child_holding_its_pipes(tmp_path: Path) -> None:
    """Issue 21 (8): ``(sleep 30 &); echo done`` ran into its 8 s timeout although the shell exited at once."""
    script = "(exec sleep 30 & echo $! > left.pid); echo done"
    result = await run_command(command("/bin/sh", "-c", script, timeout_s=8), workdir=tmp_path)
    assert result.ok and not result.timed_out and result.stdout.strip() == "done", result  # ended with the shell
    assert await gone(int((tmp_path / "left.pid").read_text()))  # and what it left behind went with it


async def test_a_grandchild_that_left_the_session_is_killed_too(tmp_path: Path) -> None:
    """Issue 21 (8): a grandchild started with ``setsid`` survived the group kill."""
    script = "setsid sleep 60 >/dev/null 2>&1 & echo $! > escaped.pid; sleep 60"
    result = await run_command(command("/bin/sh", "-c", script, timeout_s=2), workdir=tmp_path)
    assert result.timed_out
    escaped = int((tmp_path / "escaped.pid").read_text())
    assert await gone(escaped)


async def test_the_working_folder_stays_inside_and_secrets_stay_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 21 (8): ``cwd: /etc`` or ``../../..`` left the folder; MAGI_API_KEYS and ANTHROPIC_API_KEY passed."""
    for cwd in ("/etc", "../../..", "a/../../b", "~"):
        with pytest.raises(ValueError, match="leaves the working folder"):
            command(PY, "-V", cwd=cwd)
    for name in ("MAGI_API_KEYS", "ANTHROPIC_API_KEY", "GITHUB_TOKEN", "DB_PASSWORD", "magi_api_keys"):
        with pytest.raises(ValueError, match="secret"):
            command(PY, "-V", env=["PATH", name])
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "out").symlink_to("/etc")
    escaped = await run_command(command("/bin/pwd", cwd="out"), workdir=tmp_path / "work")
    assert escaped.error is not None and "leads out" in escaped.error and escaped.exit_code is None
    monkeypatch.setenv("MAGI_API_KEYS", "k-secret")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-secret")
    code = "import os, json; print(json.dumps(sorted(os.environ)))"
    shown = await run_command(command(PY, "-c", code), workdir=tmp_path)
    assert "k-secret" not in shown.stdout and "MAGI_API_KEYS" not in shown.stdout and "ANTHROPIC" not in shown.stdout
