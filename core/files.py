"""Atomic file writes: a reader sees the old file or the new one, never half of one."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

TEMP_SUFFIX = ".tmp"


def atomic_write_bytes(path: Path, data: bytes, *, temp_prefix: str | None = None) -> Path:
    """Write beside the target, flush to disk, then rename over it; ``temp_prefix`` names the temp file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    prefix = temp_prefix if temp_prefix is not None else f".{path.name}."
    fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=TEMP_SUFFIX, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_write_text(path: Path, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def remove_stale_temp_files(folder: Path) -> list[Path]:
    """Delete the temp files a killed writer left in ``folder``. Only call it when no other writer can
    be working in that folder (e.g. before redoing a job that owns the folder)."""
    stale = [p for p in folder.glob(f".*{TEMP_SUFFIX}") if p.is_file()] if folder.is_dir() else []
    for p in stale:
        p.unlink(missing_ok=True)
    return stale


__all__ = [
    "TEMP_SUFFIX",
    "atomic_write_bytes",
    "atomic_write_text",
    "remove_stale_temp_files",
]
