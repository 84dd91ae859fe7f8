"""Make the fixture stores of one release: ``tests/data/stores/<release>/{sqlite,postgresql}/``.

    .venv/bin/python scripts/make_store_fixture.py 0.2.0                 # the tag v0.2.0
    .venv/bin/python scripts/make_store_fixture.py 0.4.0 --ref HEAD      # the release being cut
    .venv/bin/python scripts/make_store_fixture.py 0.3.0 --backend sqlite

The release's code is exported from git (``git archive <ref>``, by default the tag ``v<release>``)
into a temporary checkout with a virtual environment of its own, and ``scripts/store_fixture_writer.py``
runs there: it writes sessions, research runs, critic evaluations (and asks the council) through that
release's own commands and scripted models, then describes what the store holds in ``manifest.json``,
read with the same release's code. SQLite gives ``magi.sqlite3`` (checkpointed, one file); PostgreSQL
runs on a throwaway server and gives ``dump.sql`` (``pg_dump``, plain SQL). Later releases must read
every one of them back in full (``tests/unit/test_store_fixtures.py``).

The checkout and its environment are kept under ``--work`` (default: the system's temporary folder)
and reused while the commit is the same, since installing a release takes minutes. Each command that
uses Ray starts and stops a local Ray of its own.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STORES = ROOT / "tests" / "data" / "stores"
WRITER = ROOT / "scripts" / "store_fixture_writer.py"
KEPT_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "PIP_FIND_LINKS", "PIP_INDEX_URL", "PIP_NO_INDEX")


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()


def prepare(ref: str, work: Path) -> tuple[Path, Path]:
    """The release's checkout and its Python, made once per commit."""
    commit = git("rev-parse", f"{ref}^{{commit}}")
    src, venv = work / "src", work / "venv"
    stamp = work / "commit"
    if stamp.is_file() and stamp.read_text().strip() == commit and (venv / "bin" / "magi").is_file():
        return src, venv / "bin" / "python"
    shutil.rmtree(work, ignore_errors=True)
    src.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", commit], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    print(f"installing {ref} ({commit[:10]}) into {venv} (minutes)", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, "--upgrade", "pip"], check=True)
    subprocess.run([*pip, "-e", str(src)], check=True)
    stamp.write_text(commit + "\n")
    return src, venv / "bin" / "python"


def writer_env(release: str, store: dict[str, str]) -> dict[str, str]:
    """A clean environment: nothing of the caller's settings, Ray or keys leaks into the release."""
    env = {k: v for k, v in os.environ.items() if k in KEPT_ENV}
    env.update(store)
    env["MAGI_FIXTURE_RELEASE"] = release
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def run_writer(src: Path, python: Path, env: dict[str, str], manifest: Path) -> None:
    shutil.copy(WRITER, src / "store_fixture_writer.py")
    subprocess.run([str(python), "store_fixture_writer.py", str(manifest)], cwd=src, env=env, check=True)


def one_file(db: Path) -> None:
    """Fold the write-ahead log into the file and leave it in rollback-journal mode: one file to commit."""
    conn = sqlite3.connect(db)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA journal_mode=DELETE")
        conn.execute("VACUUM")
    finally:
        conn.close()


def make_sqlite(release: str, src: Path, python: Path, out: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="magi-fixture-") as tmp:
        data = Path(tmp) / "data"
        run_writer(src, python, writer_env(release, {"MAGI_DATA_DIR": str(data)}), Path(tmp) / "manifest.json")
        one_file(data / "magi.sqlite3")
        out.mkdir(parents=True, exist_ok=True)
        shutil.copy(data / "magi.sqlite3", out / "magi.sqlite3")
        shutil.copy(Path(tmp) / "manifest.json", out / "manifest.json")


def make_postgresql(release: str, src: Path, python: Path, out: Path) -> None:
    sys.path.insert(0, str(ROOT))
    from tests.postgres import PG_BIN, PostgresServer

    root = Path(tempfile.mkdtemp(prefix="magi-fixture-pg-"))
    if os.geteuid() == 0:
        import pwd

        entry = pwd.getpwnam("postgres")
        os.chown(root, entry.pw_uid, entry.pw_gid)
    server = PostgresServer(root)
    try:
        server.start()
        url = server.create_database()
        with tempfile.TemporaryDirectory(prefix="magi-fixture-") as tmp:
            env = writer_env(release, {"MAGI_STORE_URL": url, "MAGI_DATA_DIR": str(Path(tmp) / "data")})
            run_writer(src, python, env, Path(tmp) / "manifest.json")
            out.mkdir(parents=True, exist_ok=True)
            shutil.copy(Path(tmp) / "manifest.json", out / "manifest.json")
        database = url.rsplit("/", 1)[1]
        dump = subprocess.run(
            [
                str(PG_BIN / "pg_dump"),
                "--no-owner",
                "--no-privileges",
                "--format=plain",
                "--host=127.0.0.1",
                f"--port={server.port}",
                "--username=postgres",
                database,
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        (out / "dump.sql").write_text(dump, encoding="utf-8")
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("release", help="the release these stores stand for, e.g. 0.2.0")
    parser.add_argument("--ref", help="the git commit to run (default: the tag v<release>)")
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--work", type=Path, help="where the checkout and its environment are kept")
    args = parser.parse_args()
    work = args.work or Path(tempfile.gettempdir()) / "magi-store-fixtures" / args.release
    src, python = prepare(args.ref or f"v{args.release}", work)
    target = STORES / args.release
    if args.backend in ("sqlite", "both"):
        make_sqlite(args.release, src, python, target / "sqlite")
        print(f"wrote {target / 'sqlite'}")
    if args.backend in ("postgresql", "both"):
        make_postgresql(args.release, src, python, target / "postgresql")
        print(f"wrote {target / 'postgresql'}")
    written = target / ("postgresql" if args.backend == "postgresql" else "sqlite") / "manifest.json"
    made = json.loads(written.read_text(encoding="utf-8"))
    print(f"release {made['release']}: {'; '.join(made['ran'])}")


if __name__ == "__main__":
    main()
