"""Artifacts: the files the systems produce (reports, exports), under keys like ``research/RUN/report.md``.

One small interface over a local folder (``<data_dir>/artifacts`` by default) or any fsspec URL
(``s3://bucket/magi``, ``memory://magi`` in tests), so a cluster can keep them where every node
and the user can reach them. A cluster with a PostgreSQL store and no ``artifacts_url`` keeps them in
the store (:class:`StoredArtifacts`): a file written by a replica on a node that later dies is still
there, which a node's own disk would not promise; files an earlier version left in
``<data_dir>/artifacts`` are still read from there. Keys are relative, ``/``-separated paths confined to the root: an
absolute path or a ``..`` segment is refused. Local writes are atomic (a temporary file renamed
into place), so a reader never sees half a file.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import fsspec
from fsspec.implementations.local import LocalFileSystem

from core.errors import ConfigError, InputError
from core.files import atomic_write_bytes, exclusive_write_bytes
from core.store import register_migration

if TYPE_CHECKING:
    from core.settings import Settings
    from core.store import Store

PARTIAL_PREFIX = ".magi-partial-"  # temporary files of atomic local writes; never a key


def check_key(key: str, *, prefix: bool = False) -> str:
    """``key`` when it stays inside the root, else an :class:`InputError` saying why."""
    what = "artifact prefix" if prefix else "artifact key"
    if not isinstance(key, str) or (not key and not prefix):
        raise InputError(f"{what} {key!r} is empty; use a relative path such as 'research/RUN_ID/report.md'")
    if key.startswith(("/", "\\")) or (len(key) > 1 and key[1] == ":") or "://" in key:
        raise InputError(f"{what} {key!r} is absolute; use a path relative to the artifacts root")
    if "\\" in key or "\x00" in key:
        raise InputError(f"{what} {key!r} holds a backslash or NUL; separate folders with '/'")
    segments = key.split("/") if key else []
    if prefix and segments and segments[-1] == "":
        segments = segments[:-1]  # "research/" names a folder
    if any(s in ("", ".", "..") for s in segments):
        raise InputError(f"{what} {key!r} has an empty, '.' or '..' segment; keys may not leave the artifacts root")
    if any(s.startswith(PARTIAL_PREFIX) for s in segments):
        raise InputError(f"{what} {key!r} uses the reserved prefix {PARTIAL_PREFIX!r}")
    return key


class Artifacts:
    """Files under one root URL; the methods take keys relative to it."""

    def __init__(self, url: str) -> None:
        self.url = url
        try:
            fs, root = fsspec.core.url_to_fs(url)
        except ImportError as err:
            raise ConfigError(
                f"artifacts URL {url!r} needs a package that is not installed ({err}); "
                "install it or set MAGI_ARTIFACTS_URL to a local folder"
            ) from err
        except ValueError as err:
            raise ConfigError(
                f"artifacts URL {url!r} is not usable ({err}); use a folder or an fsspec URL "
                "such as s3://bucket/prefix (MAGI_ARTIFACTS_URL)"
            ) from err
        self._fs: Any = fs
        self._root = str(root).rstrip("/")
        self._local = isinstance(fs, LocalFileSystem)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.url,))

    def _path(self, key: str) -> str:
        return f"{self._root}/{check_key(key)}"

    def url_for(self, key: str) -> str:
        """Where ``key`` lives, as a URL (``file:///...`` for the local folder)."""
        return str(self._fs.unstrip_protocol(self._path(key)))

    def put_bytes(self, key: str, data: bytes) -> str:
        """Write (or replace) ``key``; returns its URL."""
        path = self._path(key)
        if self._local:
            atomic_write_bytes(Path(path), data, temp_prefix=PARTIAL_PREFIX)
        else:
            self._fs.pipe_file(path, data)
        return self.url_for(key)

    def put_new(self, key: str, data: bytes) -> str | None:
        """Write ``key`` only when it does not exist; its URL, or None when the key is taken. Exclusive on
        the local folder (another writer's file is never replaced); on other filesystems a check before
        the write, which two writers racing on one key can both pass."""
        path = self._path(key)
        if self._local:
            written = exclusive_write_bytes(Path(path), data, temp_prefix=PARTIAL_PREFIX)
            return self.url_for(key) if written else None
        if self._fs.exists(path):
            return None
        self._fs.pipe_file(path, data)
        return self.url_for(key)

    def put_text(self, key: str, text: str) -> str:
        return self.put_bytes(key, text.encode("utf-8"))

    def get_bytes(self, key: str) -> bytes:
        path = self._path(key)
        try:
            return bytes(self._fs.cat_file(path))
        except (FileNotFoundError, IsADirectoryError) as err:
            raise InputError(f"artifact {key!r} does not exist under {self.url}; list(prefix) shows what does") from err

    def get_text(self, key: str) -> str:
        return self.get_bytes(key).decode("utf-8")

    def exists(self, key: str) -> bool:
        path = self._path(key)
        return bool(self._fs.isfile(path))

    def list(self, prefix: str = "") -> list[str]:
        """Keys starting with ``prefix`` (a string prefix: ``research/r1`` also matches ``research/r10/...``)."""
        check_key(prefix, prefix=True)
        folder = prefix.rsplit("/", 1)[0] if "/" in prefix else ""
        base = f"{self._root}/{folder}" if folder else self._root
        if not self._fs.isdir(base):
            return []
        keys = []
        for path in self._fs.find(base):
            key = str(path)[len(self._root) + 1 :]
            if key.startswith(prefix) and not key.rsplit("/", 1)[-1].startswith(PARTIAL_PREFIX):
                keys.append(key)
        return sorted(keys)

    def modified(self, key: str) -> datetime | None:
        """When ``key`` was last written (UTC), when the filesystem says; None if it does not."""
        try:
            info = self._fs.info(self._path(key))
        except (OSError, ValueError):
            return None
        stamp = info.get("mtime") or info.get("LastModified") or info.get("created")
        if isinstance(stamp, datetime):
            return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)
        if isinstance(stamp, int | float):
            return datetime.fromtimestamp(float(stamp), tz=UTC)
        return None

    def delete(self, key: str) -> bool:
        """Remove ``key``; False when it did not exist."""
        path = self._path(key)
        if not self._fs.isfile(path):
            return False
        self._fs.rm_file(path)
        return True


