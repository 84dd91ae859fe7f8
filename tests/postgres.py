"""A real PostgreSQL 15 for the tests: one throwaway server per session, one fresh database per test.

Fixtures (loaded from ``tests/conftest.py`` through ``pytest_plugins``):

- ``postgres_server`` (session): the running server; ``.create_database()`` returns the URL of a new,
  empty database, ``.url(name)`` the URL of an existing one, ``.admin_url`` that of ``postgres``.
- ``postgres_url`` (function): a fresh database for this test, dropped afterwards.
- ``store_url`` (function, parametrised ``sqlite``/``postgresql``): the same test runs on both backends.

The server runs as the ``postgres`` system user (``initdb`` refuses root) in a temporary folder that
user owns, listening on a free 127.0.0.1 port with trust authentication; its socket stays in that
folder. Tests skip, saying why, only when the PostgreSQL binaries are not installed.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ports import free_port

PG_BIN = Path(os.environ.get("MAGI_TEST_PG_BIN", "/usr/lib/postgresql/15/bin"))
PG_USER = "postgres"


class PostgresServer:
    """A PostgreSQL cluster started by ``initdb`` + ``pg_ctl`` for this test session."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.data = root / "data"
        self.port = free_port()
        self.admin_url = self.url("postgres")

    def url(self, database: str) -> str:
        return f"postgresql+psycopg://{PG_USER}@127.0.0.1:{self.port}/{database}"

    def _run(self, *args: str) -> None:
        command = ["runuser", "-u", PG_USER, "--", *args] if os.geteuid() == 0 else list(args)
        done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=self.root)
        if done.returncode != 0:
            log = self.root / "server.log"
            tail = log.read_text(errors="replace")[-2000:] if log.is_file() else ""
            raise RuntimeError(
                f"{Path(args[0]).name} {' '.join(args[1:3])} failed ({done.returncode}): "
                f"{done.stderr or done.stdout}\n{tail}"
            )

    def start(self) -> None:
        self._run(
            str(PG_BIN / "initdb"),
            "-D",
            str(self.data),
            "-U",
            PG_USER,
            "--auth=trust",
            "--encoding=UTF8",
            "--locale=C.UTF-8",
        )
        self.resume()

    def resume(self) -> None:
        """Start the server on its existing data (after :meth:`stop`: a store that comes back)."""
        options = (
            f"-c listen_addresses=127.0.0.1 -c port={self.port} -c unix_socket_directories={self.root}"
            " -c fsync=off -c max_connections=200 -c shared_buffers=32MB"
        )
        self._run(
            str(PG_BIN / "pg_ctl"),
            "-D",
            str(self.data),
            "-o",
            options,
            "-l",
            str(self.root / "server.log"),
            "-w",
            "-t",
            "60",
            "start",
        )

    def stop(self) -> None:
        """Stop at once, as a crash would (``-m immediate``: no checkpoint, clients cut off)."""
        with contextlib.suppress(RuntimeError):
            self._run(str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def _admin(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(
            host="127.0.0.1", port=self.port, user=PG_USER, dbname="postgres", autocommit=True
        ) as conn:
            conn.execute(sql)  # type: ignore[arg-type]  # identifiers below are generated, never user input

    def create_database(self) -> str:
        name = f"t_{uuid.uuid4().hex[:16]}"
        self._admin(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def drop_database(self, url: str) -> None:
        name = url.rsplit("/", 1)[1]
        self._admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    if not (PG_BIN / "initdb").is_file() or not (PG_BIN / "pg_ctl").is_file():
        pytest.skip(
            f"PostgreSQL 15 binaries not found in {PG_BIN}: apt-get install -y postgresql-15 "
            "(.ci/run does this), or set MAGI_TEST_PG_BIN to their folder"
        )
    root = Path(tempfile.mkdtemp(prefix="magi-pg-"))
    if os.geteuid() == 0:
        entry = pwd.getpwnam(PG_USER)
        os.chown(root, entry.pw_uid, entry.pw_gid)
    server = PostgresServer(root)
    try:
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    url = postgres_server.create_database()
    yield url
    postgres_server.drop_database(url)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        (tmp_path / "store").mkdir(exist_ok=True)
        return f"sqlite:///{tmp_path / 'store' / 'magi.sqlite3'}"
    return str(request.getfixturevalue("postgres_url"))
