"""Run a plugin's bridge command safely and report what happened as data.

- No shell: the argv list is executed as is (``{input_file}`` in an argument is the only substitution).
- The timeout measures the command itself: it ends when the command exits, even if a child it left
  behind still holds the output pipes (asyncio's ``Process.wait`` would wait for those too).
- Every process the command starts is ended with it, on timeout and after a normal exit: the command
  runs in a PID namespace of its own (magi/isolation.py), which the kernel empties when the command
  ends, so a grandchild that called ``setsid`` and cleared its environment dies too; it sees no other
  process's ``/proc`` (its parent's environment included). Where namespaces are not allowed it runs
  in its own session under a launcher, and each process carries a run tag in its environment, so a
  grandchild that called ``setsid`` (out of the group, reparented away) is still found in /proc.
- It runs in ``workdir / cwd`` and nowhere else: a ``cwd`` (or a link) leading out is an error.
- Only the environment variables the plugin allows are passed, never a secret (magi/plugins.py), and
  the command's parent (``unshare``, or the launcher) starts with that environment only.
- stdout and stderr are read continuously (a chatty command never blocks on a full pipe) and kept up
  to ``max_output_bytes`` each; the rest is counted and dropped, and the result says it was cut.
- The result (:class:`CommandResult`) carries the exit code, both outputs, whether it timed out and
  why it could not start, for the council and for one-line error messages.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

from core.models import CamelModel
from magi.isolation import Isolation, Kind, isolation
from magi.plugins import BridgeCommand, is_secret_variable

CHUNK = 65536
DRAIN_GRACE_S = 2.0  # after the command exits, how long its output pipes may stay open (held by children)
INPUT_FILE = "{input_file}"
RUN_TAG = "MAGI_BRIDGE_RUN"  # in every process of one run's environment: how its stray descendants are found
EXIT_POLL_S = 0.02


class CommandResult(CamelModel):
    argv: list[str]
    cwd: str
    exit_code: int | None = None
    stdout: str = ""
    stderr: str = ""
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    timed_out: bool = False
    duration_ms: int = 0
    error: str | None = None  # could not start (program missing, folder missing, no permission)
    isolation: Kind = "pid-namespace"  # how it was kept apart (magi/isolation.py)

    @property
    def ok(self) -> bool:
        return self.error is None and not self.timed_out and self.exit_code == 0

    def describe(self) -> str:
        """One line: what ran and how it ended (the last stderr line when it failed)."""
        program = self.argv[0] if self.argv else "?"
        if self.error is not None:
            return f"{program}: {self.error}"
        if self.timed_out:
            return f"{program} timed out after {self.duration_ms / 1000:.1f} s and was killed with its children"
        if self.exit_code != 0:
            tail = next((line for line in reversed(self.stderr.splitlines()) if line.strip()), "")
            return f"{program} exited with code {self.exit_code}" + (f": {tail.strip()[:300]}" if tail else "")
        return f"{program} succeeded"


async def _drain(stream: asyncio.StreamReader | None, cap: int) -> tuple[bytes, int]:
    """(the first ``cap`` bytes, the total size) of a stream read to its end."""
    if stream is None:
        return b"", 0
    kept = bytearray()
    total = 0
    while chunk := await stream.read(CHUNK):
        total += len(chunk)
        if len(kept) < cap:
            kept += chunk[: cap - len(kept)]
    return bytes(kept), total


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def tagged_processes(tag: str) -> list[int]:
    """Processes whose environment holds ``RUN_TAG=tag``: a run's descendants, wherever they moved."""
    marker = f"{RUN_TAG}={tag}".encode()
    found = []
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else []:
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:  # gone, or not ours to read
            continue
        if marker in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def _end_run(pid: int, tag: str) -> None:
    """SIGKILL the command's process group and every process tagged with its run, until none is left."""
    _kill_group(pid)
    for _ in range(20):  # a process may fork while it is being killed: look again
        strays = tagged_processes(tag)
        if not strays:
            return
        for stray in strays:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(stray, signal.SIGKILL)
        time.sleep(0.01)


async def _exited(process: asyncio.subprocess.Process, timeout_s: float) -> bool:
    """Whether the command itself exited within ``timeout_s`` (its pipes may still be open)."""
    deadline = time.monotonic() + timeout_s
    while process.returncode is None:
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(EXIT_POLL_S)
    return True


