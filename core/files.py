"""Atomic file writes: a reader sees the old file or the new one, never half of one; output folders
checked writable before any work is spent on what goes into them."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from core.errors import InputError

TEMP_SUFFIX = ".tmp"
MAX_INPUT_BYTES = 16 * 1024 * 1024  # an input file (ideas, batch, tool input) larger than this is refused


def read_input_text(path: Path, what: str, max_bytes: int = MAX_INPUT_BYTES) -> str:
    """A user's input file as UTF-8 text, read at most ``max_bytes`` + 1 bytes: ``/dev/zero`` or an
    endless pipe is refused after that much, never read until memory runs out. A named pipe nobody
    writes to is refused at once (a plain open would wait for a writer forever)."""
    try:
        data = _read_bounded(path, max_bytes + 1)
    except OSError as exc:
        raise InputError(f"cannot read {what} {path}: {exc.strerror or exc}; give a readable file") from None
    if data is None:
        raise InputError(f"{what} {path} is a named pipe nobody writes to; give a file, or write to the pipe first")
    if len(data) > max_bytes:
        raise InputError(f"{what} {path} is larger than {max_bytes} bytes; split it into smaller files")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{what} {path} is not UTF-8 text; save it as UTF-8") from None


def _read_bounded(path: Path, limit: int) -> bytes | None:
    """At most ``limit`` bytes of ``path``; None for a FIFO without a writer. Opened without blocking
    (a FIFO opens at once either way), then read: at once end-of-file from a FIFO means nobody writes,
    "would block" means a writer is there and the rest is read as usual."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb", buffering=0) as file:
        data = b""
        if stat.S_ISFIFO(os.fstat(fd).st_mode):
            try:
                data = os.read(fd, limit)
            except BlockingIOError:
                data = b""  # a writer, nothing written yet
            else:
                if not data:
                    return None
        os.set_blocking(fd, True)
        while len(data) < limit and (chunk := file.read(limit - len(data))):
            data += chunk
        return data


def _synced_temp(path: Path, data: bytes, temp_prefix: str | None) -> str:
    """``data`` in a new temp file beside ``path``, flushed to disk; its path (the caller removes it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    prefix = temp_prefix if temp_prefix is not None else f".{path.name}."
    fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=TEMP_SUFFIX, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return tmp


def atomic_write_bytes(path: Path, data: bytes, *, temp_prefix: str | None = None) -> Path:
    """Write beside the target, flush to disk, then rename over it; ``temp_prefix`` names the temp file."""
    tmp = _synced_temp(path, data, temp_prefix)
    try:
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def exclusive_write_bytes(path: Path, data: bytes, *, temp_prefix: str | None = None) -> bool:
    """Like :func:`atomic_write_bytes`, but only when ``path`` does not exist yet: the complete file is
    linked into place, which fails if another writer got there first (False; nothing is written)."""
    tmp = _synced_temp(path, data, temp_prefix)
    try:
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        return True
    finally:
        Path(tmp).unlink(missing_ok=True)


def atomic_write_text(path: Path, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def remove_stale_temp_files(folder: Path) -> list[Path]:
    """Delete the temp files a killed writer left in ``folder``. Only call it when no other writer can
    be working in that folder (e.g. before redoing a job that owns the folder)."""
    stale = [p for p in folder.glob(f".*{TEMP_SUFFIX}") if p.is_file()] if folder.is_dir() else []
    for p in stale:
        p.unlink(missing_ok=True)
    return stale


def ensure_writable_dir(path: Path, what: str = "output folder") -> bool:
    """Create ``path`` if needed and prove a file can be written in it (a temp file, removed at once).

    Called before a run starts, so a bad ``--out`` costs nothing. Returns True when the folder was
    created here (the caller may remove it again if the run leaves it empty). Raises
    :class:`InputError` naming the folder, the reason and the fix.
    """
    existed = path.is_dir()
    if path.exists() and not existed:
        raise InputError(f"{what} {path} is a file, not a folder; pass a folder (it is created if missing)")
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".magi-write-probe.", suffix=TEMP_SUFFIX, dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        step = "creating a file in it" if path.is_dir() else "creating it"
        raise InputError(
            f"{what} {path} is not writable ({exc.strerror or type(exc).__name__} when {step}); "
            "pass a folder you can write to"
        ) from None
    return not existed


__all__ = [
    "MAX_INPUT_BYTES",
    "TEMP_SUFFIX",
    "atomic_write_bytes",
    "atomic_write_text",
    "ensure_writable_dir",
    "exclusive_write_bytes",
    "read_input_text",
    "remove_stale_temp_files",
]
