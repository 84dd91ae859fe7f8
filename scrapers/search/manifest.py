"""The corpus ``manifest.yaml``: canonical URL and metadata of each local file.

A broken manifest fails loudly (file and entry named) instead of silently indexing ``file://`` URLs.
Unknown keys in an entry are ignored so the manifest can carry notes for people.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from core.errors import ConfigError, InputError
from core.yamlfile import YamlDocument, read_yaml_document, where
from scrapers.search.textfiles import SUFFIXES

MANIFEST_NAME = "manifest.yaml"


class ManifestEntry(BaseModel):
    """One ``pages:`` item; ``file`` is relative to the corpus directory."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    file: str
    url: str
    title: str | None = None
    source_type: Literal["official", "news", "academic", "community"] | None = None
    lang: Literal["ja", "en"] | None = None
    published: date | None = None
    duplicate_of: str | None = None

    @field_validator("url")
    @classmethod
    def _web_address(cls, url: str) -> str:
        """Only http(s): the URL is shown as a link to readers (a ``javascript:`` one would run there)."""
        parts = urlsplit(url.strip())
        if parts.scheme.lower() not in ("http", "https") or not parts.netloc or any(c.isspace() for c in url.strip()):
            raise ValueError("must be an http:// or https:// address")
        return url.strip()


class Manifest(BaseModel):
    """The whole file: an optional topic and the entries, keyed by resolved file path."""

    topic: str | None = None
    entries: dict[Path, ManifestEntry] = {}


def _fail(document: YamlDocument, loc: tuple[int | str, ...], label: str, problem: str) -> InputError:
    at = where(document.path, document.position(loc))
    return InputError(f"corpus manifest {at}, {label}: {problem}; fix or remove it")


def _entry(document: YamlDocument, directory: Path, index: int, item: Any) -> tuple[Path, ManifestEntry]:
    label = f"pages[{index}]" + (f" (file: {item.get('file')})" if isinstance(item, dict) else "")
    loc: tuple[int | str, ...] = ("pages", index)
    if not isinstance(item, dict):
        raise _fail(document, loc, label, "an entry must be a mapping with at least 'file' and 'url'")
    try:
        entry = ManifestEntry.model_validate(item)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "entry"
        raise _fail(document, (*loc, *err["loc"]), label, f"{field}: {err['msg']}") from None
    target = (directory / entry.file).resolve()
    if not target.is_relative_to(directory):
        raise _fail(document, (*loc, "file"), label, "file points outside the corpus directory")
    if not target.is_file():
        raise _fail(document, (*loc, "file"), label, f"file {target} does not exist")
    if target.suffix.lower() not in SUFFIXES:
        kind = target.suffix or "(none)"
        raise _fail(document, (*loc, "file"), label, f"file type {kind} is not one of {sorted(SUFFIXES)}")
    return target, entry


def load_manifest(directory: Path, max_bytes: int = 5_000_000) -> Manifest | None:
    """Read ``directory/manifest.yaml`` if present; ``directory`` must already be resolved.

    Held to the rules of the corpus files: a regular file inside the folder, at most ``max_bytes``.
    """
    path = directory / MANIFEST_NAME
    if not path.is_file():  # also false for a FIFO or a dangling link
        return None
    if not path.resolve().is_relative_to(directory):
        raise InputError(f"corpus manifest {path} is a symlink leading outside the corpus folder; replace it")
    if path.stat().st_size > max_bytes:
        raise InputError(
            f"corpus manifest {path} is larger than {max_bytes} bytes (search.corpus_max_file_bytes); shorten it"
        )
    try:
        document = read_yaml_document(path, "corpus manifest")
    except ConfigError as exc:  # the corpus is the user's input, not the program's configuration
        raise InputError(f"{exc}, or remove it") from None
    data = document.data
    if data is None:
        return Manifest()
    if not isinstance(data, dict) or not isinstance(data.get("pages", []), list):
        raise _fail(document, (), "top level", "expected a mapping with 'topic' and a 'pages' list")
    entries: dict[Path, ManifestEntry] = {}
    urls: set[str] = set()
    for index, item in enumerate(data.get("pages") or []):
        target, entry = _entry(document, directory, index, item)
        label = f"pages[{index}] (file: {entry.file})"
        if target in entries:
            raise _fail(document, ("pages", index, "file"), label, "the same file is listed twice")
        if entry.url in urls:
            raise _fail(document, ("pages", index, "url"), label, f"url {entry.url} is listed twice")
        entries[target] = entry
        urls.add(entry.url)
    topic = data.get("topic")
    return Manifest(topic=str(topic) if topic is not None else None, entries=entries)


__all__ = [
    "MANIFEST_NAME",
    "Manifest",
    "ManifestEntry",
    "load_manifest",
]