def _program(name: str, cwd: Path, env: Mapping[str, str]) -> Path | None:
    """The file ``name`` runs: a path (relative to the command's folder) or looked up on the PATH the
    command is given (the system's default path without one), as the command itself would find it."""
    if "/" in name:
        path = Path(name) if Path(name).is_absolute() else cwd / name
        return path if path.is_file() else None
    found = shutil.which(name, path=env.get("PATH", os.defpath))
    return Path(found) if found else None


async def run_command(
    command: BridgeCommand,
    *,
    workdir: Path,
    input_text: str | None = None,
    extra_args: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
    isolated: Isolation | None = None,
) -> CommandResult:
    """Run ``command`` in ``workdir / command.cwd``; never raises for the command's own failures.
    ``isolated``: how (default: the strongest this machine allows, magi/isolation.py)."""
    isolated = isolated or isolation()
    source = os.environ if environ is None else environ
    env = {name: source[name] for name in command.env if name in source and not is_secret_variable(name)}
    tag = uuid.uuid4().hex
    env[RUN_TAG] = tag
    cwd = (workdir / command.cwd).resolve()
    argv = [*command.argv, *extra_args]
    started = time.monotonic()
    temp: Path | None = None
    if command.input == "file":
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", suffix=".txt", delete=False) as handle:
            handle.write(input_text or "")
            temp = Path(handle.name)
        argv = [a.replace(INPUT_FILE, str(temp)) for a in argv]
    result = CommandResult(argv=argv, cwd=str(cwd), isolation=isolated.kind)
    try:
        if not cwd.is_relative_to(workdir.resolve()):
            result.error = f"working folder {command.cwd!r} leads out of {workdir}; keep it inside"
            return result
        if not cwd.is_dir():
            result.error = f"working folder {cwd} does not exist"
            return result
        program = _program(argv[0], cwd, env)
        if program is None:
            result.error = f"program not found: {argv[0]} (not on PATH={env.get('PATH', '(not passed)')})"
            return result
        if not os.access(program, os.X_OK):
            result.error = f"cannot execute {argv[0]}: Permission denied"
            return result
        try:
            process = await asyncio.create_subprocess_exec(
                *isolated.argv([str(program), *argv[1:]]),
                stdin=asyncio.subprocess.PIPE if command.input == "stdin" else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=cwd,
                env=env,
                start_new_session=True,
            )
        except FileNotFoundError:
            result.error = f"program not found: {argv[0]} (not on PATH={env.get('PATH', '(not passed)')})"
            return result
        except PermissionError as exc:
            result.error = f"cannot execute {argv[0]}: {exc.strerror or exc}"
            return result
        cap = command.max_output_bytes
        readers = [
            asyncio.ensure_future(_drain(process.stdout, cap)),
            asyncio.ensure_future(_drain(process.stderr, cap)),
        ]
        if command.input == "stdin" and process.stdin is not None:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                process.stdin.write((input_text or "").encode("utf-8"))
                await process.stdin.drain()
            process.stdin.close()
        try:
            result.timed_out = not await _exited(process, command.timeout_s)
        except asyncio.CancelledError:
            _end_run(process.pid, tag)
            raise
        await asyncio.to_thread(_end_run, process.pid, tag)  # done or out of time: nothing it started outlives it
        if result.timed_out:
            await process.wait()
        done, pending = await asyncio.wait(readers, timeout=DRAIN_GRACE_S)
        for task in pending:
            task.cancel()
        (out, out_total), (err, err_total) = (r.result() if r in done else (b"", 0) for r in readers)
        result.exit_code = process.returncode
        result.stdout = out.decode("utf-8", "replace")
        result.stderr = err.decode("utf-8", "replace")
        result.stdout_bytes, result.stderr_bytes = out_total, err_total
        result.stdout_truncated, result.stderr_truncated = out_total > cap, err_total > cap
        return result
    finally:
        result.duration_ms = int((time.monotonic() - started) * 1000)
        if temp is not None:
            temp.unlink(missing_ok=True)


__all__ = ["CHUNK", "DRAIN_GRACE_S", "INPUT_FILE", "RUN_TAG", "CommandResult", "run_command", "tagged_processes"]
