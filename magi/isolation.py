"""How a plugin's command is kept apart from the process that runs it (magi/executor.py).

A command runs inside a PID namespace of its own (util-linux ``unshare --pid --fork --mount-proc``,
as root or, for another user, inside a user namespace):

- it sees only its own processes: ``/proc`` is the namespace's, so neither its parent (``$PPID`` is 0)
  nor the service, nor any other process, can be read, their environment included;
- when it ends, or is killed, the kernel kills every process left in the namespace: a grandchild
  that called ``setsid`` and cleared its environment (and with it the run tag the executor looks
  for) dies with it;
- ``unshare`` itself is started with the allow-listed environment only, so the command's parent holds
  no secret either.

Where namespaces are not allowed (a container without the capability, a kernel without user
namespaces), commands run in a session of their own under a small launcher started with the
allow-listed environment (its parent's ``/proc/$PPID/environ`` holds nothing), and descendants are
found by their run tag: that fallback cannot stop a process that clears its environment and leaves
the session, nor one that reads another process's ``/proc``. It is logged once as a warning, named in
every :class:`~magi.executor.CommandResult` (``isolation``) and by ``magi doctor``.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from typing import Literal

log = logging.getLogger(__name__)
Kind = Literal["pid-namespace", "session"]
PROBE_TIMEOUT_S = 30.0
# The fallback's launcher: the command's parent, started with the allow-listed environment only. It
# forks the command, waits, and exits as the command did (128 + N when a signal N ended it).
LAUNCHER = (
    "import os, sys\n"
    "pid = os.fork()\n"
    "if pid == 0:\n"
    "    try:\n"
    "        os.execv(sys.argv[1], sys.argv[1:])\n"
    "    finally:\n"
    "        os._exit(127)\n"
    "code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])\n"
    "sys.exit(code if code >= 0 else 128 - code)\n"
)


@dataclass(frozen=True)
class Isolation:
    """How commands run on this machine: ``prefix`` goes before the command's argv."""

    kind: Kind
    prefix: tuple[str, ...]
    note: str = ""  # why a weaker kind was taken

    def argv(self, command: list[str]) -> list[str]:
        return [*self.prefix, *command]


def _namespace_prefixes() -> list[tuple[str, ...]]:
    unshare = shutil.which("unshare")
    if unshare is None:
        return []
    pid = (unshare, "--pid", "--fork", "--kill-child", "--mount-proc")
    user = (unshare, "--user", "--map-root-user", "--pid", "--fork", "--kill-child", "--mount-proc")
    return [pid, user] if os.geteuid() == 0 else [user]


def _works(prefix: tuple[str, ...]) -> str | None:
    """None when a command runs under ``prefix`` here, else why not."""
    true = shutil.which("true") or "/bin/true"
    try:
        done = subprocess.run([*prefix, "--", true], env={}, capture_output=True, timeout=PROBE_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if done.returncode != 0:
        return done.stderr.decode("utf-8", "replace").strip() or f"exit code {done.returncode}"
    return None


def session_launcher() -> Isolation:
    """The fallback (see the module docstring)."""
    return Isolation("session", (sys.executable, "-I", "-S", "-c", LAUNCHER))


@cache
def isolation() -> Isolation:
    """The strongest isolation this machine allows, found once per process by trying it."""
    reasons = []
    for prefix in _namespace_prefixes():
        problem = _works(prefix)
        if problem is None:
            return Isolation("pid-namespace", (*prefix, "--"))
        reasons.append(problem)
    note = "; ".join(reasons) or "util-linux unshare is not installed"
    log.warning(
        "plugin commands run without a PID namespace (%s): a descendant that leaves its session and clears "
        "its environment may outlive its command, and a command can read other processes' /proc",
        note,
    )
    fallback = session_launcher()
    return Isolation(fallback.kind, fallback.prefix, note)


__all__ = ["LAUNCHER", "Isolation", "Kind", "isolation", "session_launcher"]