_ARTIFACTS_TABLE = "CREATE TABLE artifacts (key TEXT PRIMARY KEY, data {data} NOT NULL, modified TEXT NOT NULL)"
register_migration(
    "artifacts",
    1,
    _ARTIFACTS_TABLE.format(data="BLOB"),
    variants={"postgresql": _ARTIFACTS_TABLE.format(data="BYTEA")},
)


class StoredArtifacts(Artifacts):
    """Artifacts as rows of the project's store (table ``artifacts``), for a cluster whose nodes share
    only the store; keys, answers and errors as :class:`Artifacts`. ``earlier`` is the folder files went
    to before (read, listed and deleted too, never written)."""

    def __init__(self, store: Store, earlier: Artifacts | None = None) -> None:
        store.migrate()  # creates the table if this process's store opened before this module was imported
        self._store = store
        self._earlier = earlier
        self.url = "store:artifacts"
        self._local = False

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self._store, self._earlier))

    def url_for(self, key: str) -> str:
        return f"{self.url}/{check_key(key)}"

    def put_bytes(self, key: str, data: bytes) -> str:
        import sqlalchemy as sa

        with self._store.transaction() as conn:
            conn.execute(
                sa.text(
                    "INSERT INTO artifacts (key, data, modified) VALUES (:key, :data, :at) "
                    "ON CONFLICT (key) DO UPDATE SET data = excluded.data, modified = excluded.modified"
                ),
                {"key": check_key(key), "data": data, "at": datetime.now(UTC).isoformat()},
            )
        return self.url_for(key)

    def put_new(self, key: str, data: bytes) -> str | None:
        """Write ``key`` only when no row (nor an earlier file) has it: the insert is refused by the key
        itself, so two writers racing on one key never both succeed."""
        import sqlalchemy as sa

        if self._earlier is not None and self._earlier.exists(key):
            return None
        with self._store.transaction() as conn:
            added = conn.execute(
                sa.text(
                    "INSERT INTO artifacts (key, data, modified) VALUES (:key, :data, :at) ON CONFLICT (key) DO NOTHING"
                ),
                {"key": check_key(key), "data": data, "at": datetime.now(UTC).isoformat()},
            ).rowcount
        return self.url_for(key) if added else None

    def get_bytes(self, key: str) -> bytes:
        rows = self._store.query("SELECT data FROM artifacts WHERE key = :key", {"key": check_key(key)})
        if rows:
            return bytes(rows[0][0])
        if self._earlier is not None and self._earlier.exists(key):
            return self._earlier.get_bytes(key)
        raise InputError(f"artifact {key!r} does not exist in the store; list(prefix) shows what does")

    def exists(self, key: str) -> bool:
        if self._store.query("SELECT 1 FROM artifacts WHERE key = :key", {"key": check_key(key)}):
            return True
        return self._earlier is not None and self._earlier.exists(key)

    def list(self, prefix: str = "") -> list[str]:
        check_key(prefix, prefix=True)
        rows = self._store.query(
            "SELECT key FROM artifacts WHERE substr(key, 1, :n) = :prefix", {"n": len(prefix), "prefix": prefix}
        )
        keys = {str(row[0]) for row in rows}
        if self._earlier is not None:
            keys.update(self._earlier.list(prefix))
        return sorted(keys)

    def modified(self, key: str) -> datetime | None:
        rows = self._store.query("SELECT modified FROM artifacts WHERE key = :key", {"key": check_key(key)})
        if rows:
            return datetime.fromisoformat(str(rows[0][0]))
        return self._earlier.modified(key) if self._earlier is not None else None

    def delete(self, key: str) -> bool:
        import sqlalchemy as sa

        with self._store.transaction() as conn:
            gone = conn.execute(sa.text("DELETE FROM artifacts WHERE key = :key"), {"key": check_key(key)}).rowcount
        earlier = self._earlier is not None and self._earlier.delete(key)
        return bool(gone) or earlier


def open_artifacts(settings: Settings) -> Artifacts:
    """The artifact store the settings name: ``artifacts_url``; else, with a ``store_url`` (a cluster's
    PostgreSQL), the store itself; else ``<data_dir>/artifacts``."""
    if settings.artifacts_url:
        return Artifacts(settings.artifacts_url)
    root = Path(settings.data_dir) / "artifacts"
    if settings.store_url:
        from core.store import open_store

        return StoredArtifacts(open_store(settings), Artifacts(str(root)) if root.is_dir() else None)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ConfigError(
            f"cannot create the artifacts folder {root}: {err.strerror}; set MAGI_DATA_DIR to a "
            "writable folder or MAGI_ARTIFACTS_URL to another location"
        ) from err
    return Artifacts(str(root))


__all__ = [
    "PARTIAL_PREFIX",
    "Artifacts",
    "StoredArtifacts",
    "check_key",
    "open_artifacts",
]
