"""``magi serve`` listens beyond the machine only where ``--host`` says (issue 21, 9).

The real command runs with ``--host 0.0.0.0`` and an API key; once it serves, ``ss -ltnp`` lists the
listening sockets of its whole process tree (its own Ray: GCS, raylet, workers, dashboard agent with
its Prometheus exporter, Serve's proxy and replicas). The only one on a non-loopback address may be
the HTTP port asked for; before, Ray's gRPC servers and three metrics exporters listened everywhere.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.ports import free_port

REPO = Path(__file__).resolve().parent.parent.parent
LOOPBACK = ("127.", "[::1]", "[::ffff:127.")
START_GUARD_S = 240  # far above a start here: only tells a hung start from a slow one


def _descendants(root: int) -> set[int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    found = {root}
    grew = True
    while grew:
        grew = False
        for pid, parent in parents.items():
            if parent in found and pid not in found:
                found.add(pid)
                grew = True
    return found


def _listeners(pids: set[int]) -> list[tuple[str, str]]:
    """(address:port, process name) of every TCP socket ``pids`` listen on."""
    table = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True, check=True).stdout
    found = []
    for line in table.splitlines():
        owners = {int(p) for p in re.findall(r"pid=(\d+)", line)}
        if owners & pids:
            names = re.findall(r'"([^"]+)"', line)
            found.append((line.split()[3], names[0] if names else "?"))
    return found


def test_magi_serve_listens_beyond_loopback_only_on_its_http_port(tmp_path: Path) -> None:
    if subprocess.run(["ss", "-V"], capture_output=True).returncode != 0:
        pytest.fail("ss (iproute2) is needed for this test: apt-get install iproute2", pytrace=False)
    port = free_port()
    env = {**os.environ, "MAGI_DATA_DIR": str(tmp_path / "magi-store"), "MAGI_API_KEYS": "listener-test-key"}
    env.pop("RAY_ADDRESS", None)
    server = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "serve", "--host", "0.0.0.0", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=(tmp_path / "stderr.log").open("w"),
        text=True,
        env=env,
        cwd=tmp_path,
        start_new_session=True,
    )
    try:
        assert server.stdout is not None
        started = time.monotonic()
        for line in server.stdout:
            if line.startswith("serving "):
                break
            assert time.monotonic() - started < START_GUARD_S, "magi serve did not start"
        else:
            pytest.fail(f"magi serve ended before serving (exit {server.wait()})")
        time.sleep(3)  # the dashboard agent opens its exporter a moment after the apps are ready
        listening = _listeners(_descendants(server.pid))
        assert any(address.endswith(f":{port}") for address, _ in listening), listening
        outside = [(a, n) for a, n in listening if not a.startswith(LOOPBACK)]
        assert outside and all(address == f"0.0.0.0:{port}" for address, _ in outside), outside
        server.send_signal(signal.SIGTERM)  # a service manager's stop: a clean shutdown, no stack dump
        assert server.wait(timeout=120) == 0
        said = (tmp_path / "stderr.log").read_text()
        assert "magi serve: stopping" in said and "SIGTERM received" not in said and "Traceback" not in said, said
    finally:
        _stop_group(server)


def _stop_group(server: subprocess.Popen[str]) -> None:
    """Stop what is left of the server's process group (nothing, after a clean SIGTERM)."""
    for sig in (signal.SIGINT, signal.SIGKILL):
        try:
            os.killpg(server.pid, sig)
        except ProcessLookupError:
            break  # the whole group is gone
        try:
            server.wait(timeout=60)
            break
        except subprocess.TimeoutExpired:
            continue
    server.wait()
