"""The bridge command executor with real processes: no shell, group kill on timeout, caps, env allow-list."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from magi.executor import run_command
from magi.isolation import Isolation, isolation, session_launcher
from magi.plugins import BridgeCommand

PY = sys.executable


def command(*argv: str, **options: object) -> BridgeCommand:
    return BridgeCommand.model_validate({"argv": list(argv), **options})


def running(marker: str) -> list[int]:
    """Processes of this machine (seen from outside any namespace) whose command line holds ``marker``;
    a zombie waiting for its reaper counts as gone. A command's own pids are those of its namespace,
    so processes are found by what they run, not by the pid they saw."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker.encode() not in (entry / "cmdline").read_bytes():
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            found.append(int(entry.name))
    return found


async def gone(marker: str) -> bool:
    for _ in range(200):  # SIGKILL is asynchronous: give the kernel a moment
        if not running(marker):
            return True
        await asyncio.sleep(0.05)
    return False


def sleeper(marker: str, ready: str = "") -> list[str]:
    """A python process that sleeps, named by ``marker`` in its command line (and makes ``ready`` first)."""
    touch = f"open({ready!r}, 'w').close(); " if ready else ""
    return [PY, "-c", f"{touch}import time; time.sleep(300)", marker]


async def test_timeout_kills_the_child_and_the_grandchild(tmp_path: Path) -> None:
    marker = f"magi-timeout-{uuid.uuid4().hex}"
    script = tmp_path / "spawner.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import os, subprocess, sys, time
            grandchild = subprocess.Popen({sleeper(marker + "-grandchild")!r})
            print("started", flush=True)
            time.sleep(120)
            """
        )
    )
    result = await run_command(command(PY, str(script), marker, timeout_s=4), workdir=tmp_path)
    assert result.timed_out and not result.ok
    assert "timed out" in result.describe() and "children" in result.describe()
    assert result.stdout.strip() == "started"
    assert await gone(marker)


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
    marker = f"magi-left-{uuid.uuid4().hex}"
    script = f"({shlex.join(sleeper(marker, 'ready'))} &); while [ ! -e ready ]; do sleep 0.05; done; echo done"
    result = await run_command(command("/bin/sh", "-c", script, timeout_s=8), workdir=tmp_path)
    assert result.ok and not result.timed_out and result.stdout.strip() == "done", result  # ended with the shell
    assert await gone(marker)  # and what it left behind went with it


@pytest.mark.parametrize("isolated", [isolation(), session_launcher()], ids=lambda i: i.kind)
async def test_a_grandchild_that_left_the_session_is_killed_too(tmp_path: Path, isolated: Isolation) -> None:
    """Issue 21 (8): a grandchild started with ``setsid`` survived the group kill (found by its run tag
    where no namespace holds it)."""
    marker = f"magi-setsid-{uuid.uuid4().hex}"
    script = f"setsid {shlex.join(sleeper(marker, 'ready'))} >/dev/null 2>&1 & sleep 60"
    result = await run_command(command("/bin/sh", "-c", script, timeout_s=2), workdir=tmp_path, isolated=isolated)
    assert result.timed_out and (tmp_path / "ready").exists() and result.isolation == isolated.kind
    assert await gone(marker)


def test_this_machine_gives_every_command_a_pid_namespace() -> None:
    """The machines this project runs and is tested on allow it (root in a container with the
    capability, or user namespaces); a machine that does not is named here rather than passing quietly."""
    found = isolation()
    assert found.kind == "pid-namespace", f"commands run without a PID namespace here: {found.note}"


async def test_a_setsid_grandchild_that_clears_its_environment_dies_with_the_command(tmp_path: Path) -> None:
    """Issue 40 (7): ``setsid env -i ...`` dropped the run tag with the environment and survived (3 of 3)."""
    marker = f"magi-escape-{uuid.uuid4().hex}"
    grandchild = shlex.join(["setsid", "env", "-i", *sleeper(marker, "ready")])
    script = f"{grandchild} >/dev/null 2>&1 & while [ ! -e ready ]; do sleep 0.05; done; echo started"
    result = await run_command(command("/bin/sh", "-c", script, timeout_s=60), workdir=tmp_path)
    assert result.ok and result.stdout.strip() == "started", result
    assert not running(marker), "the grandchild outlived its command"


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


READER = """
import asyncio, json, sys
from pathlib import Path
from magi.executor import run_command
from magi.isolation import isolation, session_launcher
from magi.plugins import BridgeCommand

script = (
    "cat /proc/$PPID/environ; echo; echo ALL; for f in /proc/[0-9]*/environ; do cat $f; done; echo; echo ppid=$PPID"
)
command = BridgeCommand.model_validate({"argv": ["/bin/sh", "-c", script], "env": ["PATH"]})
chosen = session_launcher() if sys.argv[1] == "session" else isolation()
result = asyncio.run(run_command(command, workdir=Path.cwd(), isolated=chosen))
print(json.dumps({"stdout": result.stdout, "isolation": result.isolation}))
"""


@pytest.mark.parametrize("mode", ["strongest", "session"])
def test_a_command_cannot_read_the_secrets_of_the_process_that_runs_it(tmp_path: Path, mode: str) -> None:
    """Issue 40 (7): the command read MAGI_API_KEYS and the model keys from ``/proc/$PPID/environ``. The
    reader runs under a process whose environment held the secrets from its start (as a replica's does).
    In a PID namespace it sees no process outside its own; the fallback (a launcher started without the
    secrets, where namespaces are not allowed) keeps them from its parent only: any process of the same
    user (here root) may read another's environment, which only a namespace hides (magi doctor says which
    one a machine gets)."""
    secrets = {"MAGI_API_KEYS": "magi-key-" + uuid.uuid4().hex, "ANTHROPIC_API_KEY": "sk-ant-" + uuid.uuid4().hex}
    done = subprocess.run(
        [PY, "-c", READER, mode],
        cwd=tmp_path,
        env={**os.environ, **secrets, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    shown = json.loads(done.stdout.strip().splitlines()[-1])
    assert shown["stdout"].strip(), done.stderr  # the command ran and read what it could
    parent, everything = shown["stdout"].split("\nALL\n", 1)
    readable = everything if shown["isolation"] == "pid-namespace" else parent
    for value in secrets.values():
        assert value not in readable, f"{mode}: a secret read through /proc"
    if shown["isolation"] == "pid-namespace":
        assert "ppid=0" in shown["stdout"]  # its parent is outside its world


def test_magi_doctor_names_how_plugin_commands_are_kept_apart() -> None:
    from cli.doctor import check_plugin_isolation

    check = check_plugin_isolation()
    assert (check.status, check.detail) == ("ok", "each plugin command runs in a PID namespace of its own")
