"""Which files of a corpus folder get read, and how, so that a hostile folder cannot hurt the reader.

A corpus is whatever folder someone names, so the walk trusts nothing in it: only regular files are
opened (a FIFO would block, a device would never end), and they are opened non-blocking and checked
again after opening, in case the file was swapped; symlinks whose target leaves the corpus root are
skipped (a ``*.txt`` link to ``/etc/passwd`` is not a source); oversized and binary files are skipped;
and the whole walk is bounded by a file count and a wall-clock budget, so even ``/`` ends quickly with
a clear error. Every skip is counted, so a user can see what was left out and why.
"""

from __future__ import annotations

import os
import stat
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from core.errors import InputError
from scrapers.charset import SNIFF_BYTES, sniff_binary

SKIP_REASONS = {
    "not_regular": "not a regular file (FIFO, socket, device)",
    "outside_root": "symlink leading outside the corpus folder",
    "dangling": "symlink to nothing",
    "too_large": "larger than search.corpus_max_file_bytes",
    "binary": "binary content",
    "unreadable": "could not be read",
    "unsupported_pdf": "a PDF whose filter or encryption the reader does not support",
    "no_text": "no text to read",
}


@dataclass(frozen=True, slots=True)
class CorpusLimits:
    """Bounds on building one corpus (the ``search`` settings ``corpus_max_*`` and ``corpus_build_budget_s``)."""

    max_file_bytes: int = 5_000_000
    max_files: int = 5_000
    budget_s: float = 60.0
    max_total_bytes: int = 50_000_000  # indexing costs ~30x the text in memory


@dataclass(slots=True)
class Deadline:
    """The wall-clock budget of one corpus build; :meth:`check` raises once it is spent."""

    directory: Path
    budget_s: float
    started: float = field(default_factory=time.monotonic)

    def check(self) -> None:
        if time.monotonic() - self.started > self.budget_s:
            raise InputError(
                f"corpus directory {self.directory} took longer than {self.budget_s:g} s to index "
                "(search.corpus_build_budget_s); pick a smaller folder or raise the budget"
            )


class CorpusReadError(OSError):
    """A corpus file that must not or cannot be read; ``reason`` is a key of :data:`SKIP_REASONS`."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {SKIP_REASONS[reason]}")
        self.reason = reason


def _target(path: Path, root: Path, skipped: Counter[str]) -> os.stat_result | None:
    """The stat of what ``path`` names if it is a regular file inside ``root``; else counts why not."""
    try:
        info = path.lstat()
    except OSError:
        skipped["unreadable"] += 1
        return None
    if stat.S_ISLNK(info.st_mode):
        try:
            resolved = path.resolve(strict=True)
        except (OSError, RuntimeError):  # missing target or a loop
            skipped["dangling"] += 1
            return None
        if not resolved.is_relative_to(root):
            skipped["outside_root"] += 1
            return None
        try:
            info = resolved.stat()
        except OSError:
            skipped["dangling"] += 1
            return None
    if not stat.S_ISREG(info.st_mode):
        skipped["not_regular"] += 1
        return None
    return info


def scan(
    root: Path, suffixes: frozenset[str] | None, limits: CorpusLimits, deadline: Deadline, skipped: Counter[str]
) -> list[tuple[Path, os.stat_result]]:
    """Regular files under ``root`` (resolved) with one of ``suffixes`` (None: any), sorted, hidden names left out.

    Directory symlinks are not followed (a link to ``/`` cannot widen the walk); files above the size
    cap are counted in ``skipped`` without being opened. More than ``limits.max_files`` candidates, or
    more than ``limits.max_total_bytes`` in all, is an error rather than a silently partial corpus.
    """
    found: list[tuple[Path, os.stat_result]] = []
    total = 0
    for folder, dirs, files in os.walk(root, onerror=lambda _: skipped.update(["unreadable"])):
        deadline.check()
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            path = Path(folder, name)
            if name.startswith(".") or (suffixes is not None and path.suffix.lower() not in suffixes):
                continue
            info = _target(path, root, skipped)
            if info is None:
                continue
            if info.st_size > limits.max_file_bytes:
                skipped["too_large"] += 1
                continue
            found.append((path, info))
            total += info.st_size
            if total > limits.max_total_bytes:
                raise InputError(
                    f"corpus directory {root} holds more than {limits.max_total_bytes} bytes of files to index "
                    "(search.corpus_max_total_bytes); pick a smaller folder or raise the cap"
                )
            if len(found) > limits.max_files:
                raise InputError(
                    f"corpus directory {root} has more than {limits.max_files} files to index "
                    "(search.corpus_max_files); pick a smaller folder or raise the cap"
                )
    return found


def read_regular(
    path: Path, max_bytes: int, *, truncate: bool = False, binary: bool = False, inside: Path | None = None
) -> bytes:
    """At most ``max_bytes`` of ``path`` if it is a regular, non-binary file; :class:`CorpusReadError` if not.
    With ``binary`` the content is not sniffed (a PDF; the caller checks its signature). With ``inside``
    (a resolved folder) the file actually opened must lie in it: a link swapped after the walk to point
    out of the folder is caught on the open descriptor.

    Opened non-blocking, then checked with ``fstat`` on the open descriptor, so a file replaced by a FIFO
    after the walk still cannot block the reader. A file longer than ``max_bytes`` is refused, or cut
    there with ``truncate`` (the page fetcher's rule for bodies).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise CorpusReadError(path, "unreadable") from exc
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise CorpusReadError(path, "not_regular")
        if inside is not None and not _opened_inside(fd, path, inside):
            raise CorpusReadError(path, "outside_root")
        try:
            data = file.read(max_bytes + 1)
        except OSError as exc:
            raise CorpusReadError(path, "unreadable") from exc
    if len(data) > max_bytes:
        if truncate:
            data = data[:max_bytes]
        else:
            raise CorpusReadError(path, "too_large")
    if not binary and sniff_binary(data[:SNIFF_BYTES]):
        raise CorpusReadError(path, "binary")
    return data


def _opened_inside(fd: int, path: Path, root: Path) -> bool:
    """Whether the open file ``fd`` lies in ``root`` (Linux names it in /proc; elsewhere the path is resolved)."""
    try:
        opened = Path(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        opened = path.resolve()
    return opened.is_relative_to(root)


def describe_skips(skipped: Counter[str] | dict[str, int]) -> str:
    """``"2 skipped: 1 binary content, 1 symlink ..."`` for logs and ``magi doctor``; ``""`` when none."""
    total = sum(skipped.values())
    if not total:
        return ""
    parts = ", ".join(f"{n} {SKIP_REASONS.get(k, k)}" for k, n in sorted(skipped.items()) if n)
    return f"{total} skipped: {parts}"


__all__ = [
    "SKIP_REASONS",
    "CorpusLimits",
    "CorpusReadError",
    "Deadline",
    "describe_skips",
    "read_regular",
    "scan",
]
